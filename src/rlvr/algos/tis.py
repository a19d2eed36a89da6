"""Truncated importance sampling (TIS) for the sampler/trainer mismatch.

Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training"
(https://fengyao.notion.site/off-policy-rl); TRL's `vllm_importance_sampling_correction` with
mode "token_truncate". A fast sampler (vLLM, or a bfloat16 copy) computes π_sampler, which is
not exactly the trainer's π_θ_old even with identical weights (other kernels, other precision).
The tokens were drawn from π_sampler, so the policy gradient that assumes they came from
π_θ_old is biased. TIS re-weights each token by

    w_t = min(π_θ_old(o_t) / π_sampler(o_t), C)          (detached; C = the cap, 2 in verl/TRL)

or, masked (TRL's mode "token_mask"), w_t = π_θ_old(o_t) / π_sampler(o_t) where that is at most C and 0
where it is above: a token the trainer finds far likelier than the sampler did leaves the
surrogate instead of counting at the cap. The clipped surrogate uses π_θ_old, the trainer's own
log-probs under the weights it holds at the update, as the ratio's denominator:

    per_token_loss_t = −w_t · min(ρ_t A_t, clip(ρ_t, 1−ε, 1+ε) A_t) + β·KL_t,   ρ_t = π_θ / π_θ_old.

As in TRL (GRPOTrainer._compute_loss), the weight multiplies the surrogate only, not the KL term.
Because w_t > 0, w·min(a, b) = min(w·a, w·b): the weighted surrogate is the unweighted one fed
the per-token advantages w_t·A_t. That identity is how the trainer applies TIS (`tis_advantages`),
so every policy loss that takes per-token advantages gets it without a new argument, and the clip
indicators are unchanged (sign(w·A) = sign(A)).
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlvr.algos.kl import kl_k3


@torch.no_grad()
def tis_weights(
    trainer_logp: Tensor, sampler_logp: Tensor, mask: Tensor, *, cap: float, mode: str = "truncate"
) -> tuple[Tensor, dict[str, float]]:
    """Per-token IS weights, and their stats: mode "truncate" w = min(exp(trainer_logp − sampler_logp),
    cap); mode "mask" w = exp(trainer_logp − sampler_logp), set to 0 where it exceeds cap.

    Args:
        trainer_logp: [N, T] log π_θ_old of the sampled tokens, the trainer's forward pass under the
            weights that sampled them.
        sampler_logp: [N, T] the sampler's log-probs of the same tokens (RolloutBatch.old_logp).
        mask: [N, T] 1 on real completion tokens.
        cap: C > 0, the truncation (or, masked, the largest ratio kept).
        mode: "truncate" or "mask".

    Returns:
        weight [N, T] (1 on padding; a NaN log-ratio, a log-prob the sampler could not give, also
        gets 1: no correction, as TRL), and float stats over real tokens, TRL's names where TRL
        logs the same quantity: "sampling/sampling_logp_difference/mean" and "/max" (|Δ log p|),
        "sampling/importance_sampling_ratio/min", "/mean", "/max" (of w), the raw ratio's
        quantiles "sampling/importance_sampling_ratio/p10", "/p50", "/p90", plus
        "sampling/truncated_frac" (share of tokens whose ratio is above the cap: cut to it, or
        masked to 0) and "sampling/mismatch_kl" (k3 estimate of KL(π_sampler ‖ π_θ_old) from the
        sampler's tokens, Schulman 2020).
    """
    if cap <= 0:
        raise ValueError(f"cap must be > 0, got {cap}")
    if mode not in ("truncate", "mask"):
        raise ValueError(f"mode must be truncate or mask, got {mode!r}")
    mask = mask.bool()  # [N, T]
    log_ratio = torch.nan_to_num(trainer_logp.double() - sampler_logp.double(), nan=0.0)  # [N, T]
    log_ratio = torch.where(mask, log_ratio, 0.0)  # [N, T] log π_θ_old / π_sampler
    raw = torch.exp(log_ratio)  # [N, T] untruncated ratio
    weight = raw.clamp(max=cap) if mode == "truncate" else torch.where(raw > cap, 0.0, raw)  # [N, T]
    # k3 with samples from π_sampler: r = π_θ_old/π_sampler, KL(π_sampler ‖ π_θ_old) ≈ (r − 1) − log r.
    mismatch = kl_k3(torch.zeros_like(log_ratio), log_ratio)  # [N, T]
    stats = _stats(log_ratio, weight, raw, raw > cap, mismatch, mask)
    return weight.to(trainer_logp.dtype), stats


_QUANTILES = (0.1, 0.5, 0.9)


def _stats(
    log_ratio: Tensor, weight: Tensor, raw: Tensor, truncated: Tensor, mismatch: Tensor, mask: Tensor
) -> dict[str, float]:
    quantile_keys = tuple(f"sampling/importance_sampling_ratio/p{round(100 * q)}" for q in _QUANTILES)
    if not mask.any():
        return {
            key: 0.0
            for key in (
                "sampling/sampling_logp_difference/mean",
                "sampling/sampling_logp_difference/max",
                "sampling/importance_sampling_ratio/min",
                "sampling/importance_sampling_ratio/mean",
                "sampling/importance_sampling_ratio/max",
                *quantile_keys,
                "sampling/truncated_frac",
                "sampling/mismatch_kl",
            )
        }
    delta, w = log_ratio[mask].abs(), weight[mask]  # [M] real tokens
    quantiles = torch.quantile(raw[mask], torch.tensor(_QUANTILES, dtype=raw.dtype))  # [3] of the raw ratio
    return {
        "sampling/sampling_logp_difference/mean": float(delta.mean()),
        "sampling/sampling_logp_difference/max": float(delta.max()),
        "sampling/importance_sampling_ratio/min": float(w.min()),
        "sampling/importance_sampling_ratio/mean": float(w.mean()),
        "sampling/importance_sampling_ratio/max": float(w.max()),
        **{key: float(value) for key, value in zip(quantile_keys, quantiles)},
        "sampling/truncated_frac": float(truncated[mask].double().mean()),
        "sampling/mismatch_kl": float(mismatch[mask].mean()),
    }


def tis_advantages(advantages: Tensor, weight: Tensor) -> Tensor:
    """Per-token advantages w_t·A_t [N, T] from advantages [N] (one per completion) or [N, T].

    Fed to the clipped surrogate, they give exactly w_t · min(ρA, clip(ρ)A): see the module docstring.
    """
    if advantages.ndim == 1:
        advantages = advantages[:, None]  # [N, 1]
    return advantages.to(weight.dtype) * weight  # [N, T]
