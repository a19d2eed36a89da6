"""PPO with a learned critic: per-token rewards, GAE, advantage whitening and the clipped value loss.

Schulman et al. 2017 (PPO, arXiv:1707.06347) and 2016 (GAE, arXiv:1506.02438). A completion is an
episode: state s_t = (q, o_<t), action o_t, and the verifier's score arrives on the last token.
With the RLHF per-token KL penalty (Ziegler et al. 2019, arXiv:1909.08593; Ouyang et al. 2022)

    r_t = −β·KL_t + [t = last] · score,                         KL_t ≈ KL(π_old ‖ π_ref) at token t

    δ_t = r_t + γ V(s_{t+1}) − V(s_t),    V(s_{|o|}) = 0 (the episode ends after the last token)
    Â_t = Σ_l (γλ)^l δ_{t+l}         (GAE eq. 16),      R_t = Â_t + V(s_t)  (the critic's target)

The value loss is OpenAI baselines' PPO2 form (`ppo2/model.py`), clipping the new value to within
ε_v of the value at sampling time:

    L^V = ½ max( (V − R)², (V_old + clip(V − V_old, −ε_v, ε_v) − R)² )

Shapes: N completions, T completion tokens (right-padded; mask [N, T] marks real tokens).
"""

from __future__ import annotations

import torch
from torch import Tensor


def token_rewards(scores: Tensor, mask: Tensor, kl: Tensor | None = None, beta: float = 0.0) -> Tensor:
    """r_t [N, T]: the score [N] on each completion's last real token, minus β·KL_t [N, T] on every
    real token (KL detached: it is a reward, not a loss). 0 on padding."""
    mask = mask.bool()  # [N, T]
    lengths = mask.sum(dim=1)  # [N]
    rewards = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)  # [N, T]
    has_tokens = lengths > 0  # [N]
    rows = torch.arange(mask.shape[0], device=mask.device)[has_tokens]  # [n]
    rewards[rows, lengths[has_tokens] - 1] = scores[has_tokens]  # terminal reward on the last token
    if kl is not None and beta:
        rewards = rewards - beta * kl.detach().to(rewards.dtype)  # [N, T]
    return torch.where(mask, rewards, torch.zeros_like(rewards))  # [N, T]


@torch.no_grad()
def gae(rewards: Tensor, values: Tensor, mask: Tensor, *, gamma: float, lam: float) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016, eq. 16) per token, backwards in time.

    Args:
        rewards: [N, T] per-token rewards r_t (see `token_rewards`).
        values: [N, T] V(s_t) from the critic at sampling time.
        mask: [N, T] real tokens; each row is a prefix of ones (right padding).
        gamma, lam: discount γ and GAE's λ, both in [0, 1].

    Returns:
        advantages [N, T] and returns R = Â + V [N, T], both 0 on padding. The value after a
        row's last real token is 0 (terminal), so padding never leaks into a real token.
    """
    mask = mask.to(values.dtype)  # [N, T]
    advantages = torch.zeros_like(values)  # [N, T]
    next_value = torch.zeros_like(values[:, 0])  # [N] V(s_{t+1}), 0 past the end
    next_advantage = torch.zeros_like(values[:, 0])  # [N] Â_{t+1}
    for t in reversed(range(values.shape[1])):
        delta = rewards[:, t] + gamma * next_value - values[:, t]  # [N] TD error δ_t
        advantage = (delta + gamma * lam * next_advantage) * mask[:, t]  # [N] Â_t = δ_t + γλ Â_{t+1}
        advantages[:, t] = advantage
        next_value = values[:, t] * mask[:, t]  # [N]
        next_advantage = advantage  # [N]
    returns = (advantages + values) * mask  # [N, T]
    return advantages, returns


@torch.no_grad()
def whiten(values: Tensor, mask: Tensor, *, eps: float = 1e-8) -> Tensor:
    """(x − mean) / (std + eps) over the real tokens of the whole batch, 0 on padding.

    The per-batch advantage normalisation of the PPO reference implementations (baselines,
    cleanrl's `norm_adv`); std is Bessel-corrected as everywhere in rlvr. Fewer than two real
    tokens, or no spread, gives zeros instead of NaN.
    """
    mask = mask.bool()  # [N, T]
    real = values[mask]  # [n]
    if real.numel() < 2 or bool(real.max() == real.min()):
        return torch.zeros_like(values)
    whitened = (values - real.mean()) / (real.std() + eps)  # [N, T]
    return torch.where(mask, whitened, torch.zeros_like(whitened))  # [N, T]


def clipped_value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    mask: Tensor,
    *,
    clip_range: float,
    num_tokens: int | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """PPO2's clipped value loss, ½ max((V − R)², (V_clip − R)²), summed over real tokens / num_tokens.

    `num_tokens` is the whole step's count (defaults to this batch's), so micro-batch losses add up
    to the full-batch loss. clip_range 0 disables clipping (plain ½ (V − R)²). Stats:
    "critic/clip_frac" (share of tokens where the clipped term is the larger one, so the gradient
    is cut) and "critic/value_mean", both over this batch's real tokens.
    """
    mask = mask.bool()  # [N, T]
    unclipped = (values - returns).pow(2)  # [N, T]
    if clip_range > 0:
        clipped_values = old_values + torch.clamp(values - old_values, -clip_range, clip_range)  # [N, T]
        clipped = (clipped_values - returns).pow(2)  # [N, T]
        per_token = 0.5 * torch.maximum(unclipped, clipped)  # [N, T]
        is_clipped = clipped > unclipped  # [N, T]
    else:
        per_token, is_clipped = 0.5 * unclipped, torch.zeros_like(mask)  # [N, T]
    total = torch.where(mask, per_token, torch.zeros_like(per_token)).sum()  # []
    count = int(mask.sum()) if num_tokens is None else num_tokens
    real = max(int(mask.sum()), 1)
    stats = {
        "critic/clip_frac": float((is_clipped & mask).sum()) / real,
        "critic/value_mean": float(torch.where(mask, values.detach(), 0.0).sum()) / real,
    }
    return total / max(count, 1), stats
