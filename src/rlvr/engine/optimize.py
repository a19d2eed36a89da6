"""The optimize loop, once for every update kind: `algo.num_iterations` passes over the step's
batch, each a forward/backward accumulated over its parts (engine/update.py
`backward_in_parts`), the gradients summed over processes, then one clipped AdamW step.

The policy-gradient update (engine/step.py), PPO's (engine/ppo.py, which also steps its critic
after each pass) and DPO's (engine/dpo.py) differ only in the loss they accumulate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rlvr.engine.context import StepContext, StepObserver, Timer
from rlvr.engine.update import optimizer_step

R = TypeVar("R")


def optimize(
    ctx: StepContext,
    timer: Timer,
    observer: StepObserver,
    accumulate: Callable[[], R],
    after_step: Callable[[], dict[str, float]] | None = None,
) -> tuple[R, dict[str, float]]:
    """Run the passes; returns the last pass's `accumulate()` result and its metrics: grad_norm
    (before clipping), update_norm |Δθ| and whatever `after_step()` (run after each AdamW step)
    returned last."""
    passes = ctx.cfg.algo.num_iterations
    result, metrics = None, {}
    for iteration in range(passes):
        observer.iteration(iteration, last=iteration == passes - 1)
        with timer.phase("forward_backward"), ctx.memory.activations():
            result = accumulate()
        with timer.phase("optimizer"):
            ctx.dist.sum_gradients(ctx.policy)  # each shard's share → the step's gradient
            grad_norm, update_norm = optimizer_step(ctx.policy, ctx.optimizer, ctx.cfg.optim.max_grad_norm)
        metrics = {"grad_norm": grad_norm, "update_norm": update_norm}
        if after_step is not None:
            metrics |= after_step()
    return result, metrics
