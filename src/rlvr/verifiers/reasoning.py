"""The reasoning reward: is every step of the completion a true claim that chains through the query
to its answer?

A reward component of its own, like ``format``: it reads the task's reasoning checker (the one
CoT-pass@k counts with, in the task's record in tasks/registry.py; Wen et al. 2025) instead of
``query.verifier``. A pass implies a right final answer, so with ``reward.correctness_weight=0`` and
``reward.reasoning_weight=1`` the reward is CoT-correctness: a right answer after a wrong step earns
nothing. Rows of a task without a checker are unscorable, never silently 0.
"""

from __future__ import annotations

import time

from rlvr.tasks.registry import reasoning_checker, registered
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.base import BaseVerifier


class ReasoningVerifier(BaseVerifier):
    """PASS iff the query's task has a reasoning checker and it accepts the completion."""

    name = "reasoning"

    def verify(self, query: Query, completion: str) -> VerifierResult:
        started = time.perf_counter()
        task = query.meta.get("task")
        check = reasoning_checker(task) if isinstance(task, str) else None
        if check is None:
            checkers = ", ".join(t.name for t in registered() if t.reasoning_checker is not None)
            result = VerifierResult(
                Verdict.UNAVAILABLE, 0.0, ErrorClass.INFRASTRUCTURE,
                f"no reasoning checker for task {task!r} (checkers: {checkers})",
            )  # fmt: skip
        elif check(query, completion):
            result = VerifierResult(Verdict.PASS, 1.0)
        else:
            result = VerifierResult(Verdict.FAIL, 0.0, ErrorClass.WRONG_ANSWER, "a step is false or breaks the chain")
        result.elapsed_s = time.perf_counter() - started
        return result
