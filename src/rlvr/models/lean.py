"""A lean forward pass for plain Llama policies, shaped for what RL does with a policy.

The math is transformers' LlamaForCausalLM, op for op (RMSNorm in float32 or wider, RoPE from
the model's own rotary module, scaled-dot-product causal attention, SwiGLU MLP, tied or untied
head), run on the HF model's own parameters: nothing is copied, so gradients land in the same `.grad` and the
optimizer, checkpoints and the frozen reference are untouched. What differs is the shape of the
work, because RL scores and samples G completions of each prompt:

- Scoring (`completion_logits`): each distinct prompt of a micro-batch runs through the layers
  once, and its keys and values are gathered for every completion of it (autograd flows back
  through the gather). When all G = 8 completions of a prompt share a micro-batch, that removes
  7/8 of its prompt tokens' compute from the reference pass and the policy's forward/backward.
  The last completion token predicts nothing that is scored, so it is not fed.
- Sampling (`sample`): each distinct prompt is prefilled once and its cache shared by its G
  samples; decoding writes into a preallocated cache, attends with plain matmuls for the single
  new query, and stops computing rows that have finished (no cache objects, logits processors or
  per-step mask building as in HF `generate`). benchmarks/README.md has the measured effect.

Only plain Llama configs take this path (`supports`); anything else, or `model.forward: hf`,
uses HF's forward and `generate`. tests/models/test_lean.py checks logits, log-probs, gradients
and samples against HF's own forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from rlvr.models.loading import checkpointed_layers
from rlvr.models.lora import is_lora
from rlvr.models.numerics import upcast

FORWARD_ATTR = "rlvr_forward"
"""Model attribute holding config model.forward: "auto" (the default), "lean" or "hf"."""

CACHE_LISTENERS: list[Callable[[int], None]] = []
"""Called with the KV cache's size in bytes whenever `sample` allocates one (meters/memory.py)."""
FORWARD_LISTENERS: list[Callable[[], None]] = []
"""Called at the start of each scoring pass, where HF's forward pre-hooks would fire (meters/memory.py)."""


def use_forward(model: PreTrainedModel | None, forward: str) -> None:
    """Choose this module ("lean"), HF's own forward ("hf") or "auto" for `model` (model.forward)."""
    if model is not None:
        setattr(model, FORWARD_ATTR, forward)


def supports(model: PreTrainedModel) -> bool:
    """True when `model` should take this path: a plain Llama whose forward this module reproduces
    exactly, set to "lean", or left at "auto" and on the CPU (on a GPU, HF's forward with its fused
    attention kernels is the better default, and the one `rlvr memory` describes)."""
    choice = getattr(model, FORWARD_ATTR, "auto")
    if is_lora(model):  # this module reads the base weights only, so it cannot see adapters
        return False
    if checkpointed_layers(model):  # model.gradient_checkpointing: recomputing layers is HF's forward's work
        return False
    if choice == "hf" or (choice == "auto" and model.device.type != "cpu"):
        return False
    c = model.config
    rope = getattr(c, "rope_parameters", None) or {"rope_type": "default"}
    return (
        c.model_type == "llama"
        and not c.attention_bias
        and not c.mlp_bias
        and c.hidden_act == "silu"
        and getattr(c, "pretraining_tp", 1) == 1
        and float(c.attention_dropout) == 0.0
        and rope.get("rope_type", "default") == "default"
    )


@dataclass
class Prefix:
    """Distinct prompts run through every layer: their keys/values and the hidden state that
    predicts the first completion token."""

    keys: list[torch.Tensor]  # per layer [u, kv_heads, p, d]
    values: list[torch.Tensor]  # per layer [u, kv_heads, p, d]
    last_hidden: torch.Tensor  # [u, hidden] before the final norm


class LeanLlama:
    """Functional view of an HF LlamaForCausalLM's parameters."""

    def __init__(self, model: PreTrainedModel):
        c = model.config
        self.model = model
        self.base = model.model
        self.heads = c.num_attention_heads
        self.kv_heads = c.num_key_value_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // self.heads
        self.eps = c.rms_norm_eps

    # ------------------------------------------------------------------ building blocks

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """LlamaRMSNorm, same op order (variance in float32, weight applied in the input dtype).

        One deliberate difference: float64 stays float64 (HF narrows it to float32 here, which
        would make float64 gradients depend on how rows are grouped, since shared prompts sum
        their rows' gradients before this cast rather than after)."""
        dtype = x.dtype
        x = x.to(torch.promote_types(dtype, torch.float32))
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x.to(dtype)

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.base.rotary_emb(x, positions)  # [n, L, d] each, the model's own RoPE
        return cos.unsqueeze(1), sin.unsqueeze(1)  # [n, 1, L, d]

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    def _qkv(self, layer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """Projected, rotated q [n, h, L, d] and k, v [n, kv_heads, L, d]."""
        attn = layer.self_attn
        n, length, _ = x.shape
        q = F.linear(x, attn.q_proj.weight).view(n, length, self.heads, self.head_dim).transpose(1, 2)
        k = F.linear(x, attn.k_proj.weight).view(n, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = F.linear(x, attn.v_proj.weight).view(n, length, self.kv_heads, self.head_dim).transpose(1, 2)
        return self._rotate(q, cos, sin), self._rotate(k, cos, sin), v

    def _attend(self, layer, q, k, v, allowed: torch.Tensor) -> torch.Tensor:
        """Attention output projected back to [n, L, hidden]; `allowed` [n, 1, L, S] is boolean."""
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed, scale=self.head_dim**-0.5, enable_gqa=self.kv_heads != self.heads
        )  # [n, h, L, d]
        out = out.transpose(1, 2).reshape(q.shape[0], q.shape[2], self.heads * self.head_dim)
        return F.linear(out, layer.self_attn.o_proj.weight)

    def _attend_one(self, layer, q, k, v, visible: torch.Tensor) -> torch.Tensor:
        """`_attend` for a single query per row, as plain batched matmuls: the fused CPU attention
        kernel costs more than the arithmetic at this size. `visible` is [n, 1, 1, S]."""
        n = q.shape[0]
        group = self.heads // self.kv_heads
        q = q.reshape(n, self.kv_heads, group, self.head_dim)  # [n, kv, group, d] heads sharing a k/v
        scores = torch.matmul(q, k.transpose(2, 3)) * self.head_dim**-0.5  # [n, kv, group, S]
        scores = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        out = torch.matmul(scores, v).reshape(n, 1, self.heads * self.head_dim)  # [n, 1, h*d]
        return F.linear(out, layer.self_attn.o_proj.weight)

    @staticmethod
    def _mlp(layer, x: torch.Tensor) -> torch.Tensor:
        mlp = layer.mlp
        return F.linear(
            F.silu(F.linear(x, mlp.gate_proj.weight)) * F.linear(x, mlp.up_proj.weight), mlp.down_proj.weight
        )

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final norm and LM head."""
        return F.linear(self._norm(hidden, self.base.norm.weight), self.model.lm_head.weight)

    # ------------------------------------------------------------------ prompts

    def prefix(self, ids: torch.Tensor, mask: torch.Tensor) -> Prefix:
        """Run left-padded prompts [u, p] through every layer, keeping each layer's keys/values."""
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)  # [u, p] as generate counts them
        length = ids.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=ids.device).tril()  # [p, p]
        own = torch.eye(length, dtype=torch.bool, device=ids.device)  # padding rows see themselves
        allowed = (causal & mask.bool()[:, None, None, :]) | own  # [u, 1, p, p]
        x = self.base.embed_tokens(ids)  # [u, p, hidden]
        cos, sin = self._rope(x, positions)
        keys, values = [], []
        for layer in self.base.layers:
            q, k, v = self._qkv(layer, self._norm(x, layer.input_layernorm.weight), cos, sin)
            x = x + self._attend(layer, q, k, v, allowed)
            x = x + self._mlp(layer, self._norm(x, layer.post_attention_layernorm.weight))
            keys.append(k)
            values.append(v)
        return Prefix(keys, values, x[:, -1])

    # ------------------------------------------------------------------ scoring

    def completion_logits(
        self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor
    ) -> torch.Tensor:
        """Logits [n, T, V] predicting each completion token, prompts shared across their rows."""
        for listener in FORWARD_LISTENERS:
            listener()
        rows = torch.cat([prompt_ids, prompt_mask], dim=1)  # [n, 2p] a prompt and its padding
        distinct, owner = torch.unique(rows, dim=0, return_inverse=True)  # [u, 2p], [n]
        p = prompt_ids.shape[1]
        pre = self.prefix(distinct[:, :p], distinct[:, p:])
        # The last completion token predicts nothing that is scored and no scored token attends to
        # it, so it is not fed: logits come from the last prompt token and completion[:, :-1].
        completion_ids = completion_ids[:, :-1]  # [n, t - 1]
        n, t = completion_ids.shape
        start = prompt_mask.sum(dim=1, keepdim=True)  # [n, 1] first completion position
        positions = start + torch.arange(t, device=completion_ids.device)  # [n, t]
        causal = torch.ones(t, t, dtype=torch.bool, device=completion_ids.device).tril()  # [t, t]
        allowed = torch.cat(
            [
                prompt_mask.bool()[:, None, None, :].expand(n, 1, t, p),  # prompt tokens, never padding
                causal.expand(n, 1, t, t),
            ],
            dim=-1,
        )  # [n, 1, t, p + t]
        x = self.base.embed_tokens(completion_ids)  # [n, t, hidden]
        cos, sin = self._rope(x, positions)
        for layer, pk, pv in zip(self.base.layers if t else [], pre.keys, pre.values):
            q, k, v = self._qkv(layer, self._norm(x, layer.input_layernorm.weight), cos, sin)
            k = torch.cat([pk[owner], k], dim=2)  # [n, kv_heads, p + t, d]
            v = torch.cat([pv[owner], v], dim=2)
            x = x + self._attend(layer, q, k, v, allowed)
            x = x + self._mlp(layer, self._norm(x, layer.post_attention_layernorm.weight))
        hidden = torch.cat([pre.last_hidden[owner].unsqueeze(1), x], dim=1)  # [n, t + 1, hidden]
        return self.logits(hidden)

    # ------------------------------------------------------------------ sampling

    @torch.no_grad()
    def sample(
        self,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        *,
        group_size: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        greedy: bool,
        stop_ids: list[int] | torch.Tensor,
        pad_id: int,
        stop_when: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """G completions of each distinct prompt [B, p]: token ids [B*G, T] (pad after the first
        of `stop_ids`: EOS, a chat template's end of turn) and log-probs [B*G, T] of the sampled
        tokens under the tempered, untruncated policy.

        `stop_when(rows [m], tokens [m]) -> [m] bool`, if given, sees each step's tokens of the rows
        still being written (output row indices) and ends those it says are done, after that token:
        how a tool rollout stops at the end of a call (rollout/tools.py). Nothing after it is written.

        Rows that have emitted a stop token stop costing compute: once at least half of the rows
        still being decoded are finished, they are dropped from the caches (rows of one step are
        independent, so this changes no number).
        """
        pre = self.prefix(prompt_ids, prompt_mask)
        g, (b, p), t_max = group_size, prompt_ids.shape, max_new_tokens
        n, device = b * g, prompt_ids.device
        stop = torch.as_tensor(stop_ids, dtype=torch.long, device=device)  # [k]
        state = _DecodeState(
            rows=torch.arange(n, device=device),
            caches=[self._cache(k, g, t_max) for k in pre.keys],
            value_caches=[self._cache(v, g, t_max) for v in pre.values],
            visible=torch.zeros(n, 1, 1, p + t_max, dtype=torch.bool, device=device),
            position=prompt_mask.sum(dim=1).repeat_interleave(g)[:, None],  # [n, 1]
            hidden=pre.last_hidden.repeat_interleave(g, dim=0),  # [n, hidden]
            done=torch.zeros(n, dtype=torch.bool, device=device),
        )
        state.visible[:, 0, 0, :p] = prompt_mask.bool().repeat_interleave(g, dim=0)
        for listener in CACHE_LISTENERS:
            listener(sum(c.numel() * c.element_size() for c in state.caches + state.value_caches))
        tokens = torch.full((n, t_max), pad_id, dtype=torch.long, device=device)  # [n, T]
        logps = torch.zeros(
            n, t_max, dtype=torch.promote_types(pre.last_hidden.dtype, torch.float32), device=device
        )  # [n, T]
        width = t_max
        for step in range(t_max):
            token, logp = _draw(upcast(self.logits(state.hidden)), temperature, top_p, greedy)  # [m]
            live = ~state.done  # rows finished earlier are decoded on until dropped, never written out
            tokens[state.rows[live], step] = token[live]
            logps[state.rows[live], step] = logp[live]
            state.done = state.done | torch.isin(token, stop)  # [m]
            if stop_when is not None and bool(live.any()):
                state.done[live] |= stop_when(state.rows[live], token[live])
            if bool(state.done.all()) or step == t_max - 1:
                width = step + 1
                break
            token = token.masked_fill(state.done, pad_id)
            if 2 * int(state.done.sum()) >= len(token):
                alive = ~state.done
                state, token = state.keep(alive), token[alive]
            column = p + step
            state.visible[:, 0, 0, column] = True
            state.hidden = self._decode(token, state.position + step, column, state, state.visible[..., : column + 1])
        return tokens[:, :width], logps[:, :width]

    def _cache(self, prefix: torch.Tensor, group_size: int, max_new_tokens: int) -> torch.Tensor:
        """A prompt's keys or values [u, kv, p, d], repeated for its samples, with room for T more."""
        u, kv, p, d = prefix.shape
        cache = prefix.new_zeros(u * group_size, kv, p + max_new_tokens, d)  # [n, kv, p + T, d]
        cache[:, :, :p] = prefix.repeat_interleave(group_size, dim=0)
        return cache

    def _decode(self, token, positions, column, state, visible) -> torch.Tensor:
        """One token per row through every layer, its k/v written at `column`; returns [m, hidden]."""
        x = self.base.embed_tokens(token)[:, None]  # [m, 1, hidden]
        cos, sin = self._rope(x, positions)
        for layer, cache_k, cache_v in zip(self.base.layers, state.caches, state.value_caches):
            q, k, v = self._qkv(layer, self._norm(x, layer.input_layernorm.weight), cos, sin)
            cache_k[:, :, column] = k[:, :, 0]
            cache_v[:, :, column] = v[:, :, 0]
            x = x + self._attend_one(layer, q, cache_k[:, :, : column + 1], cache_v[:, :, : column + 1], visible)
            x = x + self._mlp(layer, self._norm(x, layer.post_attention_layernorm.weight))
        return x[:, 0]


@dataclass
class _DecodeState:
    """The rows still being decoded: their output rows, caches, key visibility and positions."""

    rows: torch.Tensor  # [m] output row of each decoded row
    caches: list[torch.Tensor]  # per layer [m, kv, p + T, d] keys
    value_caches: list[torch.Tensor]  # per layer [m, kv, p + T, d] values
    visible: torch.Tensor  # [m, 1, 1, p + T] which cache columns each row attends to
    position: torch.Tensor  # [m, 1] position of the first completion token
    hidden: torch.Tensor  # [m, hidden] the state that predicts the next token
    done: torch.Tensor  # [m] the row has emitted a stop token

    def keep(self, alive: torch.Tensor) -> _DecodeState:
        return _DecodeState(
            self.rows[alive],
            [c[alive] for c in self.caches],
            [c[alive] for c in self.value_caches],
            self.visible[alive],
            self.position[alive],
            self.hidden[alive],
            self.done[alive],
        )


def _draw(logits: torch.Tensor, temperature: float, top_p: float, greedy: bool):
    """Next tokens [n] and their log-probs [n] under softmax(logits / T), untruncated: the trainer's
    π_θ is the tempered policy (rollout/hf.py). Greedy takes the argmax at T = 1, as generate does."""
    if greedy:
        token = logits.argmax(dim=-1)  # [n]
        return token, torch.log_softmax(logits, dim=-1).gather(-1, token[:, None])[:, 0]
    scaled = logits / temperature  # [n, V]
    probs = top_p_filter(scaled, top_p).softmax(dim=-1)  # [n, V]
    token = torch.multinomial(probs, num_samples=1)[:, 0]  # [n]
    return token, torch.log_softmax(scaled, dim=-1).gather(-1, token[:, None])[:, 0]


def top_p_filter(scaled: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus sampling's cut (Holtzman et al. 2020) with transformers' TopPLogitsWarper rule: drop
    the least likely tokens whose cumulative mass is at most 1 - top_p, never the most likely one."""
    if top_p >= 1.0:
        return scaled
    sorted_logits, order = scaled.sort(dim=-1)  # [n, V] ascending
    drop = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= 1 - top_p  # [n, V]
    drop[:, -1] = False
    return scaled.masked_fill(drop.scatter(1, order, drop), float("-inf"))
