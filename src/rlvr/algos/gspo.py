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

from rlvr.algos.common import ClippedPolicyLoss

SEQUENCE_STATS = ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean")
"""The stats `gspo_loss` averages over sequences rather than tokens: a caller that combines
micro-batches weights these by each one's share of the sequences (engine/update.py)."""


def sequence_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """s_i = exp(mean over real tokens of logp − old_logp), [N]; 1 for an empty row."""
    mask = mask.bool()  # [N, T]
    log_ratio = torch.where(mask, logp - old_logp, torch.zeros_like(logp))  # [N, T]
    lengths = mask.sum(dim=1).clamp(min=1)  # [N]
    return torch.exp(log_ratio.sum(dim=1) / lengths)  # [N]


@torch.no_grad()
def sequence_clip_means(token_stats: dict[str, Tensor]) -> dict[str, float]:
    """TRL's clip fractions for one ratio per sequence: clipped sequences / all N sequences (0.0 for
    an empty batch). The clip indicators [N, T] hold each sequence's one decision on all its columns."""
    num_sequences = max(token_stats["clipped"].shape[0], 1)

    def mean(clipped: Tensor) -> float:
        return float(clipped.any(dim=1).sum()) / num_sequences

    names = ("is_low_clipped", "is_high_clipped", "clipped")
    return {stat: mean(token_stats[name]) for stat, name in zip(SEQUENCE_STATS, names, strict=True)}


gspo_loss = ClippedPolicyLoss(sequence_ratio, clip_means=sequence_clip_means)
"""Scalar GSPO loss (−J of eq. 5) over the real tokens of a batch; the same arguments, stats and
`return_token_stats` as `grpo_loss` (`ClippedPolicyLoss`), the ratio (and so the clipping)
being per sequence, written onto each of its tokens. The "clip_ratio/*" stats are fractions of this
batch's sequences, not tokens (TRL's; see the module docstring). Takes advantages [N] only."""
