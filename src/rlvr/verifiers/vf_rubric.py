"""Rows of a `verifiers` environment judged by that environment's own rubric, in worker processes.

A row (rlvr.tasks.vf_env) is ``{"type": "verifiers", "env": NAME, "args": {...}, "path": DIR,
"row": {the dataset row: prompt, answer, info, ...}}``. The completion, as one assistant message
after the row's prompt, goes to the rubric's ``score_rollout``, which calls each reward function
with the arguments it asks for (``completion``, ``answer``, ``prompt``, ``state``, ``info``,
``parser``, the row's other columns) and adds up ``weight * reward``, as verifiers does.

That weighted sum can exceed 1 (a 1.0 correctness reward plus a 0.2 format reward pays 1.2), so the
score is its share of the rubric's range: ``(reward - low) / (high - low)``, where high is the sum
of the positive weights and low of the negative ones (each reward function returns a value in
[0, 1]). 1 is ``pass``, 0 ``fail``, anything between ``partial`` with that score. The scale is the
rubric's, not rlvr's: group-normalised advantages (GRPO) are the same as with the raw reward.

- **Where it runs.** Environments are third-party code, so the rubric runs in a ``WorkerPool``
  per environment (``_vf_worker.score``) with a wall-clock kill and an address-space cap; each
  worker loads the environment once, off any job's clock.
- **Wrong or broken.** A reward function that raises on a completion is that completion's
  ``fail`` (``runtime_error``; verifiers itself would score the function 0 and log it), one that
  overruns is ``timeout``. An environment that does not load or is not single-turn, a row the
  rubric cannot read, and a reward outside the rubric's range or not a number are ``error``,
  naming the row: never a reward.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import fail, verifier_error
from rlvr.verifiers.pooled import PooledVerifier, WorkerSettings
from rlvr.workers import JobOutcome, WorkerPool

VF_JOB = "rlvr.verifiers._vf_worker:score"
"""By name, so that the trainer's process never imports verifiers."""

LOAD_TIMEOUT_S = 600.0
"""Longest a worker may take to start and load its environment (some download a dataset)."""

MAX_COMPLETION_CHARS = 100_000
"""Longer completions are not scored (``unparseable``)."""

ROUNDING = 1e-9
"""A share this close to 0 or 1 is 0 or 1: the weighted sum adds floats (1.0 + 0.2 over 1.2)."""


class VerifiersRubricVerifier(PooledVerifier):
    """Verifier for ``{"type": "verifiers", ...}`` rows; verifiers runs only in the workers."""

    name = "verifiers"
    job = VF_JOB
    default_workers = WorkerSettings(kill_after_s=10.0, memory_limit_mb=4096)
    outcome_words = ("rubric killed", "worker failed", "the rubric failed on this completion")

    def __init__(self, **workers: Any) -> None:
        """``workers``: kill_after_s (default 10), pool_size, start_method, memory_limit_mb (4096).
        Instead of ``PooledVerifier``'s one pool, one per environment, started by its first job."""
        self.workers = replace(self.default_workers, **workers)
        self.pools: dict[str, WorkerPool] = {}
        """One pool per (env, args, path): its workers load that environment while they start."""

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[Any, ...]:
        """A result when the rubric is not needed, else the worker job's arguments."""
        criteria = query.verifier
        problem = _criteria_problem(criteria)
        if problem:
            return _row_error(query, problem)
        if len(completion) > MAX_COMPLETION_CHARS:
            return fail(ErrorClass.UNPARSEABLE, f"completion is over {MAX_COMPLETION_CHARS} characters")
        return (criteria["env"], criteria.get("args", {}), criteria.get("path", ""), criteria["row"], completion)

    def _run_jobs(self, jobs: list[tuple[Any, ...]]) -> list[JobOutcome]:
        """Each job on the pool of its environment; outcomes in job order."""
        by_env: dict[str, list[int]] = {}
        for index, job in enumerate(jobs):
            by_env.setdefault(json.dumps(job[:3], sort_keys=True), []).append(index)
        outcomes: list[JobOutcome | None] = [None] * len(jobs)
        for key, indices in by_env.items():
            pool = self._pool(key, jobs[indices[0]][:3])
            for index, outcome in zip(indices, pool.run_batch([jobs[i] for i in indices]), strict=True):
                outcomes[index] = outcome
        return [outcome for outcome in outcomes if outcome is not None]

    def _pool(self, key: str, env: tuple[Any, ...]) -> WorkerPool:
        if key not in self.pools:
            # the warmup loads the environment before the worker reports ready
            self.pools[key] = self.workers.pool(self.job, (*env, None, ""), startup_timeout_s=LOAD_TIMEOUT_S)
        return self.pools[key]

    def _from_value(self, query: Query, value: Any) -> VerifierResult:
        kind, said = value
        if kind == "ok":
            return _scored(query, *said)
        if kind == "raised":
            return fail(ErrorClass.RUNTIME_ERROR, f"a reward function raised on this completion: {said}")
        return _row_error(query, said)  # "row_error" or "bad_score": the row or its environment, not this completion

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()


def _criteria_problem(criteria: dict[str, Any]) -> str:
    """Why a row's criteria cannot be scored, or ""."""
    if not isinstance(criteria.get("env"), str) or not criteria["env"]:
        return '"env" must name a verifiers environment, e.g. "gsm8k"'
    if not isinstance(criteria.get("args", {}), dict):
        return '"args" must be an object of load_environment arguments'
    if not isinstance(criteria.get("path", ""), str):
        return '"path" must be the directory that holds the environment module'
    row = criteria.get("row")
    if not isinstance(row, dict) or "prompt" not in row:
        return '"row" must be the environment\'s dataset row, with its "prompt"'
    return ""


def _scored(query: Query, reward: float, low: float, high: float, metrics: dict[str, float]) -> VerifierResult:
    env = query.verifier["env"]
    share = (reward - low) / (high - low)
    parts = ", ".join(f"{name}={value:g}" for name, value in metrics.items())
    detail = f"reward {reward:g} of {high:g} ({parts})" if parts else f"reward {reward:g} of {high:g}"
    if not -ROUNDING <= share <= 1 + ROUNDING:
        return _row_error(query, f"{env}'s rubric gave {reward:g}, outside its range [{low:g}, {high:g}]")
    if share >= 1 - ROUNDING:
        return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, detail)
    if share <= ROUNDING:
        return VerifierResult(Verdict.FAIL, 0.0, ErrorClass.WRONG_ANSWER, _with_answer(query, detail))
    return VerifierResult(Verdict.PARTIAL, share, ErrorClass.WRONG_ANSWER, _with_answer(query, detail))


def _with_answer(query: Query, detail: str) -> str:
    answer = query.verifier["row"].get("answer")
    return f"{detail}; expected {clip(str(answer))!r}" if answer not in (None, "") else detail


def _row_error(query: Query, problem: str) -> VerifierResult:
    return verifier_error(f"query {query.id!r} cannot be scored by its verifiers environment: {problem}")
