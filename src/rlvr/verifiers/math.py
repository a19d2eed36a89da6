"""Math answers: exact integers in-process, everything else by math-verify in worker processes.

Rows look like ``{"type": "math", "answer": "\\frac{1}{2}"}``; the completion's last
``<answer>…</answer>`` is compared with ``answer``.

Gold and answer are first spelled one way (``math_normal.canonical``: ``\\( 9 \\)`` is ``$ 9 $``,
``32,\\! 349`` is 32349, ``\\$10`` is 10, ``1e3`` is 1000, ``x <= 3`` is ``x \\le 3``); an answer
that is then the gold's own text passes. Otherwise the answer must be ONE value
(``math_form.one_value``): a disjunction, a list, a chain, a relation or a case list is a
``bad_format`` fail, and junk that math-verify would read only in part ("42@43", "42-") an
``unparseable`` fail, before anything compares it: math-verify would keep one element and pass a
hedge. An answer math-verify would pass must also have been read whole: a value it drops
(``42 \\text{ (approximately 43)}``) is a second value and a ``bad_format`` fail
(``_math_worker.dropped_value``).

Plain integers (the bulk of synthetic arithmetic) are compared here, in microseconds, by value:
"042", "+42" and " 42 " all equal "42", as math-verify would also judge them, so the verdict does
not depend on which path ran. Fractions of integers ("3/4", "\\frac{6}{8}", "-\\dfrac{1}{2}") and
decimals ("0.5") are compared here too, as exact rationals (``exact_rational``): a rounded decimal
is not the fraction it rounds, unless the row sets a ``tolerance``. Anything else goes to
math-verify (sympy underneath) in a ``WorkerPool`` with a hard wall-clock timeout, because a
pathological answer can keep sympy busy for minutes and math-verify's own SIGALRM timeout breaks
outside the main thread (DESIGN.md, "Real parts").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import answer_or_fail, parse_criteria
from rlvr.verifiers.math_form import Rejection, gold_value, one_value, unwrap
from rlvr.verifiers.math_normal import canonical, same_text
from rlvr.verifiers.pooled import PooledVerifier, WorkerSettings

MATH_JOB = "rlvr.verifiers._math_worker:judge"
"""By name, so that the trainer's process never imports math-verify/sympy."""

WARMUP = ("\\sin^2 x + \\cos^2 x", "(x-1)(x+1) - x^2 + 2")
"""A first comparison, off the job clock, that loads math-verify's LaTeX grammar AND sympy's
simplification (trig and polynomial): without it a fresh worker's first symbolic check took
1.5-2 s and could hit the 2 s timeout (docs/verifiers.md, "math")."""

# ASCII digits only: \d would also take "٤٢", and int() would take "1_000"; neither is a plain
# integer. "1e3" and "0x10" do not match and go to math-verify.
_INTEGER = re.compile(r"\s*([+-]?)0*(\d+)\s*", re.ASCII)


def normalize_integer(text: str) -> str | None:
    """Canonical form of a plain integer ("+007 " -> "7", "-0" -> "0"); None if not one.

    Compares digit strings rather than ``int()`` values, so a 5,000-digit answer does not trip
    Python's int/str conversion limit (``sys.set_int_max_str_digits``).
    """
    match = _INTEGER.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    return digits if sign != "-" or digits == "0" else "-" + digits


_INT = r"[+-]?\d{1,100}"
_RATIONAL = re.compile(
    rf"\s*([+-]?)\s*(?:({_INT})\s*/\s*({_INT})|\\[dt]?frac\{{\s*({_INT})\s*\}}\{{\s*({_INT})\s*\}})\s*", re.ASCII
)
_DECIMAL = re.compile(r"\s*([+-]?)(\d{0,100})\.(\d{0,100})\s*", re.ASCII)


def exact_rational(text: str) -> Fraction | None:
    r"""The value of a plain integer, a fraction of integers ("3/4", "-\frac{6}{8}", "\dfrac{1}{2}")
    or a decimal ("0.5", "-.25", "42."), exactly; None for anything else (surds, sets: math-verify
    judges those)."""
    integer = normalize_integer(text)
    if integer is not None:
        return Fraction(int(integer)) if len(integer) <= 100 else None
    decimal = _DECIMAL.fullmatch(text)
    if decimal is not None and any(decimal.group(2, 3)):
        sign, whole, decimals = decimal.groups()
        value = Fraction(int(whole or "0")) + Fraction(int(decimals or "0"), 10 ** len(decimals))
        return -value if sign == "-" else value
    match = _RATIONAL.fullmatch(text)
    if match is None:
        return None
    sign, slash_num, slash_den, frac_num, frac_den = match.groups()
    numerator, denominator = int(slash_num or frac_num), int(slash_den or frac_den)
    if denominator == 0:
        return None
    return -Fraction(numerator, denominator) if sign == "-" else Fraction(numerator, denominator)


def within_tolerance(gold: Fraction, answer: Fraction, tolerance: float) -> bool:
    """|answer - gold| <= tolerance * max(1, |gold|): absolute near 0, relative for large golds."""
    return abs(answer - gold) <= Fraction(tolerance) * max(1, abs(gold))


@dataclass(frozen=True)
class MathCriteria:
    """The ``verifier`` object of a math row."""

    answer: str
    lenient: bool = False
    """Reserved for a looser comparison mode; accepted and validated, not used yet."""
    tolerance: float | None = None
    """``"tolerance": 1e-6``: a number within ``tolerance * max(1, |gold|)`` of the gold passes
    (absolute near 0, relative beyond 1); absent: exact values only, so 0.6666667 is not 2/3."""

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> MathCriteria:
        """Validated criteria; a ValueError says which key is wrong."""
        answer = criteria.get("answer")
        # bool is an int subclass: true/false in a JSON row is a mistake, not the answer 1/0.
        if isinstance(answer, int) and not isinstance(answer, bool):
            answer = str(answer)
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(f'"answer" must be a non-empty string or an integer, got {answer!r}')
        lenient = criteria.get("lenient", False)
        if not isinstance(lenient, bool):
            raise ValueError(f'"lenient" must be true or false, got {lenient!r}')
        tolerance = criteria.get("tolerance")
        if tolerance is not None and (
            isinstance(tolerance, bool)
            or not isinstance(tolerance, (int, float))
            or not math.isfinite(tolerance)
            or tolerance < 0
        ):
            raise ValueError(
                f'"tolerance" must be a finite number >= 0 such as 1e-6, or absent for exact answers; got {tolerance!r}'
            )
        return cls(answer=answer.strip(), lenient=lenient, tolerance=None if tolerance is None else float(tolerance))


def _result(verdict: Verdict, error_class: ErrorClass, detail: str) -> VerifierResult:
    score = 1.0 if verdict is Verdict.PASS else 0.0
    return VerifierResult(verdict, score, error_class, detail)


class MathVerifier(PooledVerifier):
    """Verifier for ``{"type": "math", "answer": ...}`` rows.

    Worker processes start on the first non-integer answer, not before. ``close()`` (or ``with``)
    stops them; they are also stopped at interpreter exit.
    """

    name = "math"
    job = MATH_JOB
    warmup = WARMUP
    default_workers = WorkerSettings(kill_after_s=2.0, memory_limit_mb=4096)
    outcome_words = ("math-verify timed out", "math-verify worker failed", "math-verify failed on this answer")

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[str, str, float | None]:
        """Integers and fractions are judged here, at once: a result when no worker is needed,
        else the (gold, answer, tolerance) job for math-verify, which runs ``pool_size`` at a time."""
        criteria = parse_criteria(query, MathCriteria.from_dict, "math")
        if isinstance(criteria, VerifierResult):
            return criteria
        answer = answer_or_fail(completion)
        if isinstance(answer, VerifierResult):
            return answer
        exact = _exact_verdict(criteria.answer, answer, criteria.tolerance)  # plain numbers: no rewriting
        if exact is not None:
            return exact
        gold = _gold_value(criteria.answer)
        text = canonical(answer, gold)
        if same_text(answer, criteria.answer) or same_text(unwrap(text), gold):
            return _result(Verdict.PASS, ErrorClass.NONE, f"the gold itself: {clip(gold)!r}")
        # Before any comparison, so that a hedge never reaches math-verify; a plain number is one value.
        value = text if exact_rational(text) is not None else one_value(answer, gold)
        if isinstance(value, Rejection):
            return _result(Verdict.FAIL, ErrorClass(value.error_class), f"{value.detail}: {clip(answer)!r}")
        if same_text(value, gold):  # "\boxed{GOLD}": the gold itself, whether math-verify reads it or not
            return _result(Verdict.PASS, ErrorClass.NONE, f"the gold itself: {clip(gold)!r}")
        return _exact_verdict(gold, value, criteria.tolerance) or (gold, value, criteria.tolerance)

    def _from_value(self, query: Query, value: Any) -> VerifierResult:
        verdict, error_class, detail = value
        return _result(Verdict(verdict), ErrorClass(error_class), detail)


_gold_value = lru_cache(maxsize=1024)(gold_value)
"""A row's gold is read once, not once per sample of its group."""


def _exact_verdict(gold: str, answer: str, tolerance: float | None) -> VerifierResult | None:
    """The verdict on two plain numbers (integers, fractions of integers, decimals), or None."""
    gold_int, answer_int = normalize_integer(gold), normalize_integer(answer)
    if gold_int is not None and answer_int is not None:
        if gold_int == answer_int:
            return _result(Verdict.PASS, ErrorClass.NONE, f"integer {clip(gold_int)}")
        if tolerance is None:
            detail = f"expected integer {clip(gold_int)}, got {clip(answer_int)}"
            return _result(Verdict.FAIL, ErrorClass.WRONG_ANSWER, detail)
    exact_gold, exact_answer = exact_rational(gold), exact_rational(answer)
    if exact_gold is None or exact_answer is None:
        return None
    return _compare_rationals(gold, answer, exact_gold, exact_answer, tolerance)


def _compare_rationals(
    gold: str, answer: str, gold_value: Fraction, answer_value: Fraction, tolerance: float | None
) -> VerifierResult:
    """The verdict on two exact rationals, the same as math-verify's on the same texts."""
    if gold_value == answer_value:
        return _result(Verdict.PASS, ErrorClass.NONE, f"equal to {clip(gold)!r} (exact rational)")
    if tolerance is not None and within_tolerance(gold_value, answer_value, tolerance):
        return _result(Verdict.PASS, ErrorClass.NONE, f"within tolerance {tolerance:g} of {clip(gold)!r}")
    detail = f"expected {clip(gold)!r}, got {clip(answer)!r} (exact rationals"
    if "." in answer and tolerance is None:
        detail += '; a rounded decimal is not the exact value, unless the row sets "tolerance"'
    return _result(Verdict.FAIL, ErrorClass.WRONG_ANSWER, detail + ")")
