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


def _valid_counts(rewards: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(valid mask [B, G], rewards with NaN replaced by 0 [B, G], valid count per group [B])."""
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    rewards = rewards if rewards.is_floating_point() else rewards.float()  # [B, G]
    valid = ~torch.isnan(rewards)  # [B, G]
    return valid, torch.where(valid, rewards, torch.zeros_like(rewards)), valid.sum(dim=1)


def rloo_advantages(rewards: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
    """REINFORCE leave-one-out: A_i = r_i − mean_{j≠i} r_j (Ahmadian et al. 2024, arXiv:2402.14740, eq. 5;
    Kool et al. 2019). Each sample's baseline excludes itself, so the estimate stays unbiased.

    With n valid samples in a group, mean_{j≠i} r_j = (Σ_j r_j − r_i) / (n − 1), hence
    A_i = n / (n − 1) · (r_i − mean_j r_j): the GRPO numerator rescaled, no division by std.
    NaN rewards (unscorable) are excluded; groups with fewer than 2 valid samples get 0.
    """
    valid, rewards_or_zero, num_valid = _valid_counts(rewards)
    total = rewards_or_zero.sum(dim=1, keepdim=True)  # [B, 1]
    others = (num_valid - 1).clamp(min=1)[:, None]  # [B, 1]
    advantages = rewards_or_zero - (total - rewards_or_zero) / others  # [B, G]
    usable = valid & (num_valid >= 2)[:, None]  # [B, G]
    advantages = torch.where(usable, advantages, torch.zeros_like(advantages))  # [B, G]
    _, stats = group_advantages(rewards)
    return advantages, stats


def batch_normalized_advantages(rewards: Tensor, *, eps: float = 1e-4) -> tuple[Tensor, dict[str, Tensor]]:
    """REINFORCE++ (Hu 2025, arXiv:2501.03262, §3.2): advantages normalised over the whole batch,
    A_i = (r_i − mean_batch r) / (std_batch r + ε), with no per-group baseline.

    std uses Bessel's correction as everywhere in rlvr. NaN rewards are excluded and get 0; a batch
    whose valid rewards are all equal gets 0 everywhere.
    """
    valid, rewards_or_zero, _ = _valid_counts(rewards)
    n = int(valid.sum())
    _, stats = group_advantages(rewards)
    if n < 2:
        return torch.zeros_like(rewards_or_zero), stats
    values = rewards_or_zero[valid]  # [n]
    if bool(values.max() == values.min()):
        return torch.zeros_like(rewards_or_zero), stats
    normalized = (rewards_or_zero - values.mean()) / (values.std() + eps)  # [B, G]
    return torch.where(valid, normalized, torch.zeros_like(normalized)), stats
