"""What the clipped policy losses share (grpo.py, gspo.py): the clipped surrogate, the KL term,
padding, aggregation and logged means, and `ClippedPolicyLoss`, the one loss signature both take.
Which importance ratio is clipped (per token, per sequence) is each paper's part and stays in its file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import Tensor

from rlvr.algos.aggregation import AGGREGATIONS
from rlvr.algos.kl import KL_ESTIMATORS

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


def reference_kl(logp: Tensor, ref_logp: Tensor | None, *, beta: float, kl_estimator: str) -> Tensor:
    """D_KL[π_θ ‖ π_ref] per token by `kl_estimator` ("k1", "k2", "k3"; DeepSeekMath eq. 4 is k3,
    see kl.py), [N, T]; zeros without ref_logp, which only beta == 0 allows."""
    estimate_kl = choose(KL_ESTIMATORS, kl_estimator, "kl_estimator")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (log-probs under the reference policy); pass it or set beta = 0")
    return torch.zeros_like(logp) if ref_logp is None else estimate_kl(logp, ref_logp)  # [N, T]


def clipped_surrogate(
    ratio: Tensor, advantages: Tensor, *, epsilon_low: float, epsilon_high: float
) -> tuple[Tensor, dict[str, Tensor]]:
    """−min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A), element by element (ratio and advantages broadcast):
    PPO's clipped surrogate (Schulman et al. 2017, arXiv:1707.06347, eq. 7) as a loss, and TRL's clip
    indicators "is_low_clipped" (ρ < 1−ε_low and A < 0), "is_high_clipped" (ρ > 1+ε_high and A > 0),
    "clipped" (either): exactly the elements whose gradient the clip switches off."""
    clipped_ratio = torch.clamp(ratio, 1.0 - epsilon_low, 1.0 + epsilon_high)
    loss = -torch.minimum(ratio * advantages, clipped_ratio * advantages)  # pessimistic bound
    is_low_clipped = (ratio < 1.0 - epsilon_low) & (advantages < 0)
    is_high_clipped = (ratio > 1.0 + epsilon_high) & (advantages > 0)
    clip = {"is_low_clipped": is_low_clipped, "is_high_clipped": is_high_clipped}
    return loss, clip | {"clipped": is_low_clipped | is_high_clipped}


RatioFn = Callable[[Tensor, Tensor, Tensor | None], Tensor]
"""(logp [N, T], old_logp [N, T], mask [N, T]) -> the importance ratio the loss clips: [N, T], one per
token, or [N], one per sequence."""
ClipMeansFn = Callable[[dict[str, Tensor]], dict[str, float]]
"""The per-token stats [N, T] -> the logged "clip_ratio/*" fractions, where they are not token means."""


@dataclass(frozen=True)
class ClippedPolicyLoss:
    """A clipped importance-ratio policy loss over the real tokens of a batch, called as
    `loss(logp, old_logp, advantages, mask, *, ref_logp, epsilon_low, epsilon_high, beta, ...)`.
    Which ratio it clips is the paper's part: `grpo_loss` (grpo.py), `gspo_loss` (gspo.py).

    Args of the call:
        logp: [N, T] log π_θ of each sampled token (carries the gradient).
        old_logp: [N, T] log π_θ_old of the same tokens, from the sampling policy.
        advantages: [N] one advantage per completion (DeepSeekMath §4.1.2), or, for a per-token
            ratio, [N, T] one per token (KL as a reward penalty, PPO's GAE).
        mask: [N, T] 1 on sampled completion tokens, 0 on padding.
        ref_logp: [N, T] log π_ref of the same tokens, or None (needs beta == 0).
        epsilon_low, epsilon_high: clip range [1 − ε_low, 1 + ε_high] for ρ.
        beta: weight of the KL penalty; the KL term is added only when beta > 0.
        aggregation: a key of `AGGREGATIONS`; "sequence_mean" is 1/G Σ_i 1/|o_i| Σ_t.
        num_sequences, num_tokens, max_tokens: whole-step counts, so that summing the losses of
            micro-batches gives the full-batch loss; default to this batch's own (N, mask.sum(), T).
        kl_estimator: "k1", "k2" or "k3" (DeepSeekMath eq. 4 is k3), see kl.py.

    Padded positions of logp, old_logp and ref_logp are replaced by 0 before any arithmetic, so
    garbage there (−inf, NaN) reaches neither the loss nor the gradient.

    Returns:
        loss (scalar tensor), and float stats, each a mean over this batch's real tokens unless
        `clip_means` says otherwise: "kl", "clip_ratio/low_mean", "clip_ratio/high_mean",
        "clip_ratio/region_mean", "ratio_mean" (TRL's names; 0.0 when the mask is empty). With
        `return_token_stats`, a third item: the per-token tensors [N, T] behind them (see
        `token_tensors`), for the step inspector (diagnostics/).
    """

    ratio: RatioFn
    """ρ from the zero-padded log-probs: per token (GRPO) or per sequence (GSPO)."""
    clip_means: ClipMeansFn | None = None
    """How the clip fractions are logged, where not as means over real tokens (GSPO: per sequence)."""

    def __call__(
        self,
        logp: Tensor,
        old_logp: Tensor,
        advantages: Tensor,
        mask: Tensor,
        *,
        aggregation: str = "sequence_mean",
        num_sequences: int | None = None,
        num_tokens: int | None = None,
        max_tokens: int | None = None,
        return_token_stats: bool = False,
        **clip_and_kl: Tensor | float | str | None,
    ) -> tuple[Tensor, dict[str, float]] | tuple[Tensor, dict[str, float], dict[str, Tensor]]:
        """The scalar loss, and its stats (see the class docstring): `per_token`'s loss over the real
        tokens, aggregated. `clip_and_kl` are `per_token`'s keywords: ref_logp, epsilon_low,
        epsilon_high, beta and kl_estimator."""
        mask = mask.bool()  # [N, T]
        per_token_loss, token_stats = self.per_token(logp, old_logp, advantages, mask, **clip_and_kl)  # [N, T]
        loss = aggregate_loss(per_token_loss, mask, aggregation, num_sequences, num_tokens, max_tokens)  # []
        stats = token_means(token_stats, mask)
        if self.clip_means is not None:
            stats |= self.clip_means(token_stats)
        if return_token_stats:
            return loss, stats, token_tensors(per_token_loss, token_stats, mask)
        return loss, stats

    def per_token(
        self,
        logp: Tensor,
        old_logp: Tensor,
        advantages: Tensor,
        mask: Tensor | None = None,
        *,
        ref_logp: Tensor | None,
        epsilon_low: float,
        epsilon_high: float,
        beta: float,
        kl_estimator: str = "k3",
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Per-token loss −min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A) + β·KL, [N, T] (unmasked), and its
        detached per-token stats [N, T]: "ratio" ρ, "kl" (zeros when ref_logp is None) and the clip
        indicators of `clipped_surrogate`. Arguments as in the call. With a mask, padded positions of
        the log-probs are 0 first; without one every position is real (a per-sequence ratio needs it).

        A per-token ratio takes advantages [N], one per completion shared by its tokens, or [N, T],
        one per token. A per-sequence ratio takes [N] only, and writes each sequence's loss, ratio
        and clip decision onto every one of its tokens.
        """
        if mask is not None:
            mask = mask.bool()  # [N, T]
            logp, old_logp = zero_padding(logp, mask), zero_padding(old_logp, mask)  # [N, T] each
            ref_logp = None if ref_logp is None else zero_padding(ref_logp, mask)  # [N, T]
        kl = reference_kl(logp, ref_logp, beta=beta, kl_estimator=kl_estimator)  # [N, T]
        ratio = self.ratio(logp, old_logp, mask)  # [N, T] per token, or [N] per sequence
        per_sequence = ratio.ndim == 1
        if per_sequence and advantages.shape != ratio.shape:
            raise ValueError(
                f"advantages must be [N] = {tuple(ratio.shape)} for a per-sequence ratio, "
                f"got shape {tuple(advantages.shape)}"
            )
        if advantages.shape not in ((logp.shape[0],), tuple(logp.shape)):
            raise ValueError(
                f"advantages must be [N] or [N, T] = {tuple(logp.shape)}, got shape {tuple(advantages.shape)}"
            )
        ratio = ratio[:, None] if per_sequence else ratio  # [N, 1] or [N, T]
        advantages = (advantages[:, None] if advantages.ndim == 1 else advantages).to(logp.dtype)  # [N, 1] or [N, T]
        surrogate_loss, clip = clipped_surrogate(ratio, advantages, epsilon_low=epsilon_low, epsilon_high=epsilon_high)
        per_token_loss = surrogate_loss.expand_as(logp)  # [N, T]
        if beta > 0:
            per_token_loss = per_token_loss + beta * kl  # [N, T]
        token_stats = {"ratio": ratio.detach(), "kl": kl.detach(), **clip}
        return per_token_loss, {name: values.expand_as(logp) for name, values in token_stats.items()}  # [N, T] each
