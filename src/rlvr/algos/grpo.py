"""The GRPO objective: DeepSeekMath (Shao et al. 2024, arXiv:2402.03300) eq. 3.

    J(θ) = E[ 1/G Σ_i 1/|o_i| Σ_t { min(ρ_{i,t} Â_{i,t}, clip(ρ_{i,t}, 1−ε, 1+ε) Â_{i,t})
                                      − β D_KL[π_θ ‖ π_ref] } ],
    ρ_{i,t} = π_θ(o_{i,t} | q, o_{i,<t}) / π_θ_old(o_{i,t} | q, o_{i,<t}),

with D_KL the per-token k3 estimator of eq. 4 (see kl.py) and Â from advantages.py. We minimise
the per-token loss −min(...) + β·KL. The clip range may be asymmetric, [1 − ε_low, 1 + ε_high]:
DAPO's "clip-higher" (Yu et al. 2025, arXiv:2503.14476, §3.1); ε_low = ε_high recovers eq. 3.
How the per-token loss becomes a scalar (1/G Σ_i 1/|o_i| Σ_t in eq. 3) is aggregation.py's job.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlvr.algos.common import ClippedPolicyLoss


def token_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor | None = None) -> Tensor:
    """ρ_{i,t} = π_θ(o_{i,t} | q, o_{i,<t}) / π_θ_old(o_{i,t} | q, o_{i,<t}), one per token, [N, T]
    (DeepSeekMath eq. 3). The mask is not needed: padded positions of both log-probs are 0."""
    return torch.exp(logp - old_logp)  # [N, T]


grpo_loss = ClippedPolicyLoss(token_ratio)
"""Scalar GRPO loss (−J of DeepSeekMath eq. 3) over the real tokens of a batch: the clip acts on
each token's ratio ρ_{i,t}; "sequence_mean" aggregation is eq. 3's 1/G Σ_i 1/|o_i| Σ_t. Arguments,
stats and `return_token_stats`: `ClippedPolicyLoss`."""

grpo_per_token_loss = grpo_loss.per_token
"""Per-token GRPO loss −min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A) + β·KL, [N, T], and its per-token stats
(`ClippedPolicyLoss.per_token`): eq. 3 before aggregation, for tests and by-hand checks."""
