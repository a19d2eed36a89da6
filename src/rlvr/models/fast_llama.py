"""A fused forward pass for plain Llama policies (the tiny built-in bases and any model of the same
architecture), shaped for what RL does with a policy.

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
- Sampling: `prefix` runs each distinct prompt once, and `decode` runs one new token per row
  against a cache the caller preallocated, attending with plain matmuls for the single new query.
  The loop around them (shared prefixes, finished rows dropped, drawing tokens) is
  rollout/fast_decode.py; benchmarks/README.md has the measured effect.

Only plain Llama configs fit (`fits`); models/forward.py decides, once per model, whether a model
runs here or through HF's forward and `generate` (model.forward). tests/models/test_fast_llama.py
checks logits, log-probs, gradients and samples against HF's own forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from rlvr.models.loading import checkpointed_layers
from rlvr.models.lora import is_lora


def fits(model: PreTrainedModel) -> bool:
    """True when this module reproduces `model`'s forward exactly: a plain Llama, without LoRA
    adapters (this module reads the base weights only, so it cannot see them) and without
    checkpointed layers (model.gradient_checkpointing: recomputing layers is HF's forward's work)."""
    if is_lora(model) or checkpointed_layers(model):
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


class FastLlama:
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

    def decode(
        self,
        token: torch.Tensor,
        positions: torch.Tensor,
        column: int,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
        visible: torch.Tensor,
    ) -> torch.Tensor:
        """One token per row [m] at `positions` [m, 1] through every layer, its keys and values written
        into the caches (per layer [m, kv, S, d]) at `column`; `visible` [m, 1, 1, column + 1] says
        which cache columns each row attends to. Returns the hidden state [m, hidden] that predicts
        the next token."""
        x = self.base.embed_tokens(token)[:, None]  # [m, 1, hidden]
        cos, sin = self._rope(x, positions)
        for layer, cache_k, cache_v in zip(self.base.layers, keys, values):
            q, k, v = self._qkv(layer, self._norm(x, layer.input_layernorm.weight), cos, sin)
            cache_k[:, :, column] = k[:, :, 0]
            cache_v[:, :, column] = v[:, :, 0]
            x = x + self._attend_one(layer, q, cache_k[:, :, : column + 1], cache_v[:, :, : column + 1], visible)
            x = x + self._mlp(layer, self._norm(x, layer.post_attention_layernorm.weight))
        return x[:, 0]
