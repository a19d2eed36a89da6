"""What every verifier that judges in worker processes shares (math, smt, reasoning_gym, verifiers):
the pool's settings, a batch's jobs run side by side, and what each worker outcome means.

A worker outcome that is not a judgement (rlvr/workers.py statuses) is read the same way by all of
them. What follows the answer is its fail: a kill at the deadline is ``timeout``, a worker that
raised or died while judging it (the pool retires that worker) is ``memory`` or ``runtime_error``.
A pool fault before the job (a worker that could not start) and a SIGKILL from outside (the host's
OOM killer) are ours: ``error``, unscorable. A wrong answer must not make itself unscorable.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from rlvr.types import ErrorClass, Query, VerifierResult
from rlvr.verifiers.base import BaseVerifier, fail, verifier_error
from rlvr.workers import JobOutcome, StartMethod, WorkerPool


@dataclass(frozen=True)
class WorkerSettings:
    """How a verifier's worker processes run; each verifier class sets its own defaults."""

    kill_after_s: float
    """Hard wall-clock limit per job: past it the worker is killed and the answer is ``timeout``."""
    memory_limit_mb: int | None
    """Address-space cap of each worker, or None for none."""
    pool_size: int = 2
    """Workers judging side by side."""
    start_method: StartMethod = "forkserver"

    def pool(self, job: str, warmup: tuple[Any, ...] | None, **options: Any) -> WorkerPool:
        """A pool of these workers for ``job`` ("module:function"); no process starts before its first job."""
        return WorkerPool(
            job,
            size=self.pool_size,
            timeout_s=self.kill_after_s,
            start_method=self.start_method,
            memory_limit_mb=self.memory_limit_mb,
            warmup=warmup,
            **options,
        )


class PooledVerifier(BaseVerifier):
    """A verifier that judges in worker processes (``rlvr.workers.WorkerPool``).

    ``_prepare`` judges what it can at once (a VerifierResult, timed here) and returns a job's
    arguments for the rest; all jobs of a batch go to ``_run_jobs`` in one call (``self.pool``'s
    ``run_batch`` unless a subclass keeps several pools), and ``_from_outcome`` turns each outcome
    into a result: ``_from_value`` reads a finished job's value, the rest is the module docstring's
    table, worded by ``outcome_words``. Results come back in item order.
    """

    job: ClassVar[str]
    """The worker job by name ("module:function"), so that the trainer's process never imports it."""
    warmup: ClassVar[tuple[Any, ...] | None] = None
    """Arguments of a job each new worker runs before its first real one (imports, caches)."""
    default_workers: ClassVar[WorkerSettings]
    outcome_words: ClassVar[tuple[str, str, str]]
    """How details begin for a kill at the deadline, a pool fault, and a worker broken by the
    answer, e.g. ("z3 killed", "z3 worker failed", "z3 failed on this answer")."""

    def __init__(self, **workers: Any) -> None:
        """``workers`` override fields of ``default_workers``: kill_after_s, memory_limit_mb,
        pool_size, start_method. No process starts before the first job that needs one."""
        self.workers = replace(self.default_workers, **workers)
        self.pool = self.workers.pool(self.job, self.warmup)

    @abstractmethod
    def _prepare(self, query: Query, completion: str) -> VerifierResult | Any:
        """A result when no worker is needed, else the job's arguments."""

    @abstractmethod
    def _from_value(self, query: Query, value: Any) -> VerifierResult:
        """A finished job's return value for this query as a result."""

    def _run_jobs(self, jobs: list[Any]) -> list[JobOutcome]:
        return self.pool.run_batch(jobs)

    def _broken_by_answer(self, outcome: JobOutcome) -> ErrorClass:
        """The fail of a worker that raised or died on this answer: ``memory`` when it raised
        MemoryError, else ``runtime_error``."""
        return ErrorClass.MEMORY if outcome.exception == "MemoryError" else ErrorClass.RUNTIME_ERROR

    def _from_outcome(self, query: Query, outcome: JobOutcome) -> VerifierResult:
        """A worker's outcome as a result (the module docstring's table), timed by the pool."""
        killed, pool_fault, broken = self.outcome_words
        if outcome.status == "ok":
            result = self._from_value(query, outcome.value)
        elif outcome.status == "timeout":
            result = fail(ErrorClass.TIMEOUT, f"{killed}: {outcome.detail}")
        elif not outcome.caused_by_job:  # a pool fault, or a SIGKILL from outside
            result = verifier_error(f"{pool_fault}: {outcome.detail}")
        else:  # "raised" or "died" on this answer: the pool retired that worker
            result = fail(self._broken_by_answer(outcome), f"{broken}: {outcome.detail}")
        result.elapsed_s = outcome.elapsed_s
        return result

    def verify(self, query: Query, completion: str) -> VerifierResult:
        return self.verify_batch([(query, completion)])[0]

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        results: list[VerifierResult | None] = []
        jobs: list[tuple[int, Any]] = []  # (index into items, job)
        for index, (query, completion) in enumerate(items):
            started = time.perf_counter()
            judged = self._prepare(query, completion)
            if isinstance(judged, VerifierResult):
                judged.elapsed_s = time.perf_counter() - started
                results.append(judged)
            else:
                results.append(None)
                jobs.append((index, judged))
        if jobs:
            outcomes = self._run_jobs([job for _, job in jobs])
            for (index, _), outcome in zip(jobs, outcomes, strict=True):
                results[index] = self._from_outcome(items[index][0], outcome)
        return [result for result in results if result is not None]

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> PooledVerifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
