"""GSPO: the sequence-level importance ratio of Zheng et al. 2025 (arXiv:2507.18071), eq. 5-7.

    J(θ) = E[ 1/G Σ_i min(s_i Â_i, clip(s_i, 1−ε, 1+ε_high) Â_i) ],
    s_i  = (π_θ(o_i|q) / π_old(o_i|q))^(1/|o_i|) = exp( 1/|o_i| Σ_t (logp_{i,t} − old_logp_{i,t}) ),

with Â_i the group advantage of GRPO. One ratio per sequence means one clipping decision per
sequence, which the paper argues removes the token-level noise that destabilises GRPO on long
outputs. The paper's clip range is far smaller than GRPO's (ε = 3e-4, ε_high = 4e-4; see
configs/gspo.yaml). GSPO itself has no KL term; with β > 0 rlvr adds GRPO's per-token β·KL.

The sequence loss is written onto every real token of its sequence, so the "sequence_mean"
aggregation (the paper's 1/G Σ_i) reproduces eq. 5 exactly and micro-batching stays exact.

The clip fractions are per sequence, as TRL's GRPOTrainer logs them with
importance_sampling_level="sequence" (trl 1.16.0, trl/trainer/grpo_trainer.py lines 3259-3279:
`global_masked_mean` of the [B, 1] clip indicators is their sum over the number of sequences,
every row counted, one whose tokens are all masked out included). One clipping decision per
sequence is one count, however long the sequence. "kl" and "ratio_mean" stay token means (TRL's
KL is per token; it logs no ratio mean).
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlvr.algos.common import aggregate_loss, choose, token_means, token_tensors, zero_padding
from rlvr.algos.kl import KL_ESTIMATORS

SEQUENCE_STATS = ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean")
"""The stats `gspo_loss` averages over sequences rather than tokens: a caller that combines
micro-batches weights these by each one's share of the sequences (engine/update.py)."""


def sequence_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """s_i = exp(mean over real tokens of logp − old_logp), [N]; 1 for an empty row."""
    mask = mask.bool()  # [N, T]
    log_ratio = torch.where(mask, logp - old_logp, torch.zeros_like(logp))  # [N, T]
    lengths = mask.sum(dim=1).clamp(min=1)  # [N]
    return torch.exp(log_ratio.sum(dim=1) / lengths)  # [N]


def gspo_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    ref_logp: Tensor | None,
    epsilon_low: float,
    epsilon_high: float,
    beta: float,
    aggregation: str = "sequence_mean",
    num_sequences: int | None = None,
    num_tokens: int | None = None,
    max_tokens: int | None = None,
    kl_estimator: str = "k3",
    return_token_stats: bool = False,
) -> tuple[Tensor, dict[str, float]] | tuple[Tensor, dict[str, float], dict[str, Tensor]]:
    """Scalar GSPO loss; same arguments, stats and `return_token_stats` as `grpo_loss`, the ratio
    (and so the clipping) being per sequence, written onto each of its tokens. The "clip_ratio/*"
    stats are fractions of this batch's sequences, not tokens (TRL's; see the module docstring)."""
    estimate_kl = choose(KL_ESTIMATORS, kl_estimator, "kl_estimator")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (log-probs under the reference policy); pass it or set beta = 0")
    mask = mask.bool()  # [N, T]
    logp, old_logp = zero_padding(logp, mask), zero_padding(old_logp, mask)  # [N, T]
    ratio = sequence_ratio(logp, old_logp, mask)  # [N] s_i
    adv = advantages.to(logp.dtype)  # [N]
    clipped = torch.clamp(ratio, 1.0 - epsilon_low, 1.0 + epsilon_high)  # [N]
    sequence_loss = -torch.minimum(ratio * adv, clipped * adv)  # [N]
    per_token_loss = sequence_loss[:, None].expand_as(logp)  # [N, T] one value per sequence
    kl = torch.zeros_like(logp)  # [N, T]
    if ref_logp is not None:
        kl = estimate_kl(logp, zero_padding(ref_logp, mask))  # [N, T]
    if beta > 0:
        per_token_loss = per_token_loss + beta * kl  # [N, T]
    loss = aggregate_loss(per_token_loss, mask, aggregation, num_sequences, num_tokens, max_tokens)  # []
    low_clipped = (ratio < 1.0 - epsilon_low) & (adv < 0)  # [N] one decision per sequence
    high_clipped = (ratio > 1.0 + epsilon_high) & (adv > 0)  # [N]
    is_low, is_high = low_clipped[:, None].expand_as(mask), high_clipped[:, None].expand_as(mask)  # [N, T]
    token_stats = {
        "ratio": ratio.detach()[:, None].expand_as(logp),
        "kl": kl.detach(),
        "is_low_clipped": is_low,
        "is_high_clipped": is_high,
        "clipped": is_low | is_high,
    }
    stats = token_means(token_stats, mask) | sequence_clip_means(low_clipped, high_clipped)
    if return_token_stats:
        return loss, stats, token_tensors(per_token_loss, token_stats, mask)
    return loss, stats


@torch.no_grad()
def sequence_clip_means(is_low_clipped: Tensor, is_high_clipped: Tensor) -> dict[str, float]:
    """TRL's clip fractions for one ratio per sequence: clipped sequences / all N sequences
    (0.0 for an empty batch). Both indicators are [N]."""
    num_sequences = max(is_low_clipped.shape[0], 1)

    def mean(clipped: Tensor) -> float:
        return float(clipped.sum()) / num_sequences

    return {
        "clip_ratio/low_mean": mean(is_low_clipped),
        "clip_ratio/high_mean": mean(is_high_clipped),
        "clip_ratio/region_mean": mean(is_low_clipped | is_high_clipped),
    }
