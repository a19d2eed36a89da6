"""reasoning-gym rows judged by the dataset's own ``score_answer``, in worker processes.

A row (rlvr.tasks.reasoning_gym) is ``{"type": "reasoning_gym", "dataset": NAME, "config":
{...}, "entry": {"question", "answer", "metadata"}}``. The completion's last ``<answer>...</answer>``
goes to ``score_answer(answer, entry)`` of that dataset built with that config, and its score is
the reward: 1 is ``pass``, 0 is ``fail``, anything between is ``partial`` with that score (several
datasets give 0.01 or 0.05 for a well-formed wrong answer, string_insertion 0.1 for the right
string written as a list). Nothing rounds a partial score up or down.

The scorers are third-party code that parses model text, some of it through ``eval``, so they run
in a ``WorkerPool`` (``_rg_worker.score``) with an address-space cap and a wall-clock kill, and
with ``eval`` restricted to data while they run (``_rg_worker.guarded_eval``: an answer cannot run
as code, read the reference answer from the scorer's frame, or touch files). An answer that
makes a scorer raise, overrun or die is that answer's ``fail``; a row that names a dataset or
config this reasoning-gym cannot build, a scorer that returns something other than a number, and
a worker that fails on its own are ``error``, never a reward; without reasoning-gym installed, an
answer that would reach a scorer is ``unavailable``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import PooledVerifier, extract_answer
from rlvr.workers import JobOutcome, StartMethod, WorkerPool

RG_JOB = "rlvr.verifiers._rg_worker:score"
"""By name, so that the trainer's process never runs a scorer."""

WARMUP = ("chain_sum", {}, {"question": "2 + 3 =", "answer": "5", "metadata": {}}, "5")
"""Imports reasoning-gym in each new worker (about a second) before its first real job."""

MAX_ANSWER_CHARS = 10_000
"""Longer answers are not scored (``unparseable``); reasoning-gym's longest reference answers
(tower_of_hanoi's move lists) are around 4,000 characters at its default difficulty."""


class ReasoningGymVerifier(PooledVerifier):
    """Verifier for ``{"type": "reasoning_gym", ...}`` rows; reasoning-gym runs only in the workers."""

    name = "reasoning_gym"

    def __init__(
        self,
        *,
        kill_after_s: float = 5.0,
        pool_size: int = 2,
        start_method: StartMethod = "forkserver",
        memory_limit_mb: int | None = 2048,
    ) -> None:
        self.installed = importlib.util.find_spec("reasoning_gym") is not None
        """Looked up once: without the package, an answer that would reach a scorer is unavailable."""
        self.pool = WorkerPool(
            RG_JOB,
            size=pool_size,
            timeout_s=kill_after_s,
            start_method=start_method,
            memory_limit_mb=memory_limit_mb,
            warmup=WARMUP,
        )

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[Any, ...]:
        """A result when no scorer is needed, else the worker job's arguments."""
        criteria = query.verifier
        problem = _criteria_problem(criteria)
        if problem:
            return _row_error(query, problem)
        answer = extract_answer(completion)
        if answer is None:
            return _fail(ErrorClass.NO_ANSWER, "no <answer>...</answer> in completion")
        if len(answer) > MAX_ANSWER_CHARS:
            return _fail(ErrorClass.UNPARSEABLE, f"answer is over {MAX_ANSWER_CHARS} characters")
        if not self.installed:
            detail = "reasoning_gym rows need the reasoning-gym package: .venv/bin/pip install -e '.[reasoning_gym]'"
            return VerifierResult(Verdict.UNAVAILABLE, 0.0, ErrorClass.INFRASTRUCTURE, detail)
        return (criteria["dataset"], criteria.get("config", {}), criteria["entry"], answer)

    def _from_outcome(self, query: Query, outcome: JobOutcome) -> VerifierResult:
        if outcome.status == "ok":
            kind, value = outcome.value
            if kind == "ok":
                result = _scored(query, value)
            elif kind == "raised":
                result = _fail(ErrorClass.RUNTIME_ERROR, f"the scorer raised on this answer: {value}")
            elif kind == "bad_score":
                detail = f"{query.verifier.get('dataset')}'s score_answer returned {value}, not a number in [0, 1]"
                result = VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
            else:  # "row_error"
                result = _row_error(query, value)
        elif outcome.status == "timeout":
            result = _fail(ErrorClass.TIMEOUT, f"scorer killed: {outcome.detail}")
        elif not outcome.caused_by_job:  # a pool fault, or a SIGKILL from outside
            result = VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, f"worker failed: {outcome.detail}")
        else:  # the worker raised outside the scorer or died on this answer
            error_class = ErrorClass.MEMORY if outcome.exception == "MemoryError" else ErrorClass.RUNTIME_ERROR
            result = _fail(error_class, f"the scorer failed on this answer: {outcome.detail}")
        result.elapsed_s = outcome.elapsed_s
        return result


def _criteria_problem(criteria: dict[str, Any]) -> str:
    """Why a row's criteria cannot be scored, or ""."""
    if not isinstance(criteria.get("dataset"), str) or not criteria["dataset"]:
        return '"dataset" must name a reasoning-gym dataset, e.g. "chain_sum"'
    if not isinstance(criteria.get("config", {}), dict):
        return '"config" must be an object of the dataset\'s config arguments'
    entry = criteria.get("entry")
    if not isinstance(entry, dict) or not isinstance(entry.get("question"), str) or "answer" not in entry:
        return '"entry" must be the dataset item: {"question", "answer", "metadata"}'
    return ""


def _scored(query: Query, score: float) -> VerifierResult:
    expected = query.verifier["entry"].get("answer")
    if not 0.0 <= score <= 1.0:
        detail = f"{query.verifier['dataset']}'s score_answer returned {score}, outside [0, 1]"
        return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
    if score == 1.0:
        return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, f"score 1 from {query.verifier['dataset']}")
    verdict = Verdict.FAIL if score == 0.0 else Verdict.PARTIAL
    detail = f"score {score:g}" + (f"; expected {clip(str(expected))!r}" if expected is not None else "")
    return VerifierResult(verdict, score, ErrorClass.WRONG_ANSWER, detail)


def _fail(error_class: ErrorClass, detail: str) -> VerifierResult:
    return VerifierResult(Verdict.FAIL, 0.0, error_class, detail)


def _row_error(query: Query, problem: str) -> VerifierResult:
    return VerifierResult(
        Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, f"query {query.id!r} has bad reasoning_gym criteria: {problem}"
    )
