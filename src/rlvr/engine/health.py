"""The run's health checks: each reads a step's logged metrics and, the first time its condition
holds, returns one warning line that names the cause and the fix.

A check is an object with `name` and `observe(step, metrics) -> str | None`; `HealthChecks` runs
them in order, prints nothing itself, and keeps every warning it returned, which the loop writes to
summary.json's "warnings". The checks today:

- `no_learning_signal`: every group of the first `window` steps had zero reward variance
  (`frac_reward_zero_std` = 1), so every advantage was 0 and the policy got no gradient from the
  reward. The line says which way (every sample failed, every sample passed, or each group got one
  value) and what to change.
- `reward_hacking`: held by meters/hacking.py (`hacking/rate` above reward.hacking_warn), when the
  training verifier is weakened.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class NoLearningSignal:
    """Warns once when every group of the first `window` steps had no reward spread."""

    window: int = 5
    name: str = "no_learning_signal"
    rewards: list[float] = field(default_factory=list)
    done: bool = False

    def observe(self, step: int, metrics: dict[str, float]) -> str | None:
        if self.done or "frac_reward_zero_std" not in metrics:
            return None
        if metrics["frac_reward_zero_std"] < 1.0:
            self.done = True  # a group with spread: the reward teaches something
            return None
        self.rewards.append(metrics.get("reward", math.nan))
        if len(self.rewards) < self.window:
            return None
        self.done = True
        return f"warning: no learning signal: {self._why()} for {self.window} steps, so every advantage is 0. {self._fix()}"

    def _why(self) -> str:
        if all(r == 0.0 for r in self.rewards):
            return "every sample of every group got reward 0"
        if all(r == 1.0 for r in self.rewards):
            return "every sample of every group got reward 1"
        return "each group's samples all got the same reward"

    def _fix(self) -> str:
        if all(r == 0.0 for r in self.rewards):
            return (
                "The model never writes an answer the verifier passes: start from a base that has seen this "
                "task's answer format (rlvr build-base, docs/models.md), warm it up on worked examples, or use a "
                "larger model; raising rollout.group_size or rollout.temperature helps only if some samples can pass."
            )
        if all(r == 1.0 for r in self.rewards):
            return (
                "Every sample already earns the full reward: the queries are too easy for this model (harder task "
                "settings, another task), or the reward pays what the base already does (a format-only reward: "
                "weight the correctness check, reward.correctness_weight)."
            )
        return (
            "The reward does not tell a group's samples apart (a format-only reward the base already meets, or a "
            "checker that ignores the answer): weight the correctness check (reward.correctness_weight)."
        )


@dataclass
class Check:
    """A check built from a function: `observe` is `warn(metrics)`, a line or None."""

    name: str
    warn: Callable[[dict[str, float]], str | None]

    def observe(self, step: int, metrics: dict[str, float]) -> str | None:
        return self.warn(metrics)


class HealthChecks:
    """The run's checks, in order; `observe` returns the new warning lines of a step."""

    def __init__(self, checks: list):
        self.checks = checks
        self.warnings: list[dict[str, object]] = []

    def observe(self, step: int, metrics: dict[str, float]) -> list[str]:
        lines = []
        for check in self.checks:
            line = check.observe(step, metrics)
            if line:
                self.warnings.append({"check": check.name, "step": step, "message": line})
                lines.append(line)
        return lines
