"""Per-token estimators of KL(π_θ ‖ π_ref) from the log-probs of the sampled tokens.

J. Schulman, "Approximating KL Divergence" (2020, http://joschu.net/blog/kl-approx.html).
With tokens x ~ π_θ and the log-ratio log r = log π_ref(x) − log π_θ(x):

    k1 = −log r                    unbiased, high variance, can be negative
    k2 = ½ (log r)²                biased, low variance, ≥ 0
    k3 = (r − 1) − log r           unbiased, low variance, ≥ 0

DeepSeekMath (arXiv:2402.03300) eq. 4 uses k3:
    D_KL[π_θ ‖ π_ref] = π_ref/π_θ − log(π_ref/π_θ) − 1.

Each function maps logp [N, T], ref_logp [N, T] → [N, T]; masking is the caller's business.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k1 = log π_θ − log π_ref (Schulman 2020): unbiased, but negative on many tokens."""
    return logp - ref_logp  # [N, T]


def kl_k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k2 = ½ (log π_ref − log π_θ)² (Schulman 2020): biased, low variance, always ≥ 0."""
    return 0.5 * (ref_logp - logp).pow(2)  # [N, T]


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k3 = exp(ref − logp) − (ref − logp) − 1, DeepSeekMath eq. 4: unbiased and always ≥ 0."""
    log_ratio = ref_logp - logp  # [N, T] log(π_ref / π_θ)
    return torch.exp(log_ratio) - log_ratio - 1.0  # [N, T]


KL_ESTIMATORS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "k1": kl_k1,
    "k2": kl_k2,
    "k3": kl_k3,
}


def kl_in_reward_advantages(advantages: Tensor, kl: Tensor, mask: Tensor, *, beta: float) -> Tensor:
    """Per-token advantages when the KL is a per-token reward penalty instead of a loss term.

    The RLHF form (Ziegler et al. 2019, arXiv:1909.08593; Ouyang et al. 2022) gives token t the
    reward r_t = −β·KL_t, plus the outcome reward at the end. Without a critic and with γ = 1, the
    return from token t onwards is the outcome term minus the KL still to come, as in REINFORCE++
    (Hu 2025, arXiv:2501.03262, §3.1):

        Â_{i,t} = A_i − β Σ_{t' ≥ t} KL_{i,t'}

    Args:
        advantages: [N] outcome advantages (group-normalised or any other estimator).
        kl: [N, T] per-token KL estimates at sampling time (detached: a reward carries no gradient).
        mask: [N, T] real tokens.

    Returns:
        [N, T] advantages, 0 on padding.
    """
    mask = mask.bool()  # [N, T]
    kl = torch.where(mask, kl.detach(), torch.zeros_like(kl))  # [N, T]
    kl_to_go = kl.flip(1).cumsum(1).flip(1)  # [N, T] Σ_{t' ≥ t} KL_t'
    per_token = advantages[:, None].to(kl.dtype) - beta * kl_to_go  # [N, T]
    return torch.where(mask, per_token, torch.zeros_like(per_token))  # [N, T]
