"""The math-verify job that runs inside ``WorkerPool`` processes (never in the trainer's process).

Imports math-verify and the standard library only: no ``rlvr.types``, which would pull torch into
every worker. Results are plain strings equal to ``Verdict`` / ``ErrorClass`` values, converted
back to enums by ``rlvr.verifiers.math``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from math_verify import parse, verify
from sympy import Abs, Basic, Max

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


# "0.5", ".25", "1,000.5"; not "42." (math-verify reads that as the integer 42).
_DECIMAL = re.compile(r"(?<![0-9.])([1-9][0-9]{0,2}(?:,[0-9]{3})+|[0-9]*)\.([0-9]+)")


def exact_decimals(text: str) -> str:
    r"""``text`` with each decimal written as the fraction it denotes: "0.6666667" ->
    "(\frac{6666667}{10000000})".

    math-verify parses a decimal as a sympy Float and then compares it with the gold ROUNDED TO 6
    PLACES (math_verify/grader.py, ``sympy_numeric_eq``: ``a.round(float_rounding) ==
    b.round(float_rounding)``), so "0.6666667" passed for 2/3 and "1.414214" for \sqrt{2}. As a
    fraction, a decimal is compared exactly: "0.5" still equals 1/2, "42.0" still equals 42.
    """

    def as_fraction(match: re.Match[str]) -> str:
        digits = (match.group(1).replace(",", "") + match.group(2)).lstrip("0") or "0"
        return f"(\\frac{{{digits}}}{{1{'0' * len(match.group(2))}}})"

    return _DECIMAL.sub(as_fraction, text)


def _has_math(parsed: list[Any]) -> bool:
    """Whether ``parse`` found an expression, not just its raw-string fallback.

    ``parse(..., fallback_mode="first_match")`` (the default) returns the unparsed text as a str
    when nothing parses, e.g. ``parse("$)))$") == [")))"]``.
    """
    return any(not isinstance(item, str) for item in parsed)


def judge(gold: str, answer: str, tolerance: float | None = None) -> Judgement:
    """Compare ``answer`` with ``gold`` by math-verify; runs in a worker process.

    Decimals are exact (``exact_decimals``); with a ``tolerance`` an answer that is not equal may
    still pass within it, when both sides are numbers (``within_tolerance``).

    math-verify's own timeouts are off (``parsing_timeout=None``, ``timeout_seconds=None``): the
    pool's SIGKILL at its deadline is the one clock, and SIGALRM could not stop C code anyway.
    math-verify catches every exception inside a comparison and reads it as "not equal"
    (math_verify/grader.py, ``except Exception`` around each strategy), so an answer that
    exhausts the worker's memory limit is judged wrong, like any other that cannot be shown equal.
    """
    gold_parsed = parse(as_math(exact_decimals(gold)), parsing_timeout=None)
    if not _has_math(gold_parsed):
        return "error", "unparseable", f"gold answer {clip(gold)!r} cannot be parsed; fix the row"
    answer_parsed = parse(as_math(exact_decimals(answer)), parsing_timeout=None)
    if not _has_math(answer_parsed):
        return "fail", "unparseable", f"no mathematical expression in answer {clip(answer)!r}"
    if verify(gold_parsed, answer_parsed, timeout_seconds=None):
        return "pass", "none", f"equivalent to {clip(gold)!r}"
    if tolerance is not None and within_tolerance(gold_parsed[0], answer_parsed[0], tolerance):
        return "pass", "none", f"within tolerance {tolerance:g} of {clip(gold)!r}"
    return "fail", "wrong_answer", f"expected {clip(gold)!r}, got {clip(answer)!r}"


def within_tolerance(gold: Any, answer: Any, tolerance: float) -> bool:
    """|answer - gold| <= tolerance * max(1, |gold|): absolute near 0, relative for large golds.

    Only two numbers are compared so (a set, an equation or an expression in x is not); sympy
    evaluates both to 30 digits.
    """
    if not (isinstance(gold, Basic) and isinstance(answer, Basic) and gold.is_number and answer.is_number):
        return False
    gap = Abs(answer - gold).evalf(30) - tolerance * Max(1, Abs(gold)).evalf(30)
    return bool(gap.is_nonpositive)
