"""The Verifier protocol and the extraction of answers and code from completions.

A completion reasons in ``<think>…</think>`` and answers in ``<answer>…</answer>``; code comes from
the last fenced block of the query's language, else from the answer, else from the whole text
(DESIGN.md, "Completions").
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rlvr.types import Query, VerifierResult

if TYPE_CHECKING:
    from rlvr.workers import JobOutcome, WorkerPool

ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"

_FENCE_LANGUAGES = {"python": "python3|python|py", "c": "c"}
"""Info strings accepted after ``` for each code language (``c`` must not match ``cpp``)."""


@runtime_checkable
class Verifier(Protocol):
    """Judges completions against a query's deterministic criteria (``query.verifier``)."""

    name: str

    def verify(self, query: Query, completion: str) -> VerifierResult: ...

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]: ...


class BaseVerifier(ABC):
    """Convenience base: subclasses write ``verify``; ``verify_batch`` loops over it.

    Verifiers that can overlap work (worker pools, sandboxes) override ``verify_batch``.
    """

    name: str = ""

    @abstractmethod
    def verify(self, query: Query, completion: str) -> VerifierResult: ...

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        return [self.verify(query, completion) for query, completion in items]

    def close(self) -> None:
        """Release processes or other resources; a no-op for in-process verifiers."""


class PooledVerifier(BaseVerifier):
    """A verifier that judges in worker processes (``rlvr.workers.WorkerPool``).

    ``_prepare`` judges what it can at once (a VerifierResult, timed here) and returns a job's
    arguments for the rest; all jobs of a batch go to ``_run_jobs`` in one call (``self.pool``'s
    ``run_batch`` unless a subclass keeps several pools), and ``_from_outcome`` turns each outcome
    into a result. Results come back in item order.
    """

    pool: WorkerPool

    @abstractmethod
    def _prepare(self, query: Query, completion: str) -> VerifierResult | Any:
        """A result when no worker is needed, else the job's arguments."""

    @abstractmethod
    def _from_outcome(self, query: Query, outcome: JobOutcome) -> VerifierResult:
        """A worker's outcome for this query as a result."""

    def _run_jobs(self, jobs: list[Any]) -> list[JobOutcome]:
        return self.pool.run_batch(jobs)

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


def extract_answer(completion: str) -> str | None:
    """Stripped content of the last ``<answer>…</answer>``, or None if there is none.

    "Last" because models restate and revise: the final answer tag is the one that counts. An
    unclosed trailing ``<answer>`` (generation cut at max tokens) is not an answer. The content may
    be "" (present but empty); callers decide what empty means.
    """
    end = completion.rfind(ANSWER_CLOSE)
    if end < 0:
        return None
    start = completion.rfind(ANSWER_OPEN, 0, end)
    if start < 0:
        return None
    return completion[start + len(ANSWER_OPEN) : end].strip()


def extract_code(completion: str, language: str) -> str:
    """Code to run: the last closed ```` ```python ```` (or ```` ```c ````) block, else the
    ``<answer>`` content, else the whole completion."""
    if language not in _FENCE_LANGUAGES:
        known = ", ".join(sorted(_FENCE_LANGUAGES))
        raise ValueError(f"no code fence rule for language {language!r}; known: {known}")
    fence = re.compile(rf"```[ \t]*(?:{_FENCE_LANGUAGES[language]})[ \t]*\r?\n(.*?)```", re.DOTALL)
    blocks = fence.findall(completion)
    if blocks:
        return blocks[-1]
    answer = extract_answer(completion)
    if answer:
        return answer
    return completion
