"""reasoning-gym rows judged by the dataset's own ``score_answer``, in worker processes, after rlvr's checks.

A row (rlvr.tasks.reasoning_gym) is ``{"type": "reasoning_gym", "dataset": NAME, "config":
{...}, "entry": {"question", "answer", "metadata"}, "partial_credit": false}``. The completion's
last ``<answer>...</answer>`` goes to ``score_answer(answer, entry)`` of that dataset built with
that config. A score of 1 is ``pass``; anything below is ``fail``, unless the row sets
``partial_credit`` (``task.rg_partial_credit``), which makes a score between 0 and 1 ``partial``
with exactly that score (several datasets give 0.01 or 0.05 for a well-formed wrong answer, the
shared decimal scorer up to 0.9 for a wrong answer that contains the right one).

A scorer is not trusted blindly (``rlvr.verifiers._rg_checks``): an answer holding a token that
parses as NaN or infinity never reaches one (``unparseable``); datasets whose scorer pays wrong
answers in full have a check of rlvr's own that runs first, and an answer it refuses is
``fail``/``wrong_answer``; datasets rlvr cannot check are refused by name (``error``).

The scorers are third-party code that parses model text, some of it through ``eval``, so they run
in a ``WorkerPool`` (``_rg_worker.score``) with an address-space cap and a wall-clock kill, and
with ``eval`` restricted to data while they run (``_rg_worker.guarded_eval``: an answer cannot run
as code, read the reference answer from the scorer's frame, or touch files). An answer that
makes a scorer raise, overrun, die or return anything but a number in [0, 1] is that answer's
``fail``; a row that names a dataset or config this reasoning-gym cannot build and a worker that
fails on its own are ``error``, never a reward; without reasoning-gym installed, an answer that
would reach a scorer is ``unavailable``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from rlvr.tasks.reasoning_gym import REFUSED
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._rg_checks import CHECKS, non_finite
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import answer_or_fail, bad_criteria, fail, unavailable
from rlvr.verifiers.pooled import PooledVerifier, WorkerSettings

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
    job = RG_JOB
    warmup = WARMUP
    default_workers = WorkerSettings(kill_after_s=5.0, memory_limit_mb=2048)
    outcome_words = ("scorer killed", "worker failed", "the scorer failed on this answer")

    def __init__(self, **workers: Any) -> None:
        """``workers``: kill_after_s (default 5), pool_size, start_method, memory_limit_mb (2048)."""
        super().__init__(**workers)
        self.installed = importlib.util.find_spec("reasoning_gym") is not None
        """Looked up once: without the package, an answer that would reach a scorer is unavailable."""

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[Any, ...]:
        """A result when no scorer is needed, else the worker job's arguments."""
        criteria = query.verifier
        problem = _criteria_problem(criteria)
        if problem:
            return bad_criteria(query, "reasoning_gym", problem)
        answer = answer_or_fail(completion, allow_empty=True, max_chars=MAX_ANSWER_CHARS)
        if isinstance(answer, VerifierResult):
            return answer
        refused = _refused_before_scoring(query, answer)
        if refused is not None:
            return refused
        if not self.installed:
            return unavailable(
                "reasoning_gym rows need the reasoning-gym package: .venv/bin/pip install -e '.[reasoning_gym]'"
            )
        return (criteria["dataset"], criteria.get("config", {}), criteria["entry"], answer)

    def _from_value(self, query: Query, value: Any) -> VerifierResult:
        kind, said = value
        if kind == "ok":
            return _scored(query, said)
        if kind == "raised":
            return fail(ErrorClass.RUNTIME_ERROR, f"the scorer raised on this answer: {said}")
        if kind == "bad_score":  # spell_backward's sum of 1/n can come to 1.0000000000000002
            detail = (
                f"{query.verifier['dataset']}'s score_answer returned {said} on this answer, not a number in [0, 1]"
            )
            return fail(ErrorClass.RUNTIME_ERROR, detail)
        return bad_criteria(query, "reasoning_gym", said)  # "row_error"


def _criteria_problem(criteria: dict[str, Any]) -> str:
    """Why a row's criteria cannot be scored, or ""."""
    if not isinstance(criteria.get("dataset"), str) or not criteria["dataset"]:
        return '"dataset" must name a reasoning-gym dataset, e.g. "chain_sum"'
    if not isinstance(criteria.get("config", {}), dict):
        return '"config" must be an object of the dataset\'s config arguments'
    entry = criteria.get("entry")
    if not isinstance(entry, dict) or not isinstance(entry.get("question"), str) or "answer" not in entry:
        return '"entry" must be the dataset item: {"question", "answer", "metadata"}'
    if not isinstance(criteria.get("partial_credit", False), bool):
        return f'"partial_credit" must be true or false, got {criteria["partial_credit"]!r}'
    if criteria["dataset"] in REFUSED:
        return f"rlvr does not score reasoning-gym's {criteria['dataset']}: {REFUSED[criteria['dataset']]}"
    return ""


def _refused_before_scoring(query: Query, answer: str) -> VerifierResult | None:
    """The fail of an answer that parses as NaN or infinity or that rlvr's check for the dataset
    refuses (``_rg_checks``), else None: the scorer may judge it."""
    dataset, entry = query.verifier["dataset"], query.verifier["entry"]
    token = non_finite(answer, entry["answer"])
    if token:
        return fail(ErrorClass.UNPARSEABLE, f"{clip(token)!r} parses as NaN or infinity; no scorer reads it")
    check = CHECKS.get(dataset)
    if check is None:
        return None
    try:
        problem = check(answer, entry)
    except (KeyError, TypeError) as error:  # the row's entry lacks what the check reads
        return bad_criteria(query, "reasoning_gym", f"its entry lacks what rlvr's check for {dataset} reads: {error!r}")
    return fail(ErrorClass.WRONG_ANSWER, f"rlvr's check for {dataset}: {problem}") if problem else None


def _scored(query: Query, score: float) -> VerifierResult:
    """1 is pass; below 1 is fail, or partial with that score when the row asks for partial credit."""
    dataset, expected = query.verifier["dataset"], query.verifier["entry"].get("answer")
    if not 0.0 <= score <= 1.0:
        return fail(
            ErrorClass.RUNTIME_ERROR, f"{dataset}'s score_answer returned {score} on this answer, outside [0, 1]"
        )
    if score == 1.0:
        return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, f"score 1 from {dataset}")
    detail = f"score {score:g} from {dataset}" + (f"; expected {clip(str(expected))!r}" if expected is not None else "")
    if score > 0.0 and query.verifier.get("partial_credit", False):
        return VerifierResult(Verdict.PARTIAL, score, ErrorClass.WRONG_ANSWER, detail)
    if score > 0.0:
        detail += " (a score below 1 is fail: task.rg_partial_credit=true pays it)"
    return fail(ErrorClass.WRONG_ANSWER, detail)
