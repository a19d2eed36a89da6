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

from rlvr.algos.common import aggregate_loss, choose, token_means, token_tensors, zero_padding
from rlvr.algos.kl import KL_ESTIMATORS


def grpo_per_token_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    *,
    ref_logp: Tensor | None,
    epsilon_low: float,
    epsilon_high: float,
    beta: float,
    kl_estimator: str = "k3",
) -> tuple[Tensor, dict[str, Tensor]]:
    """Per-token GRPO loss −min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A) + β·KL, DeepSeekMath eq. 3.

    Args:
        logp: [N, T] log π_θ of each sampled token (carries the gradient).
        old_logp: [N, T] log π_θ_old of the same tokens, from the sampling policy.
        advantages: [N] one advantage per completion, shared by all its tokens (§4.1.2), or
            [N, T] one per token (KL as a reward penalty, PPO's GAE).
        ref_logp: [N, T] log π_ref of the same tokens, or None (needs beta == 0).
        epsilon_low, epsilon_high: clip range [1 − ε_low, 1 + ε_high] for ρ.
        beta: weight of the KL penalty; the KL term is added only when beta > 0.
        kl_estimator: "k1", "k2" or "k3" (eq. 4 is k3), see kl.py.

    Returns:
        per_token_loss [N, T] (unmasked), and detached per-token stats [N, T]: "ratio" ρ,
        "kl" (zeros when ref_logp is None), and TRL's clip indicators "is_low_clipped"
        (ρ < 1−ε_low and A < 0), "is_high_clipped" (ρ > 1+ε_high and A > 0), "clipped" (either):
        exactly the tokens whose gradient the clip switches off.
    """
    estimate_kl = choose(KL_ESTIMATORS, kl_estimator, "kl_estimator")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (log-probs under the reference policy); pass it or set beta = 0")
    if advantages.shape not in ((logp.shape[0],), tuple(logp.shape)):
        raise ValueError(f"advantages must be [N] or [N, T] = {tuple(logp.shape)}, got shape {tuple(advantages.shape)}")
    advantages = (advantages[:, None] if advantages.ndim == 1 else advantages).to(logp.dtype)  # [N, 1] or [N, T]
    ratio = torch.exp(logp - old_logp)  # [N, T] ρ = π_θ / π_θ_old
    clipped_ratio = torch.clamp(ratio, 1.0 - epsilon_low, 1.0 + epsilon_high)  # [N, T]
    surrogate = torch.minimum(ratio * advantages, clipped_ratio * advantages)  # [N, T] pessimistic bound
    per_token_loss = -surrogate  # [N, T]
    kl = torch.zeros_like(logp) if ref_logp is None else estimate_kl(logp, ref_logp)  # [N, T]
    if beta > 0:
        per_token_loss = per_token_loss + beta * kl  # [N, T]
    is_low_clipped = (ratio < 1.0 - epsilon_low) & (advantages < 0)  # [N, T]
    is_high_clipped = (ratio > 1.0 + epsilon_high) & (advantages > 0)  # [N, T]
    stats = {
        "ratio": ratio.detach(),  # [N, T]
        "kl": kl.detach(),  # [N, T]
        "is_low_clipped": is_low_clipped,  # [N, T]
        "is_high_clipped": is_high_clipped,  # [N, T]
        "clipped": is_low_clipped | is_high_clipped,  # [N, T]
    }
    return per_token_loss, stats


def grpo_loss(
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
    """Scalar GRPO loss (−J of DeepSeekMath eq. 3) over the real tokens of a batch.

    Args:
        logp, old_logp, ref_logp, advantages, epsilon_*, beta, kl_estimator: as in
            `grpo_per_token_loss`.
        mask: [N, T] 1 on sampled completion tokens, 0 on padding.
        aggregation: a key of `AGGREGATIONS`; "sequence_mean" is eq. 3's 1/G Σ_i 1/|o_i| Σ_t.
        num_sequences, num_tokens, max_tokens: whole-step counts, so that summing the losses
            of micro-batches gives the full-batch loss; default to this batch's own
            (N, mask.sum(), T).

    Padded positions of logp, old_logp and ref_logp are replaced by 0 before any arithmetic,
    so garbage there (−inf, NaN) reaches neither the loss nor the gradient.

    Returns:
        loss (scalar tensor), and float stats, each a mean over this batch's real tokens:
        "kl", "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean",
        "ratio_mean" (TRL's names; 0.0 when the mask is empty). With `return_token_stats`, a
        third item: the per-token tensors [N, T] behind them (see `token_tensors`), for the
        step inspector (diagnostics/).
    """
    mask = mask.bool()  # [N, T]
    logp, old_logp = zero_padding(logp, mask), zero_padding(old_logp, mask)  # [N, T] each
    ref_logp = None if ref_logp is None else zero_padding(ref_logp, mask)  # [N, T]
    per_token_loss, token_stats = grpo_per_token_loss(
        logp,
        old_logp,
        advantages,
        ref_logp=ref_logp,
        epsilon_low=epsilon_low,
        epsilon_high=epsilon_high,
        beta=beta,
        kl_estimator=kl_estimator,
    )  # [N, T]
    loss = aggregate_loss(per_token_loss, mask, aggregation, num_sequences, num_tokens, max_tokens)  # []
    if return_token_stats:
        return loss, token_means(token_stats, mask), token_tensors(per_token_loss, token_stats, mask)
    return loss, token_means(token_stats, mask)
