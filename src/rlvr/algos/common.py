"""Helpers shared by the policy losses (grpo.py, gspo.py): registry lookup, padding, logged means."""

from __future__ import annotations

from typing import Mapping, TypeVar

import torch
from torch import Tensor

_V = TypeVar("_V")


def choose(registry: Mapping[str, _V], name: str, what: str) -> _V:
    """registry[name], or a ValueError that names the valid choices."""
    if name not in registry:
        raise ValueError(f"unknown {what} {name!r}; choose one of {sorted(registry)}")
    return registry[name]


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
