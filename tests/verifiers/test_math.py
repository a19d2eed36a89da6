"""MathVerifier: exact integers in-process; math-verify in real worker processes (no mocks).

Choices pinned here: integers compare by value ("042", "+7" and " 42 " equal 42, as math-verify
itself judges them, so the fast path and the slow path agree); "1e3" and "0x10" are not plain
integers and go to math-verify.
"""

import os
import threading
from collections.abc import Iterator

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.math import MathVerifier, normalize_integer

PATHOLOGICAL = "9^{9^{9^{9}}}"
"""sympy tries to evaluate the tower: math-verify does not return within minutes."""


def row(gold: object, **criteria: object) -> Query:
    return Query("q1", "What is it?", {"type": "math", "answer": gold, **criteria})


def answered(text: str) -> str:
    return f"<think>working</think><answer>{text}</answer>"


@pytest.fixture(scope="module")
def verifier() -> Iterator[MathVerifier]:
    with MathVerifier(timeout_s=1.0) as shared:
        yield shared


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("7", "7"), ("+7", "7"), (" 42 ", "42"), ("042", "42"), ("-0", "0"), ("-12", "-12"),
     ("1e3", None), ("0x10", None), ("1_000", None), ("٤٢", None), ("4 2", None), ("", None),
     ("- 7", None), ("3.0", None)],
)  # fmt: skip
def test_normalize_integer(text: str, canonical: str | None) -> None:
    assert normalize_integer(text) == canonical


@pytest.mark.parametrize(
    ("gold", "answer", "verdict", "error_class"),
    [
        ("42", "42", Verdict.PASS, ErrorClass.NONE),
        ("42", "41", Verdict.FAIL, ErrorClass.WRONG_ANSWER),
        ("7", "+7", Verdict.PASS, ErrorClass.NONE),
        ("42", " 42 ", Verdict.PASS, ErrorClass.NONE),
        ("42", "042", Verdict.PASS, ErrorClass.NONE),
        (42, "42", Verdict.PASS, ErrorClass.NONE),  # a JSON integer gold
        ("-5", "5", Verdict.FAIL, ErrorClass.WRONG_ANSWER),
        ("1" + "0" * 5000, "1" + "0" * 5000, Verdict.PASS, ErrorClass.NONE),  # past int() limit
    ],
)
def test_integer_answers_are_judged_without_workers(
    gold: object, answer: str, verdict: Verdict, error_class: ErrorClass
) -> None:
    fresh = MathVerifier()
    result = fresh.verify(row(gold), answered(answer))
    assert (result.verdict, result.error_class) == (verdict, error_class)
    assert result.score == (1.0 if verdict is Verdict.PASS else 0.0)
    assert result.elapsed_s > 0
    assert not fresh.pool.started  # integers never start a process


@pytest.mark.parametrize(
    ("completion", "detail"),
    [("The answer is 42.", "no <answer>"), ("<answer>  </answer>", "empty"), ("<answer>42", "no")],
)
def test_missing_answer_is_no_answer(completion: str, detail: str) -> None:
    result = MathVerifier().verify(row("42"), completion)
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.NO_ANSWER)
    assert result.score == 0.0
    assert detail in result.detail


def test_last_answer_wins() -> None:
    revised = "<answer>1</answer> wait, no: <answer>2</answer>"
    assert MathVerifier().verify(row("2"), revised).verdict is Verdict.PASS
    assert MathVerifier().verify(row("1"), revised).verdict is Verdict.FAIL


@pytest.mark.parametrize(
    "criteria",
    [{"type": "math"}, {"type": "math", "answer": ""}, {"type": "math", "answer": True},
     {"type": "math", "answer": "1", "lenient": "yes"}],
)  # fmt: skip
def test_bad_criteria_is_an_error_not_a_fail(criteria: dict) -> None:
    result = MathVerifier().verify(Query("bad-row", "p", criteria), answered("1"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)
    assert not result.scorable and "bad-row" in result.detail


@pytest.mark.parametrize(
    ("gold", "answer", "verdict", "error_class"),
    [
        ("\\frac{1}{2}", "0.5", Verdict.PASS, ErrorClass.NONE),
        ("\\frac{1}{2}", "1/2", Verdict.PASS, ErrorClass.NONE),
        ("0.5", "\\dfrac{1}{2}", Verdict.PASS, ErrorClass.NONE),
        ("\\frac{1}{2}", "0.3", Verdict.FAIL, ErrorClass.WRONG_ANSWER),
        ("1000", "1e3", Verdict.FAIL, ErrorClass.WRONG_ANSWER),  # LaTeX reads "1e3" as 1*e*3
        ("\\sqrt{2}", "2^{1/2}", Verdict.PASS, ErrorClass.NONE),
        ("\\{1,2\\}", "\\{2,1\\}", Verdict.PASS, ErrorClass.NONE),  # sets ignore order
        ("\\{1,2\\}", "\\{1,3\\}", Verdict.FAIL, ErrorClass.WRONG_ANSWER),
        ("[0,1)", "[0, 1)", Verdict.PASS, ErrorClass.NONE),  # intervals
        ("(0,1)", "[0,1]", Verdict.FAIL, ErrorClass.WRONG_ANSWER),  # open is not closed
        ("x+1", "1+x", Verdict.PASS, ErrorClass.NONE),
        ("\\frac{1}{2}", ")))", Verdict.FAIL, ErrorClass.UNPARSEABLE),
        ("((", "1/2", Verdict.ERROR, ErrorClass.UNPARSEABLE),  # the dataset row is broken
    ],
)
def test_math_verify_path(
    verifier: MathVerifier, gold: str, answer: str, verdict: Verdict, error_class: ErrorClass
) -> None:
    result = verifier.verify(row(gold), answered(answer))
    assert (result.verdict, result.error_class) == (verdict, error_class), result.detail
    assert result.score == (1.0 if verdict is Verdict.PASS else 0.0)


def test_pathological_answer_times_out_and_pool_stays_usable(verifier: MathVerifier) -> None:
    items = [
        (row("1"), answered(PATHOLOGICAL)),
        (row("\\frac{1}{2}"), answered("0.5")),
        (row("3"), answered("3")),  # integer, judged in-process, between pool jobs
        (row("\\sqrt{8}"), answered("2\\sqrt{2}")),
    ]
    results = verifier.verify_batch(items)
    timed_out = results[0]
    assert (timed_out.verdict, timed_out.error_class) == (Verdict.FAIL, ErrorClass.TIMEOUT)
    assert timed_out.score == 0.0
    assert "timed out" in timed_out.detail and timed_out.elapsed_s >= 1.0
    assert [r.verdict for r in results[1:]] == [Verdict.PASS] * 3  # the other worker served them
    assert verifier.verify(row("\\frac{2}{3}"), answered("4/6")).verdict is Verdict.PASS


def test_worker_crash_is_infrastructure_error_never_a_zero() -> None:
    with MathVerifier(timeout_s=30, pool_size=1) as crashing:
        crashing.pool.start()
        (pid,) = crashing.pool.pids()
        # SIGKILL the worker while it grinds on the tower, as the OOM killer would.
        threading.Timer(0.5, os.kill, (pid, 9)).start()
        result = crashing.verify(row("1"), answered(PATHOLOGICAL))
        assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)
        assert not result.scorable and "SIGKILL" in result.detail
        assert crashing.verify(row("\\frac{1}{2}"), answered("0.5")).verdict is Verdict.PASS


@pytest.fixture(scope="module")
def patient() -> Iterator[MathVerifier]:
    """A 10 s budget: these tests pin what math-verify decides, not how fast (2 cores are shared)."""
    with MathVerifier(timeout_s=10.0) as shared:
        yield shared


@pytest.mark.parametrize(
    ("gold", "answer", "verdict"),
    [
        ("\\{1,2,3\\}", "\\{3,2,1\\}", Verdict.PASS),
        ("\\{1,2,3\\}", "\\{1,2\\}", Verdict.FAIL),  # a missing element
        ("\\{1,2\\}", "{1, 2}", Verdict.PASS),  # braces without backslashes
        ("[1,2]", "\\{1,2\\}", Verdict.FAIL),  # an interval is not the set of its endpoints
        ("(-\\infty, 2]", "(-\\infty,2]", Verdict.PASS),
        ("[0, 1)", "[0,1]", Verdict.FAIL),  # half-open is not closed
        ("[0,1) \\cup (2,3]", "(2,3]\\cup[0,1)", Verdict.PASS),  # unions in any order
        ("[0,1) \\cup (2,3]", "[0,1)\\cup[2,3]", Verdict.FAIL),
        ("\\frac{1}{2}", "2/4", Verdict.PASS),  # unreduced fraction
        ("\\frac{2}{3}", "0.67", Verdict.FAIL),  # rounded decimals are not the fraction
        ("\\frac{1}{3}", "0.333", Verdict.FAIL),
        ("x^2-1", "(x-1)(x+1)", Verdict.PASS),  # symbolic equivalence
        ("x^2-1", "(x-1)^2", Verdict.FAIL),
        ("\\sin^2 x + \\cos^2 x", "1", Verdict.PASS),
        ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", Verdict.PASS),
        ("2", "x=2", Verdict.PASS),  # math-verify reads the right-hand side of an equation
        ("1,2", "2,1", Verdict.PASS),  # a bare comma list is compared as a set
    ],
)
def test_sets_intervals_fractions_and_symbolic_equivalence(
    patient: MathVerifier, gold: str, answer: str, verdict: Verdict
) -> None:
    """What math-verify already decides; pinned so that a math-verify upgrade that changes it shows."""
    result = patient.verify(row(gold), answered(answer))
    assert result.verdict is verdict, (gold, answer, result.detail)
