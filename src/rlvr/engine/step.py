"""One update, for every algorithm: the function the trainer, `rlvr inspect`, `rlvr grad-variance`,
`rlvr compare` and the lab all run (``run_step``), read top to bottom like the diagram:

    the step's B queries → sample G completions each (rollout/, via engine/rollouts.py, with DAPO's
    dynamic sampling) → verify (verifiers/) → shape rewards → reference log-probs
    → the algorithm's update (its `update` trait in algos/registry.py):
        policy_gradient: group advantages (+ KL in the reward, + TIS) → clipped loss → AdamW
        actor_critic:    GAE advantages from the critic → clipped loss → AdamW, value loss (engine/ppo.py)
        preference:      pass-vs-fail pairs → DPO loss → AdamW (engine/dpo.py)
    → metrics; the sampler takes the new weights.

It orchestrates; every formula lives in algos/. Tools watch a step through ``StepObserver`` hooks
(engine/context.py), never through a copy of it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from rlvr.algos import ALGORITHMS, KL_ESTIMATORS, group_advantages, kl_in_reward_advantages
from rlvr.engine.async_rollouts import RolloutProcess
from rlvr.engine.context import StepContext, StepObserver, Timer, batch_queries, learning_rate
from rlvr.engine.dpo import preference_update
from rlvr.engine.optimize import optimize
from rlvr.engine.ppo import actor_critic_update
from rlvr.engine.rollouts import Rollouts, collect_rollouts, loss_mask
from rlvr.engine.tis import tis_correction
from rlvr.engine.update import UpdateResult, accumulate_run_gradient
from rlvr.meters.grad_noise import MicroBatchNoise
from rlvr.meters.mismatch import LogprobMismatch
from rlvr.rollout.tools import tool_metrics
from rlvr.tasks.registry import step_metrics
from rlvr.types import RolloutBatch
from rlvr.verifiers import ScoredCompletion

if TYPE_CHECKING:
    from rlvr.config import RunConfig
    from rlvr.models.forward import Runnable

Update = Callable[[StepContext, Rollouts, "torch.Tensor | None", Timer, StepObserver], dict[str, float]]
"""fn(ctx, rollouts, ref_logp [N, T] or None, timer, observer) -> the update's metrics."""


def run_step(
    ctx: StepContext, step: int, observer: StepObserver | None = None, recorded: Rollouts | None = None
) -> dict[str, float]:
    """Step `step` (0-based) of the configured algorithm; returns its metrics (one line of
    the run's metrics log). Afterwards the sampler holds the updated weights. `recorded`: the
    step's batch as the flight recorder kept it (engine/flight.py), trained on instead of sampling."""
    cfg, timer, observer = ctx.cfg, Timer(), observer or StepObserver()
    algorithm = ALGORITHMS[cfg.algo.algorithm]
    ctx.memory.start_step()
    queries = batch_queries(ctx.train_queries, step, cfg.train.batch_queries, cfg.train.seed)  # [B]
    queries = ctx.dist.shard(queries)  # [B/N] this process's whole groups
    if recorded is not None:
        rollouts = recorded
    elif isinstance(ctx.sampler, RolloutProcess):  # rollout.max_staleness: sampled ahead in its own process
        rollouts = ctx.sampler.rollouts(step, queries, timer)
    else:
        rollouts = collect_rollouts(ctx, step, queries, timer)
    observer.rollouts(rollouts)
    batch, scored, rewards = rollouts.batch, rollouts.scored, rollouts.rewards  # rewards [B, G]
    hacking = measure_hacking(ctx, step, batch, scored, timer)
    ref_logp = None if algorithm.update == "preference" else reference_logp(ctx, rollouts, timer)  # [N, T] or None
    observer.reference(ref_logp)
    for group in ctx.optimizer.param_groups:
        group["lr"] = learning_rate(cfg.optim, step)
    update = UPDATES[algorithm.update](ctx, rollouts, ref_logp, timer, observer)
    shares = {"loss", *update.pop(SHARES, ())}  # the loss and token means: each process has its shard's share
    metrics = ctx.dist.reduce_metrics(
        {
            **rollout_metrics(batch, scored, rewards),
            **tool_metrics(batch),
            **step_metrics(cfg.task.name, batch.texts, scored),  # the task's own, e.g. self-check marks
            **rollouts.metrics,
            **hacking,
            **ctx.exploration.update(batch, scored),
            **update,
            "learning_rate": learning_rate(cfg.optim, step),
            **timer.seconds,
            **ctx.memory.step_metrics(),
        },
        summed=shares,
    )
    start = time.perf_counter()
    ctx.sampler.sync_weights(ctx.policy)
    synced = {"time/weight_sync": time.perf_counter() - start}
    return metrics | synced | ctx.sync_probe.after_sync(ctx.sampler, ctx.forward, batch)


@dataclass
class LossInputs:
    """What the policy-gradient loss is fed in one step (``policy_gradient_inputs``)."""

    batch: RolloutBatch
    """The rollouts; under TIS its old_logp is π_θ_old's, the ratio's denominator."""
    advantages: torch.Tensor  # [N], or [N, T] with KL in the reward or TIS weights
    mask: torch.Tensor | None  # [N, T] loss mask (DAPO's overlong filter), None: every completion token
    stats: dict[str, Any]
    """The advantage estimator's stats (group mean, std ...)."""
    metrics: dict[str, float]
    """sampling/* when TIS is on."""


def policy_gradient_inputs(
    cfg: RunConfig, policy: Runnable, rollouts: Rollouts, ref_logp: torch.Tensor | None, timer: Timer
) -> LossInputs:
    """Advantages from the algorithm's estimator, the KL in the reward if so placed, TIS weights
    (a no-grad forward of `policy`), and the loss mask: everything the policy loss takes besides the
    policy's own log-probs. The step, `rlvr grad-variance` (diagnostics/group_size.py) and the
    inspector's replay (diagnostics/replay.py) all build their losses from this."""
    batch = rollouts.batch
    advantages, stats = ALGORITHMS[cfg.algo.algorithm].advantages(
        rollouts.rewards, eps=cfg.algo.advantage_eps, scale_by_std=cfg.algo.scale_rewards
    )  # [B, G]
    advantages = advantages.flatten()  # [N] one per completion
    if ref_logp is not None and cfg.algo.kl_placement == "reward":
        kl = KL_ESTIMATORS[cfg.algo.kl_estimator](batch.old_logp, ref_logp)  # [N, T] at sampling time
        advantages = kl_in_reward_advantages(advantages, kl, batch.policy_mask, beta=cfg.algo.beta)  # [N, T]
    batch, advantages, tis = tis_correction(cfg, policy, batch, advantages, timer)  # algo.tis_cap (engine/tis.py)
    return LossInputs(batch, advantages, loss_mask(batch, cfg.algo.overlong_filter), stats, tis)


def policy_gradient_update(
    ctx: StepContext, rollouts: Rollouts, ref_logp: torch.Tensor | None, timer: Timer, observer: StepObserver
) -> dict[str, float]:
    """The clipped policy loss and AdamW for each of algo.num_iterations; returns the update's metrics."""
    cfg = ctx.cfg
    inputs = policy_gradient_inputs(cfg, ctx.forward, rollouts, ref_logp, timer)
    batch = inputs.batch
    mask = batch.policy_mask if inputs.mask is None else inputs.mask  # [N, T] the tokens the loss counts
    observer.advantages(batch, inputs.advantages, mask, inputs.stats)
    noises: list[MicroBatchNoise] = []
    mismatch = LogprobMismatch(rollouts.batch.old_logp, mask)

    def accumulate() -> UpdateResult:
        noises.append(MicroBatchNoise(ctx.policy))  # grad/variance, grad/noise_scale from the micro-batches
        first_pass = (mismatch,) if len(noises) == 1 else ()  # the sampler's log-probs against π_θ before any step
        return accumulate_run_gradient(
            cfg,
            ctx.forward,
            batch,
            inputs.advantages,
            ref_logp,
            on_micro_batch=_both(noises[-1], observer.micro_batch, *first_pass),
            loss_mask=inputs.mask,
            global_counts=ctx.dist.global_counts,
        )

    update, norms = optimize(ctx, timer, observer, accumulate)
    return {
        **inputs.metrics,
        "loss": update.loss,
        **update.stats,
        **norms,
        **noises[-1].metrics(),
        **mismatch.metrics(),
        SHARES: tuple(update.stats),
    }


UPDATES: dict[str, Update] = {
    "policy_gradient": policy_gradient_update,
    "actor_critic": actor_critic_update,
    "preference": preference_update,
}
"""The update each `Algorithm.update` kind runs."""

SHARES = "_shares"
"""Key under which an update names its metrics that are one process's share of the step's value
(engine/update.py: token means over a shard, divided by the step's counts); their sum over processes
is the step's. Removed before logging."""


def _both(*hooks: Callable) -> Callable:
    def run(*args: object) -> None:
        for hook in hooks:
            hook(*args)

    return run


def rollout_metrics(batch: RolloutBatch, scored: list[ScoredCompletion], rewards: torch.Tensor) -> dict[str, float]:
    """What the rollouts were: reward (mean and batch std, as TRL), accuracy, lengths, groups with no spread."""
    lengths = batch.policy_mask.sum(dim=1).float()  # [N] the policy's tokens (tool observations not counted, as TRL)
    valid = ~torch.isnan(rewards)  # [B, G]
    judged = rewards[valid]  # [n]
    _, group_stats = group_advantages(rewards)  # [B, G]: which groups have no reward spread
    correct = torch.tensor([s.correct for s in scored])  # [N]
    judged_flat = valid.flatten()  # [N]

    def mean_length(rows: torch.Tensor) -> float:
        return float(lengths[rows].mean()) if rows.any() else float("nan")

    return {
        "reward": float(judged.mean()) if valid.any() else float("nan"),
        "reward_std": float(judged.std()) if judged.numel() > 1 else 0.0,  # TRL: std of the step's rewards
        "frac_reward_zero_std": float(group_stats["frac_zero_std"]),
        "accuracy": sum(s.correct for s in scored) / len(scored),
        "format_rate": sum(s.results["format"].score for s in scored) / len(scored),
        "completions/mean_length": float(lengths.mean()),
        # Dr. GRPO (Liu et al. 2025, fig. 5): per-sequence length normalisation lets wrong answers grow long
        "completions/correct_mean_length": mean_length(correct & judged_flat),
        "completions/wrong_mean_length": mean_length(~correct & judged_flat),
        "completions/clipped_ratio": batch.finish_reasons.count("length") / len(batch.finish_reasons),
        "verifier/unscorable": int((~valid).sum()),
        **verify_latency(scored),
    }


def verify_latency(scored: list[ScoredCompletion]) -> dict[str, float]:
    """time/verify_p50 and _p99: the correctness verifier's seconds per completion (the verdicts'
    elapsed_s, which the pooled and sandboxed verifiers measure), nearest-rank quantiles."""
    seconds = sorted(s.results["correctness"].elapsed_s for s in scored if "correctness" in s.results)
    if not seconds or not any(seconds):
        return {}

    def rank(q: float) -> float:
        return seconds[min(len(seconds) - 1, max(0, math.ceil(q * len(seconds)) - 1))]

    return {"time/verify_p50": rank(0.5), "time/verify_p99": rank(0.99)}


def measure_hacking(
    ctx: StepContext, step: int, batch: RolloutBatch, scored: list[ScoredCompletion], timer: Timer
) -> dict[str, float]:
    """hacking/* metrics: a sample of the rollouts re-scored by the gold verifier, when the training
    verifier is a weakened one (meters/hacking.py); {} otherwise."""
    if ctx.hacking is None:
        return {}
    with timer.phase("hacking"):
        items = [(batch.query_of(i), text) for i, text in enumerate(batch.texts)]
        return ctx.hacking.measure(step, items, scored)


def reference_logp(ctx: StepContext, rollouts: Rollouts, timer: Timer) -> torch.Tensor | None:
    """log π_ref of the sampled tokens [N, T], or None when no reference is held (β = 0); the
    sampler process's when it computed them beside its sampling (rollout.max_staleness)."""
    if ctx.reference is None:
        return None
    if rollouts.ref_logp is not None:
        return rollouts.ref_logp
    with timer.phase("reference"):
        return ctx.reference.logprobs(
            rollouts.batch, temperature=ctx.cfg.rollout.temperature, micro_batch_size=ctx.cfg.optim.micro_batch_size
        )  # [N, T]
