"""The Verifier protocol, the results every verifier builds (a completion's fail, a bad row's
error), and the extraction of answers and code from completions.

A completion reasons in ``<think>…</think>`` and answers in ``<answer>…</answer>``; code comes from
the last fenced block of the query's language, else from the answer, else from the whole text
(DESIGN.md, "Completions").
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from rlvr.types import ErrorClass, Query, TestOutcome, Verdict, VerifierResult

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


Criteria = TypeVar("Criteria")


def fail(error_class: ErrorClass, detail: str, tests: list[TestOutcome] | None = None) -> VerifierResult:
    """The completion's own fail: score 0, with what was wrong in ``error_class`` and ``detail``."""
    return VerifierResult(Verdict.FAIL, 0.0, error_class, detail, tests or [])


def verifier_error(detail: str) -> VerifierResult:
    """``error``: the row or the verifier is at fault, not the completion, so the sample stays out
    of rewards and baselines (DESIGN.md, "Verifier results")."""
    return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)


def unavailable(detail: str) -> VerifierResult:
    """``unavailable``: what the check needs (a sandbox, a toolchain, a package) is not here."""
    return VerifierResult(Verdict.UNAVAILABLE, 0.0, ErrorClass.INFRASTRUCTURE, detail)


def bad_criteria(query: Query, kind: str, problem: object) -> VerifierResult:
    """The ``error`` of a row whose criteria do not parse: the dataset's fault, never the completion's
    (`rlvr data check` finds these rows before training: verifiers/registry.py `criteria_problem`)."""
    return VerifierResult(
        Verdict.ERROR, 0.0, ErrorClass.BAD_CRITERIA, f"query {query.id!r} has bad {kind} criteria: {problem}"
    )


def parse_criteria(query: Query, parse: Callable[[dict[str, Any]], Criteria], kind: str) -> Criteria | VerifierResult:
    """``parse(query.verifier)``, or `bad_criteria` with the ValueError that says which key is wrong."""
    try:
        return parse(query.verifier)
    except ValueError as error:
        return bad_criteria(query, kind, error)


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


def answer_or_fail(completion: str, *, allow_empty: bool = False, max_chars: int | None = None) -> str | VerifierResult:
    """The ``<answer>`` content, or the fail that decides without it: no answer, an empty one
    (unless ``allow_empty``), or one over ``max_chars`` (``unparseable``: never parsed at all)."""
    answer = extract_answer(completion)
    if answer is None:
        return fail(ErrorClass.NO_ANSWER, "no <answer>...</answer> in completion")
    if not answer and not allow_empty:
        return fail(ErrorClass.NO_ANSWER, "<answer> is empty")
    if max_chars is not None and len(answer) > max_chars:
        return fail(ErrorClass.UNPARSEABLE, f"answer is over {max_chars} characters")
    return answer


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
