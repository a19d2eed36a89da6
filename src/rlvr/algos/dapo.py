"""DAPO's sample-side techniques (Yu et al. 2025, arXiv:2503.14476), as pure functions.

The loss-side ones (clip-higher, token-level loss) are knobs of `grpo_loss`; these three decide
which samples reach the loss and with what reward:

- dynamic sampling (§3.2, eq. 11): keep only groups whose accuracy is neither 0 nor 1, i.e. whose
  rewards are not all equal, because a zero-variance group has advantage 0 and no gradient;
- overlong reward shaping (§3.4, eq. 13): a soft length penalty added to the reward;
- overlong filtering (§3.4): truncated samples are masked out of the loss.

The orchestration (sampling again until the batch is full) is engine/rollouts.py's.
"""

from __future__ import annotations

import torch
from torch import Tensor


def groups_with_signal(rewards: Tensor) -> Tensor:
    """[B] bool: the groups DAPO eq. 11 keeps, 0 < |{o_i : is_equivalent(a, o_i)}| < G.

    Generalised to any reward (partial credit, format bonus): a group is kept when its judged
    rewards are not all equal, which is exactly when GRPO's advantage is not identically 0
    (advantages.py detects zero variance the same way, max == min). NaN rewards (unscorable) are
    ignored; a group with fewer than 2 judged samples has no spread and is dropped.
    """
    valid = ~torch.isnan(rewards)  # [B, G]
    inf = torch.full_like(rewards, float("inf"))  # [B, G]
    group_max = torch.where(valid, rewards, -inf).amax(dim=1)  # [B]
    group_min = torch.where(valid, rewards, inf).amin(dim=1)  # [B]
    return (valid.sum(dim=1) >= 2) & (group_max > group_min)  # [B]


def overlong_penalty(lengths: Tensor, *, max_length: int, cache_length: int) -> Tensor:
    """DAPO eq. 13, the soft overlong punishment R_length(y) added to the reward:

        0                                  if |y| <= L_max − L_cache
        ((L_max − L_cache) − |y|) / L_cache if L_max − L_cache < |y| <= L_max
        −1                                 if |y| > L_max

    Args:
        lengths: [N] completion lengths |y| in tokens (EOS included, as the completion mask counts).
        max_length: L_max; the paper sets it to the generation limit (20480 with L_cache 4096).
        cache_length: L_cache > 0, the width of the linear ramp from 0 down to −1.

    Returns:
        [N] float penalty in [−1, 0]; at |y| = L_max the ramp reaches exactly −1.
    """
    if cache_length <= 0 or cache_length > max_length:
        raise ValueError(f"need 0 < cache_length <= max_length, got {cache_length} and {max_length}")
    lengths = lengths.to(torch.float64)  # [N]
    expected = max_length - cache_length  # the length below which there is no penalty
    ramp = (expected - lengths) / cache_length  # [N] in [−1, 0) on the ramp
    penalty = torch.where(lengths <= expected, torch.zeros_like(lengths), ramp)  # [N]
    return torch.where(lengths > max_length, torch.full_like(lengths, -1.0), penalty).float()  # [N]


def overlong_filter_mask(completion_mask: Tensor, truncated: Tensor) -> Tensor:
    """DAPO §3.4 overlong filtering: the loss mask with every token of a truncated sample removed.

    completion_mask [N, T], truncated [N] bool (hit the length limit without EOS) → [N, T] of the
    same dtype. The samples keep their rewards (and their place in the group baseline); only
    their loss is masked, as the paper describes.
    """
    return completion_mask * (~truncated.bool())[:, None].to(completion_mask.dtype)  # [N, T]
