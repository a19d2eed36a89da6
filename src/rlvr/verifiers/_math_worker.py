"""The math-verify job that runs inside ``WorkerPool`` processes (never in the trainer's process).

Imports math-verify and the standard library only: no ``rlvr.types``, which would pull torch into
every worker. Results are plain strings equal to ``Verdict`` / ``ErrorClass`` values, converted
back to enums by ``rlvr.verifiers.math``.
"""

from __future__ import annotations

import logging
from typing import Any

from math_verify import parse, verify

from rlvr.verifiers._text import clip

Judgement = tuple[str, str, str]
"""(verdict value, error class value, one-line detail)."""

# math-verify warns once per process that its own timeout is off; here that is intended (the
# pool's kill is the timeout), and every restarted worker would repeat the warning.
logging.getLogger("math_verify").setLevel(logging.ERROR)


def as_math(text: str) -> str:
    r"""Delimit bare LaTeX with ``$`` so math-verify's LaTeX extractor sees it.

    Without delimiters ``parse("\\sqrt{2}")`` and ``parse("\\{1,2\\}")`` find nothing; with
    them they parse, and plain expressions ("1/2", "0.5") still do.
    """
    return text if "$" in text else f"${text}$"


def _has_math(parsed: list[Any]) -> bool:
    """Whether ``parse`` found an expression, not just its raw-string fallback.

    ``parse(..., fallback_mode="first_match")`` (the default) returns the unparsed text as a str
    when nothing parses, e.g. ``parse("$)))$") == [")))"]``.
    """
    return any(not isinstance(item, str) for item in parsed)


def judge(gold: str, answer: str) -> Judgement:
    """Compare ``answer`` with ``gold`` by math-verify; runs in a worker process.

    math-verify's own timeouts are off (``parsing_timeout=None``, ``timeout_seconds=None``): the
    pool's SIGKILL at its deadline is the one clock, and SIGALRM could not stop C code anyway.
    math-verify catches every exception inside a comparison and reads it as "not equal"
    (math_verify/grader.py, ``except Exception`` around each strategy), so an answer that
    exhausts the worker's memory limit is judged wrong, like any other that cannot be shown equal.
    """
    gold_parsed = parse(as_math(gold), parsing_timeout=None)
    if not _has_math(gold_parsed):
        return "error", "unparseable", f"gold answer {clip(gold)!r} cannot be parsed; fix the row"
    answer_parsed = parse(as_math(answer), parsing_timeout=None)
    if not _has_math(answer_parsed):
        return "fail", "unparseable", f"no mathematical expression in answer {clip(answer)!r}"
    if verify(gold_parsed, answer_parsed, timeout_seconds=None):
        return "pass", "none", f"equivalent to {clip(gold)!r}"
    return "fail", "wrong_answer", f"expected {clip(gold)!r}, got {clip(answer)!r}"
