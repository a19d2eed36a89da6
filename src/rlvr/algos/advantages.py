"""Group-relative advantages: the critic-free baseline of GRPO.

DeepSeekMath (Shao et al. 2024, arXiv:2402.03300), §4.1.2 "Outcome Supervision RL with GRPO":
each of the G outputs o_i sampled for a query q gets one reward r_i, and every token of o_i gets
the same advantage

    Â_{i,t} = r̃_i = (r_i − mean(r)) / std(r)

with mean and std taken over the group {r_1, ..., r_G}. Dr. GRPO (Liu et al. 2025,
arXiv:2503.20783, §3.1) drops the division by std, which biases updates towards groups that are
almost all right or almost all wrong; `scale_by_std=False` gives that variant.
"""

from __future__ import annotations

import torch
from torch import Tensor


def group_advantages(
    rewards: Tensor, *, eps: float = 1e-4, scale_by_std: bool = True
) -> tuple[Tensor, dict[str, Tensor]]:
    """Outcome-supervision advantages A_i = (r_i − μ) / (σ + ε), DeepSeekMath §4.1.2.

    Args:
        rewards: [B, G] one scalar reward per completion. NaN marks an unscorable sample (the
            verifier broke, see DESIGN.md "Verifier results"): it is kept out of μ and σ and
            gets advantage 0, so it neither pushes its own tokens nor shifts its siblings'
            baseline.
        eps: added to σ so nearly-constant groups do not explode (TRL's default, 1e-4).
        scale_by_std: False gives Dr. GRPO's A_i = r_i − μ (arXiv:2503.20783, §3.1).

    Choices:
        σ uses Bessel's correction (divides by n − 1, as `torch.std` and TRL do); the paper does
        not say which. A group with fewer than 2 valid samples has no spread to compare
        against, so all its advantages are 0 and its σ is reported as 0. A group whose valid
        rewards are all equal gets exactly 0 (detected by max == min, not by σ ≈ 0, so
        rounding in μ never leaks a tiny non-zero advantage and never a NaN).

    Returns:
        advantages [B, G], and stats: "group_mean" [B] (0 for an all-NaN group), "group_std"
        [B] (0 where undefined), "num_valid" [B], "frac_zero_std" scalar (share of groups whose
        σ is 0 or undefined; TRL's `frac_reward_zero_std`).
    """
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        rewards = rewards.float()  # [B, G]
    valid = ~torch.isnan(rewards)  # [B, G]
    num_valid = valid.sum(dim=1)  # [B]
    rewards_or_zero = torch.where(valid, rewards, torch.zeros_like(rewards))  # [B, G]
    group_mean = rewards_or_zero.sum(dim=1) / num_valid.clamp(min=1)  # [B]
    centered = torch.where(valid, rewards - group_mean[:, None], torch.zeros_like(rewards))  # [B, G]
    # Bessel's correction: divide by n − 1 (torch.std's default; TRL does the same).
    variance = centered.pow(2).sum(dim=1) / (num_valid - 1).clamp(min=1)  # [B]
    inf = torch.full_like(rewards, float("inf"))  # [B, G]
    group_max = torch.where(valid, rewards, -inf).amax(dim=1)  # [B]
    group_min = torch.where(valid, rewards, inf).amin(dim=1)  # [B]
    zero_std = (num_valid < 2) | (group_max == group_min)  # [B]
    group_std = torch.where(zero_std, torch.zeros_like(variance), variance.sqrt())  # [B]
    advantages = centered / (group_std[:, None] + eps) if scale_by_std else centered  # [B, G]
    advantages = torch.where(zero_std[:, None], torch.zeros_like(advantages), advantages)  # [B, G]
    stats = {
        "group_mean": group_mean,  # [B]
        "group_std": group_std,  # [B]
        "num_valid": num_valid,  # [B]
        "frac_zero_std": zero_std.float().mean(),  # []
    }
    return advantages, stats
