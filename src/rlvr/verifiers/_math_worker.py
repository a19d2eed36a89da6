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
from sympy import Abs, Basic, E, I, Max, Symbol, exp, srepr
from sympy.core.function import AppliedUndef

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
    still pass within it, when both sides are numbers (``within_tolerance``). An answer that would
    pass must also have been read whole (``dropped_value``): a value that math-verify drops is a
    second value the comparison never saw, and the answer is not one value (``bad_format``).

    math-verify's own timeouts are off (``parsing_timeout=None``, ``timeout_seconds=None``): the
    pool's SIGKILL at its deadline is the one clock, and SIGALRM could not stop C code anyway.
    math-verify catches every exception inside a comparison and reads it as "not equal"
    (math_verify/grader.py, ``except Exception`` around each strategy), so an answer that
    exhausts the worker's memory limit is judged wrong, like any other that cannot be shown equal.
    """
    gold_parsed = _parse(gold)
    if not _has_math(gold_parsed):
        return "error", "unparseable", f"gold answer {clip(gold)!r} cannot be parsed; fix the row"
    answer_parsed = _parse(answer)
    if not _has_math(answer_parsed):
        return "fail", "unparseable", f"no mathematical expression in answer {clip(answer)!r}"
    if verify(gold_parsed, answer_parsed, timeout_seconds=None):
        passed = f"equivalent to {clip(gold)!r}"
    elif tolerance is not None and within_tolerance(gold_parsed[0], answer_parsed[0], tolerance):
        passed = f"within tolerance {tolerance:g} of {clip(gold)!r}"
    else:
        return "fail", "wrong_answer", f"expected {clip(gold)!r}, got {clip(answer)!r}"
    hidden = dropped_value(answer, answer_parsed)  # only a pass needs it: one parse per value
    if hidden:
        detail = f"answer is not one value: {hidden!r} is a value math-verify drops ({DROPPED_WHERE})"
        return "fail", "bad_format", detail
    unread = dropped_symbol(answer, answer_parsed)
    if unread:
        return "fail", "unparseable", f"math-verify reads the answer only in part: it drops the symbol {unread!r}"
    return "pass", "none", passed


def _parse(text: str) -> list[Any]:
    return parse(as_math(exact_decimals(text)), parsing_timeout=None)


# A value: a number literal, or a constant. Letters are not counted: a word in \text{} is prose
# ("cm", "square units"), and no rule tells it from a variable.
_VALUE = re.compile(r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+|\\(?:pi|infty)(?![A-Za-z])")
_UNIT_POWER = re.compile(r"\\(?:text|mbox|mathrm|textrm|textnormal)\s*\{[A-Za-z .]*\}\s*\^\s*\{?\s*\Z")
DROPPED_WHERE = "in \\text{}, a subscript, an evaluation bar, \\tag{} or the like"


def dropped_value(text: str, parsed: list[Any]) -> str | None:
    r"""The first value in ``text`` that math-verify's reading of it does not depend on, or None.

    A value is read when changing it changes what math-verify parses: each number literal in turn
    has every digit shifted by 5 ("43" -> "98", "2.5" -> "7.0") and each ``\pi``/``\infty`` is
    replaced by ``\sqrt{7}``, and the text is parsed again. Where the parse is the same, the value
    was dropped: ``42 \text{ (approximately 43)}``, ``\left. 42 \right|_{43}``, ``{42}^{1}_{43}``,
    ``42 \tag{43}`` all parse as 42 whatever the 43. This asks the parser itself, so it holds for
    every construct math-verify drops, named here or not. A square or cube of a unit
    (``15\text{ cm}^2``) is no second value and is not counted.
    """
    reading = _reading(parsed)
    for match in _VALUE.finditer(text):
        value = match.group()
        if value in ("2", "3") and _UNIT_POWER.search(text[: match.start()]):
            continue
        changed = text[: match.start()] + _shifted(value) + text[match.end() :]
        if _reading(_parse(changed)) == reading:
            return value
    return None


# Arguments that are prose or names, not symbols: "\\text{ m}", "\\mathbb{R}", "\\begin{pmatrix}".
_NAMING_ARGUMENT = re.compile(
    r"\\(?:text[a-z]*|mbox|mathrm|mathbb|mathcal|mathfrak|mathbf|mathit|mathsf|mathtt|boldsymbol|"
    r"operatorname|begin|end)\s*\{[^{}]*\}"
)
_LETTER = re.compile(r"(?<![A-Za-z\\])[A-Za-z](?![A-Za-z])|(?<=\^)[A-Za-z]")
"""A letter alone, or the first after ``^`` (``42^ee`` is 42^e times e)."""


def dropped_symbol(text: str, parsed: list[Any]) -> str | None:
    r"""A one-letter symbol of ``text`` that names nothing math-verify read, or None.

    math-verify read ``42^e`` and ``42x\%`` as 42. Letters in prose or names (``\text{ m}``,
    ``\mathbb{R}``), left of the first ``=`` (an assigned name, which math-verify drops on
    purpose) and a last letter after a space (a unit: ``42 m``) are not symbols here; multi-letter
    words (``28 pct``) neither.
    """
    expressions = [item for item in parsed if isinstance(item, Basic)]
    if not expressions:
        return None
    read = set()
    for expression in expressions:
        read |= {c.lower() for symbol in expression.atoms(Symbol) for c in str(symbol) if c.isalpha()}
        read |= {c.lower() for f in expression.atoms(AppliedUndef) for c in str(f.func) if c.isalpha()}
        read |= {name for name, constant in (("e", E), ("i", I)) if expression.has(constant)}
        read |= {"e"} if expression.atoms(exp) else set()  # e^{2} is exp(2), which holds no E
    math = _NAMING_ARGUMENT.sub(" ", text).split("=", 1)[-1]
    for match in _LETTER.finditer(math):
        unit = match.start() > 0 and math[match.start() - 1].isspace() and not math[match.end() :].strip(" .")
        if match.group().lower() not in read and not unit:
            return match.group()
    return None


def _shifted(value: str) -> str:
    if value.startswith("\\"):
        return "\\sqrt{7}"
    return "".join(str((int(c) + 5) % 10) if c.isdigit() else c for c in value)


def _reading(parsed: list[Any]) -> tuple[str, ...]:
    """What math-verify read, comparable across parses: the expressions, not the extracted strings."""
    return tuple(srepr(item) for item in parsed if not isinstance(item, str))


def within_tolerance(gold: Any, answer: Any, tolerance: float) -> bool:
    """|answer - gold| <= tolerance * max(1, |gold|): absolute near 0, relative for large golds.

    Only two numbers are compared so (a set, an equation or an expression in x is not); sympy
    evaluates both to 30 digits.
    """
    if not (isinstance(gold, Basic) and isinstance(answer, Basic) and gold.is_number and answer.is_number):
        return False
    gap = Abs(answer - gold).evalf(30) - tolerance * Max(1, Abs(gold)).evalf(30)
    return bool(gap.is_nonpositive)
