"""PPO's update (Schulman et al. 2017, arXiv:1707.06347; GAE, arXiv:1506.02438), run by the one
step function (engine/step.py) for algorithms whose `update` is "actor_critic".

Given the step's rollouts: values V(s_t) from the critic (engine/critic.py) and optional reference
log-probs → per-token rewards and GAE (algos/gae.py) → advantage whitening → for each of
algo.num_iterations: the clipped policy loss (GRPO's per-token loss fed per-token advantages) and
the clipped value loss.
"""

from __future__ import annotations

import torch

from rlvr.algos import KL_ESTIMATORS, gae, token_rewards, whiten
from rlvr.engine.context import StepContext, StepObserver, Timer
from rlvr.engine.critic import explained_variance
from rlvr.engine.optimize import optimize
from rlvr.engine.rollouts import Rollouts, loss_mask
from rlvr.engine.update import UpdateResult, accumulate_run_gradient


def actor_critic_update(
    ctx: StepContext, rollouts: Rollouts, ref_logp: torch.Tensor | None, timer: Timer, observer: StepObserver
) -> dict[str, float]:
    """GAE advantages from the critic, then policy and critic updates; returns their metrics."""
    cfg, batch = ctx.cfg, rollouts.batch
    scores = rollouts.rewards.flatten()  # [N]
    # An unscorable sample has no reward to learn from: out of both losses (and of whitening).
    judged = ~torch.isnan(scores)  # [N]
    filtered = loss_mask(batch, cfg.algo.overlong_filter)  # [N, T], or None when nothing is filtered
    base_mask = batch.completion_mask if filtered is None else filtered  # [N, T]
    mask = base_mask * judged[:, None].to(base_mask.dtype)  # [N, T]
    kl = None
    if ref_logp is not None and cfg.algo.kl_placement == "reward":
        kl = KL_ESTIMATORS[cfg.algo.kl_estimator](batch.old_logp, ref_logp)  # [N, T] at sampling time
    with timer.phase("critic"):
        old_values = ctx.critic.values(batch, cfg.optim.micro_batch_size)  # [N, T]
    per_token_rewards = token_rewards(torch.nan_to_num(scores), batch.completion_mask, kl, cfg.algo.beta)  # [N, T]
    advantages, returns = gae(
        per_token_rewards, old_values, batch.completion_mask, gamma=cfg.ppo.gamma, lam=cfg.ppo.lam
    )  # [N, T] each
    if cfg.ppo.whiten_advantages:
        advantages = whiten(advantages, mask)  # [N, T]
    observer.critic(old_values, returns, advantages)
    observer.advantages(batch, advantages, mask, {})

    def accumulate() -> UpdateResult:
        return accumulate_run_gradient(
            cfg, ctx.forward, batch, advantages, ref_logp, loss_mask=mask, on_micro_batch=observer.micro_batch
        )

    def step_critic() -> dict[str, float]:
        with timer.phase("critic"):
            return ctx.critic.update(
                batch,
                old_values,
                returns,
                mask,
                micro_batch_size=cfg.optim.micro_batch_size,
                max_grad_norm=cfg.optim.max_grad_norm,
            )

    update, metrics = optimize(ctx, timer, observer, accumulate, after_step=step_critic)
    return {
        "loss": update.loss,
        **update.stats,
        **metrics,
        "critic/explained_variance": explained_variance(old_values, returns, mask),
    }
