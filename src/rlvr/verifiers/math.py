"""Math answers: exact integers in-process, everything else by math-verify in worker processes.

Rows look like ``{"type": "math", "answer": "\\frac{1}{2}"}``; the completion's last
``<answer>…</answer>`` is compared with ``answer``.

Plain integers (the bulk of synthetic arithmetic) are compared here, in microseconds, by value:
"042", "+42" and " 42 " all equal "42", as math-verify would also judge them, so the verdict does
not depend on which path ran. Fractions of integers ("3/4", "\\frac{6}{8}", "-\\dfrac{1}{2}") are
compared here too, as exact rationals (``exact_rational``). Anything else goes to math-verify (sympy underneath) in a
``WorkerPool`` with a hard wall-clock timeout, because a pathological answer can keep sympy busy
for minutes and math-verify's own SIGALRM timeout breaks outside the main thread (DESIGN.md,
"Real parts").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import BaseVerifier, extract_answer, judge_in_workers
from rlvr.verifiers.pool import JobOutcome, StartMethod, WorkerPool

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
_RATIONAL = re.compile(rf"\s*([+-]?)\s*(?:({_INT})\s*/\s*({_INT})|\\[dt]?frac\{{\s*({_INT})\s*\}}\{{\s*({_INT})\s*\}})\s*",
                       re.ASCII)


def exact_rational(text: str) -> Fraction | None:
    r"""The value of a plain integer or a fraction of integers ("3/4", "-rac{6}{8}", "\dfrac{1}{2}"),
    exactly; None for anything else (decimals, surds, sets: math-verify judges those)."""
    integer = normalize_integer(text)
    if integer is not None:
        return Fraction(int(integer)) if len(integer) <= 100 else None
    match = _RATIONAL.fullmatch(text)
    if match is None:
        return None
    sign, slash_num, slash_den, frac_num, frac_den = match.groups()
    numerator, denominator = int(slash_num or frac_num), int(slash_den or frac_den)
    if denominator == 0:
        return None
    return -Fraction(numerator, denominator) if sign == "-" else Fraction(numerator, denominator)


@dataclass(frozen=True)
class MathCriteria:
    """The ``verifier`` object of a math row."""

    answer: str
    lenient: bool = False
    """Reserved for a looser comparison mode; accepted and validated, not used yet."""

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
        return cls(answer=answer.strip(), lenient=lenient)


def _result(verdict: Verdict, error_class: ErrorClass, detail: str) -> VerifierResult:
    score = 1.0 if verdict is Verdict.PASS else 0.0
    return VerifierResult(verdict, score, error_class, detail)


class MathVerifier(BaseVerifier):
    """Verifier for ``{"type": "math", "answer": ...}`` rows.

    Worker processes start on the first non-integer answer, not before. ``close()`` (or ``with``)
    stops them; they are also stopped at interpreter exit.
    """

    name = "math"

    def __init__(
        self,
        *,
        timeout_s: float = 2.0,
        pool_size: int = 2,
        start_method: StartMethod = "forkserver",
        memory_limit_mb: int | None = 4096,
    ) -> None:
        self.pool = WorkerPool(
            MATH_JOB,
            size=pool_size,
            timeout_s=timeout_s,
            start_method=start_method,
            memory_limit_mb=memory_limit_mb,
            warmup=WARMUP,
        )

    def verify(self, query: Query, completion: str) -> VerifierResult:
        return self.verify_batch([(query, completion)])[0]

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        """Integers and fractions are judged at once; the rest run ``pool_size`` at a time in the workers."""
        return judge_in_workers(items, self._judge_in_process, self.pool.run_batch,
                                lambda query, outcome: _from_outcome(outcome))

    def _judge_in_process(self, query: Query, completion: str) -> VerifierResult | tuple[str, str]:
        """A result when no worker is needed, else the (gold, answer) job for math-verify."""
        try:
            criteria = MathCriteria.from_dict(query.verifier)
        except ValueError as error:
            detail = f"query {query.id!r} has bad math criteria: {error}"
            return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
        answer = extract_answer(completion)
        if answer is None:
            detail = "no <answer>...</answer> in completion"
            return _result(Verdict.FAIL, ErrorClass.NO_ANSWER, detail)
        if not answer:
            return _result(Verdict.FAIL, ErrorClass.NO_ANSWER, "<answer> is empty")
        gold_int, answer_int = normalize_integer(criteria.answer), normalize_integer(answer)
        if gold_int is None or answer_int is None:
            gold_value, answer_value = exact_rational(criteria.answer), exact_rational(answer)
            if gold_value is None or answer_value is None:
                return criteria.answer, answer
            if gold_value == answer_value:  # the same rational number, as sympy would also find
                return _result(Verdict.PASS, ErrorClass.NONE, f"equal to {clip(criteria.answer)!r} (exact rational)")
            detail = f"expected {clip(criteria.answer)!r}, got {clip(answer)!r} (exact rationals)"
            return _result(Verdict.FAIL, ErrorClass.WRONG_ANSWER, detail)
        if gold_int == answer_int:
            return _result(Verdict.PASS, ErrorClass.NONE, f"integer {clip(gold_int)}")
        detail = f"expected integer {clip(gold_int)}, got {clip(answer_int)}"
        return _result(Verdict.FAIL, ErrorClass.WRONG_ANSWER, detail)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _from_outcome(outcome: JobOutcome) -> VerifierResult:
    """A worker's outcome as a result: a timeout is the answer's fault, a crash is ours."""
    if outcome.status == "ok":
        verdict, error_class, detail = outcome.value
        result = _result(Verdict(verdict), ErrorClass(error_class), detail)
    elif outcome.status == "timeout":
        detail = f"math-verify timed out: {outcome.detail}"
        result = _result(Verdict.FAIL, ErrorClass.TIMEOUT, detail)
    else:  # "crashed" or "raised": the verifier broke, the answer was not judged
        detail = f"math-verify worker failed: {outcome.detail}"
        result = VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
    result.elapsed_s = outcome.elapsed_s
    return result
