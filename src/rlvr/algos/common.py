"""Helpers shared by the policy losses (grpo.py, gspo.py): registry lookup, padding, logged means."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import torch
from torch import Tensor

from rlvr.algos.aggregation import AGGREGATIONS

_V = TypeVar("_V")


def choose(registry: Mapping[str, _V], name: str, what: str) -> _V:
    """registry[name], or a ValueError that names the valid choices."""
    if name not in registry:
        raise ValueError(f"unknown {what} {name!r}; choose one of {sorted(registry)}")
    return registry[name]


def aggregate_loss(
    per_token_loss: Tensor,
    mask: Tensor,
    aggregation: str,
    num_sequences: int | None,
    num_tokens: int | None,
    max_tokens: int | None,
) -> Tensor:
    """Reduce [N, T] to the scalar loss with `AGGREGATIONS[aggregation]`; whole-step counts default
    to this batch's own (N, mask.sum(), T)."""
    aggregate = choose(AGGREGATIONS, aggregation, "aggregation")
    return aggregate(
        per_token_loss,
        mask,
        num_sequences=per_token_loss.shape[0] if num_sequences is None else num_sequences,
        num_tokens=int(mask.sum()) if num_tokens is None else num_tokens,
        max_tokens=per_token_loss.shape[1] if max_tokens is None else max_tokens,
    )  # []


def zero_padding(values: Tensor, mask: Tensor) -> Tensor:
    return torch.where(mask, values, torch.zeros_like(values))  # [N, T]


@torch.no_grad()
def token_means(token_stats: dict[str, Tensor], mask: Tensor) -> dict[str, float]:
    """Means over real tokens of the per-token stats, as plain floats for logging."""
    num_tokens = mask.sum().clamp(min=1)  # []

    def mean(values: Tensor) -> float:
        return float(torch.where(mask, values.to(torch.float64), 0.0).sum() / num_tokens)

    return {
        "kl": mean(token_stats["kl"]),
        "clip_ratio/low_mean": mean(token_stats["is_low_clipped"]),
        "clip_ratio/high_mean": mean(token_stats["is_high_clipped"]),
        "clip_ratio/region_mean": mean(token_stats["clipped"]),
        "ratio_mean": mean(token_stats["ratio"]),
    }


@torch.no_grad()
def token_tensors(per_token_loss: Tensor, token_stats: dict[str, Tensor], mask: Tensor) -> dict[str, Tensor]:
    """The per-token quantities of a loss, detached and 0 on padding, each [N, T]: "per_token_loss"
    (before aggregation), "ratio", "kl", "clipped", "is_low_clipped", "is_high_clipped"."""
    tensors = {"per_token_loss": per_token_loss.detach(), **token_stats}
    return {name: zero_padding(values, mask) for name, values in tensors.items()}  # [N, T] each


def entropy_bonus_loss(
    entropy: Tensor,
    mask: Tensor,
    *,
    coef: float,
    aggregation: str,
    num_sequences: int | None,
    num_tokens: int | None,
    max_tokens: int | None,
) -> Tensor:
    """−c·H aggregated like the policy loss: PPO's entropy bonus c₂·S[π_θ](s_t) (Schulman et al.
    2017, arXiv:1707.06347, eq. 9), which is maximised, hence minus in a loss. entropy [N, T]
    must carry the gradient; the same whole-step counts keep micro-batching exact."""
    return -coef * aggregate_loss(entropy, mask.bool(), aggregation, num_sequences, num_tokens, max_tokens)  # []
