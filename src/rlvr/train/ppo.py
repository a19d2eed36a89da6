"""PPO with a learned critic (Schulman et al. 2017, arXiv:1707.06347; GAE, arXiv:1506.02438).

The critic is a value head on a *copy* of the policy's backbone: the same architecture and the
same initial weights, trained separately with its own AdamW and learning rate. A separate copy
(rather than a second head on the shared trunk) keeps the policy's gradient free of the value
loss, so no value-loss coefficient has to be balanced against the policy loss, at the price of a
second backbone in memory (what TRL's PPOTrainer and OpenRLHF do too). The head is initialised to
zero, so the first step's values are 0 and its advantages are the plain (KL-penalised) returns.

One step: sample and verify (train/rollouts.py) → values V(s_t) and optional reference log-probs
→ per-token rewards and GAE (algos/gae.py) → advantage whitening → for each of algo.num_iterations:
the clipped policy loss (GRPO's per-token loss fed per-token advantages) and the clipped value loss.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch
from torch import nn
from transformers import PreTrainedModel

from rlvr.algos import KL_ESTIMATORS, clipped_value_loss, gae, group_advantages, token_rewards, whiten
from rlvr.config import PPOConfig
from rlvr.train.rollouts import collect_rollouts, loss_mask
from rlvr.train.update import MicroBatch, accumulate_policy_gradient, micro_batches, optimizer_step
from rlvr.types import RolloutBatch

if TYPE_CHECKING:
    from rlvr.train.loop import Trainer


class ValueModel(nn.Module):
    """V(s_t) for every completion token: a copy of the policy backbone plus a linear scalar head."""

    def __init__(self, policy: PreTrainedModel):
        super().__init__()
        self.backbone = copy.deepcopy(policy.base_model)  # e.g. LlamaModel, without the LM head
        dtype = next(self.backbone.parameters()).dtype
        self.head = nn.Linear(policy.config.hidden_size, 1, dtype=dtype)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, mb: MicroBatch) -> torch.Tensor:
        """values [n, t]: V of the state before each completion token (0 on padding), read at the
        same positions as the logits that predict that token (models/logprobs.py)."""
        input_ids = torch.cat([mb.prompt_ids, mb.completion_ids], dim=1)  # [n, p+t]
        attention = torch.cat([mb.prompt_mask, mb.completion_mask], dim=1)  # [n, p+t]
        positions = (attention.cumsum(dim=1) - 1).clamp(min=0)  # [n, p+t]
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention, position_ids=positions).last_hidden_state
        hidden = hidden[:, mb.prompt_ids.shape[1] - 1 : -1]  # [n, t, H] state before o_t
        return self.head(hidden).squeeze(-1).float() * mb.completion_mask  # [n, t]


class Critic:
    """The value model, its AdamW and the micro-batched value update."""

    def __init__(self, policy: PreTrainedModel, cfg: PPOConfig):
        self.cfg = cfg
        self.model = ValueModel(policy).to(next(policy.parameters()).device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.critic_lr,
                                           weight_decay=cfg.critic_weight_decay)

    @torch.no_grad()
    def values(self, batch: RolloutBatch, micro_batch_size: int) -> torch.Tensor:
        """V(s_t) at sampling time, [N, T] (0 on padding)."""
        values = torch.zeros_like(batch.old_logp, dtype=torch.float32)  # [N, T]
        for mb in micro_batches(batch, micro_batch_size):
            values[mb.rows, : mb.width] = self.model(mb)
        return values

    def update(
        self, batch: RolloutBatch, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor,
        *, micro_batch_size: int, max_grad_norm: float,
    ) -> dict[str, float]:
        """One AdamW step on the clipped value loss over the whole batch (micro-batched, exact)."""
        num_tokens, totals = int(mask.sum()), {"critic/value_loss": 0.0}
        for mb in micro_batches(batch, micro_batch_size):
            mb_mask = mask[mb.rows, : mb.width]  # [n, t]
            loss, stats = clipped_value_loss(
                self.model(mb), old_values[mb.rows, : mb.width], returns[mb.rows, : mb.width], mb_mask,
                clip_range=self.cfg.value_clip, num_tokens=num_tokens,
            )
            loss.backward()
            share = float(mb_mask.sum()) / max(num_tokens, 1)
            totals["critic/value_loss"] += float(loss.detach())
            for key, value in stats.items():
                totals[key] = totals.get(key, 0.0) + share * value
        grad_norm, _ = optimizer_step(self.model, self.optimizer, max_grad_norm)
        return totals | {"critic/grad_norm": grad_norm}


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """1 − Var(R − V) / Var(R) over real tokens: 1 is a perfect critic, ≤ 0 no better than a constant."""
    real = mask.bool()  # [N, T]
    target = returns[real]  # [n]
    if target.numel() < 2 or float(target.var()) == 0.0:
        return float("nan")
    return float(1.0 - (target - values[real]).var() / target.var())


def ppo_step(trainer: Trainer, step: int) -> dict[str, float]:
    """One PPO step: rollouts, GAE advantages from the critic, then policy and critic updates."""
    from rlvr.train.loop import Timer, batch_queries, rollout_metrics

    cfg, timer = trainer.cfg, Timer()
    trainer.memory.start_step()
    queries = batch_queries(trainer.train_queries, step, cfg.train.batch_queries, cfg.train.seed)  # [B]
    rollouts = collect_rollouts(trainer, step, queries, timer)
    batch, rewards = rollouts.batch, rollouts.rewards  # rewards [B, G]
    hacking = trainer.measure_hacking(step, batch, rollouts.scored, timer)
    scores = rewards.flatten()  # [N]
    # An unscorable sample has no reward to learn from: out of both losses (and of whitening).
    judged = ~torch.isnan(scores)  # [N]
    filtered = loss_mask(batch, cfg.algo.overlong_filter)  # [N, T], or None when nothing is filtered
    base_mask = batch.completion_mask if filtered is None else filtered  # [N, T]
    mask = base_mask * judged[:, None].to(base_mask.dtype)  # [N, T]
    ref_logp = trainer.reference_logp(batch, timer)  # [N, T] or None
    kl = None
    if ref_logp is not None and cfg.algo.kl_placement == "reward":
        kl = KL_ESTIMATORS[cfg.algo.kl_estimator](batch.old_logp, ref_logp)  # [N, T] at sampling time
    with timer.phase("critic"):
        old_values = trainer.critic.values(batch, cfg.optim.micro_batch_size)  # [N, T]
    per_token_rewards = token_rewards(torch.nan_to_num(scores), batch.completion_mask, kl, cfg.algo.beta)  # [N, T]
    advantages, returns = gae(per_token_rewards, old_values, batch.completion_mask,
                              gamma=cfg.ppo.gamma, lam=cfg.ppo.lam)  # [N, T] each
    if cfg.ppo.whiten_advantages:
        advantages = whiten(advantages, mask)  # [N, T]
    for group in trainer.optimizer.param_groups:
        group["lr"] = trainer._learning_rate(step)
    for _ in range(cfg.algo.num_iterations):
        with timer.phase("forward_backward"), trainer.memory.activations():
            update = accumulate_policy_gradient(
                trainer.policy, batch, advantages, ref_logp, cfg.algo, temperature=cfg.rollout.temperature,
                max_new_tokens=cfg.rollout.max_new_tokens, micro_batch_size=cfg.optim.micro_batch_size,
                loss_mask=mask,
            )
        with timer.phase("optimizer"):
            grad_norm, update_norm = optimizer_step(trainer.policy, trainer.optimizer, cfg.optim.max_grad_norm)
        with timer.phase("critic"):
            critic_stats = trainer.critic.update(batch, old_values, returns, mask,
                                                 micro_batch_size=cfg.optim.micro_batch_size,
                                                 max_grad_norm=cfg.optim.max_grad_norm)
    _, group_stats = group_advantages(rewards)  # for the reward_std / frac_reward_zero_std metrics only
    return {
        **rollout_metrics(batch, rollouts.scored, rewards),
        **rollouts.metrics,
        **hacking,
        "reward_std": float(group_stats["group_std"].mean()),
        "frac_reward_zero_std": float(group_stats["frac_zero_std"]),
        **trainer.exploration.update(batch, rollouts.scored),
        "loss": update.loss,
        **update.stats,
        **critic_stats,
        "critic/explained_variance": explained_variance(old_values, returns, mask),
        "grad_norm": grad_norm,
        "update_norm": update_norm,
        "learning_rate": trainer._learning_rate(step),
        **timer.seconds,
        **trainer.memory.step_metrics(),
    }
