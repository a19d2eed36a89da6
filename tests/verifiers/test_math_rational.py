"""The exact-rational fast path of the math verifier: same verdicts as math-verify, no worker.

Decimals are rationals too: "0.5" is exactly 1/2, "0.6666667" is 6666667/10^7 and not 2/3.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.math import MathVerifier, exact_rational


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3/4", Fraction(3, 4)),
        (" - 3 / 6 ", Fraction(-1, 2)),
        ("\\frac{6}{8}", Fraction(3, 4)),
        ("-\\dfrac{1}{2}", Fraction(-1, 2)),
        ("\\tfrac{-2}{4}", Fraction(-1, 2)),
        ("+007", Fraction(7)),
        ("0.5", Fraction(1, 2)),
        ("-.25", Fraction(-1, 4)),
        ("42.", Fraction(42)),
        ("42.0", Fraction(42)),
        ("0.6666667", Fraction(6666667, 10_000_000)),  # not 2/3: the difference is 1/30,000,000
    ],
)
def test_rationals_are_read_exactly(text: str, value: Fraction) -> None:
    assert exact_rational(text) == value


@pytest.mark.parametrize(
    "text",
    ["1/0", ".", "1.2.3", "1e3", "\\frac{a}{b}", "\\sqrt{2}", "1/2/3", "\\frac{1}{2}x", "1" * 101, "0." + "3" * 101],
)
def test_anything_else_is_left_to_math_verify(text: str) -> None:
    assert exact_rational(text) is None


def test_fractions_are_judged_in_process_with_math_verify_semantics() -> None:
    verifier = MathVerifier()
    try:
        half = Query("half", "", {"type": "math", "answer": "\\frac{1}{2}"})
        same = [verifier.verify(half, f"<answer>{a}</answer>") for a in ("2/4", "\\dfrac{3}{6}")]
        assert all(r.verdict is Verdict.PASS and "exact rational" in r.detail for r in same)
        wrong = verifier.verify(half, "<answer>1/3</answer>")
        assert wrong.verdict is Verdict.FAIL and wrong.error_class is ErrorClass.WRONG_ANSWER
        assert not verifier.pool.started  # judged without a math-verify worker
        decimal = verifier.verify(half, "<answer>0.5</answer>")  # 5/10, exactly
        assert decimal.verdict is Verdict.PASS and "exact rational" in decimal.detail
        assert not verifier.pool.started
        symbolic = verifier.verify(half, "<answer>\\sqrt{\\frac{1}{4}}</answer>")  # not a rational literal: math-verify
        assert symbolic.verdict is Verdict.PASS and "exact rational" not in symbolic.detail
    finally:
        verifier.close()
