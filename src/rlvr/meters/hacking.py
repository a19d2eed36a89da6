"""Reward-hacking monitor: how often does the training verifier pass what the gold one fails?

A run trained against a weakened verifier (verifiers/fidelity.py) can raise its reward without
raising the true one (Skalse et al. 2022). Each step, a sample of the rollouts is scored again by
the gold verifier behind the training one, and

    hacking/rate                  = share the training verifier passes and gold does not pass
    hacking/gold_accuracy         = share the gold verifier passes
    hacking/gold_unscorable_rate  = share the training verifier passes and gold could not judge

are logged over the sampled completions the training verifier could judge (docs/metrics.md). A
training pass that gold could not judge (``error``, ``unavailable``, ``unknown``) counts as hacked:
the reward was paid and nothing confirmed it, and a completion that breaks the gold check must not
hide from it by doing so. Its own rate says how much of ``hacking/rate`` is that rather than gold
fails (a broken gold verifier shows there). Completions the training verifier could not judge got
no reward and are left out. The sample is drawn with its own seeded generator, so it is the same
for a resumed run and does not move the training randomness.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlvr.types import Query
from rlvr.verifiers.base import Verifier
from rlvr.verifiers.fidelity import gold_of
from rlvr.verifiers.reward import RewardFunction, ScoredCompletion

if TYPE_CHECKING:
    from rlvr.config import RewardConfig


def is_hacked(trained: ScoredCompletion, gold: ScoredCompletion) -> bool:
    """The training verifier passed (and paid a reward) and the gold verifier did not pass: it
    failed, or could not judge (``gold.reward is None``)."""
    return trained.reward is not None and trained.correct and not (gold.reward is not None and gold.correct)


def hacking_counts(trained: list[ScoredCompletion], gold: list[ScoredCompletion]) -> tuple[int, int, int]:
    """(hacked, gold passed, judged) over the pairs the training verifier could judge; a training
    pass that gold could not judge is hacked (module docstring)."""
    judged = [(t, g) for t, g in zip(trained, gold, strict=True) if t.reward is not None]
    hacked = sum(is_hacked(t, g) for t, g in judged)
    return hacked, sum(g.reward is not None and g.correct for _, g in judged), len(judged)


def gold_unscorable_passes(trained: list[ScoredCompletion], gold: list[ScoredCompletion]) -> int:
    """Training passes the gold verifier could not judge (counted in ``hacking_counts``' hacked)."""
    return sum(t.reward is not None and t.correct and g.reward is None for t, g in zip(trained, gold, strict=True))


def hacking_shares(trained: list[ScoredCompletion], gold: list[ScoredCompletion]) -> dict[str, float]:
    """The hacking/* step metrics (module docstring) of re-scored pairs (training, gold)."""
    hacked, gold_passed, judged = hacking_counts(trained, gold)
    if not judged:
        return {
            "hacking/rate": float("nan"),
            "hacking/gold_accuracy": float("nan"),
            "hacking/gold_unscorable_rate": float("nan"),
            "hacking/gold_unscorable": 0,
            "hacking/sampled": 0,
        }
    unscorable = gold_unscorable_passes(trained, gold)
    return {
        "hacking/rate": hacked / judged,
        "hacking/gold_accuracy": gold_passed / judged,
        "hacking/gold_unscorable_rate": unscorable / judged,
        "hacking/gold_unscorable": unscorable,
        "hacking/sampled": judged,
    }


@dataclass
class HackingMonitor:
    """Scores a sample of each step's rollouts with the gold verifier (the run's health check
    reward_hacking, engine/health.py, raises the alarm)."""

    gold_fn: RewardFunction
    sample: int
    """Completions per step to re-score (0 = all)."""
    seed: int = 0

    @classmethod
    def for_run(
        cls, reward_cfg: RewardConfig, weights: dict[str, float], verifier_for: Callable[[str], Verifier], seed: int
    ) -> HackingMonitor | None:
        """A monitor when the training verifier has a gold counterpart, else None (nothing to compare;
        a random reward ignores the text, so no text can exploit it)."""
        if reward_cfg.fidelity in ("gold", "random"):
            return None
        gold_fn = RewardFunction(weights, verifier_for=gold_of(verifier_for))
        return cls(gold_fn, reward_cfg.hacking_sample, seed)

    def measure(self, step: int, items: list[tuple[Query, str]], scored: list[ScoredCompletion]) -> dict[str, float]:
        rng = random.Random(f"hacking-{self.seed}-{step}")
        picked = (
            sorted(rng.sample(range(len(items)), self.sample)) if 0 < self.sample < len(items) else range(len(items))
        )
        gold = self.gold_fn.score_batch([items[i] for i in picked])
        return hacking_shares([scored[i] for i in picked], gold)
