"""Sampling through the fused Llama forward (models/fast_llama.py): the CPU path for plain Llamas.

Each distinct prompt is prefilled once and its cache shared by its G samples; decoding writes
into a cache preallocated for every step, attends with plain matmuls for the single new query, and
stops computing rows that have finished (no cache objects, logits processors or per-step mask
building as in HF `generate`). rollout/hf.py calls it when the policy's Forward has the fused
forward (models/forward.py); benchmarks/README.md has the measured effect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from rlvr.models.fast_llama import FastLlama
from rlvr.models.numerics import upcast
from rlvr.rollout.draws import Draws, inverse_cdf


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

    def cache_bytes(self) -> int:
        return sum(c.numel() * c.element_size() for c in self.caches + self.value_caches)


@torch.no_grad()
def sample(
    fused: FastLlama,
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
    on_cache: Callable[[int], None] | None = None,
    draws: Draws | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """G completions of each distinct prompt [B, p]: token ids [B*G, T] (pad after the first
    of `stop_ids`: EOS, a chat template's end of turn) and log-probs [B*G, T] of the sampled
    tokens under the tempered, untruncated policy.

    `stop_when(rows [m], tokens [m]) -> [m] bool`, if given, sees each step's tokens of the rows
    still being written (output row indices) and ends those it says are done, after that token:
    how a tool rollout stops at the end of a call (rollout/tools.py). Nothing after it is written.
    `on_cache(bytes)`, if given, is told the KV cache's size once allocated (models/forward.py hooks);
    `draws`, if given, picks each token from its row's uniform (rollout/draws.py), not torch's generator.

    Rows that have emitted a stop token stop costing compute: once at least half of the rows
    still being decoded are finished, they are dropped from the caches (rows of one step are
    independent, so this changes no number).
    """
    g, (b, p), t_max = group_size, prompt_ids.shape, max_new_tokens
    state = _start(fused, prompt_ids, prompt_mask, g, t_max)
    if on_cache is not None:
        on_cache(state.cache_bytes())
    n, device, stop = b * g, prompt_ids.device, torch.as_tensor(stop_ids, dtype=torch.long, device=prompt_ids.device)
    tokens = torch.full((n, t_max), pad_id, dtype=torch.long, device=device)  # [n, T]
    logps = torch.zeros(n, t_max, dtype=torch.promote_types(state.hidden.dtype, torch.float32), device=device)  # [n, T]
    width = t_max
    for step in range(t_max):
        u = None if draws is None or greedy else draws.uniforms(state.rows, step)  # [m]
        token, logp = _draw(upcast(fused.logits(state.hidden)), temperature, top_p, greedy, u)  # [m]
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
        state.hidden = fused.decode(
            token, state.position + step, column, state.caches, state.value_caches, state.visible[..., : column + 1]
        )  # [m, hidden]
    return tokens[:, :width], logps[:, :width]


def _start(
    fused: FastLlama, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, group_size: int, max_new_tokens: int
) -> _DecodeState:
    """Every row before its first token: the distinct prompts [B, p] prefilled once, their caches
    repeated for their G samples with room for T more tokens."""
    pre = fused.prefix(prompt_ids, prompt_mask)
    g, (b, p), device = group_size, prompt_ids.shape, prompt_ids.device
    n = b * g
    state = _DecodeState(
        rows=torch.arange(n, device=device),
        caches=[_cache(k, g, max_new_tokens) for k in pre.keys],
        value_caches=[_cache(v, g, max_new_tokens) for v in pre.values],
        visible=torch.zeros(n, 1, 1, p + max_new_tokens, dtype=torch.bool, device=device),
        position=prompt_mask.sum(dim=1).repeat_interleave(g)[:, None],  # [n, 1]
        hidden=pre.last_hidden.repeat_interleave(g, dim=0),  # [n, hidden]
        done=torch.zeros(n, dtype=torch.bool, device=device),
    )
    state.visible[:, 0, 0, :p] = prompt_mask.bool().repeat_interleave(g, dim=0)
    return state


def _cache(prefix: torch.Tensor, group_size: int, max_new_tokens: int) -> torch.Tensor:
    """A prompt's keys or values [u, kv, p, d], repeated for its samples, with room for T more."""
    u, kv, p, d = prefix.shape
    cache = prefix.new_zeros(u * group_size, kv, p + max_new_tokens, d)  # [n, kv, p + T, d]
    cache[:, :, :p] = prefix.repeat_interleave(group_size, dim=0)
    return cache


def _draw(logits: torch.Tensor, temperature: float, top_p: float, greedy: bool, u: torch.Tensor | None = None):
    """Next tokens [n] and their log-probs [n] under softmax(logits / T), untruncated: the trainer's
    π_θ is the tempered policy (rollout/hf.py). Greedy takes the argmax at T = 1, as generate does.
    `u` [n], if given: each row's uniform, turned into its token by inverse CDF (rollout/draws.py)."""
    if greedy:
        token = logits.argmax(dim=-1)  # [n]
        return token, torch.log_softmax(logits, dim=-1).gather(-1, token[:, None])[:, 0]
    scaled = logits / temperature  # [n, V]
    probs = top_p_filter(scaled, top_p).softmax(dim=-1)  # [n, V]
    token = torch.multinomial(probs, num_samples=1)[:, 0] if u is None else inverse_cdf(probs, u)  # [n]
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
