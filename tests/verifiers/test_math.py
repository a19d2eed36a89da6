"""MathVerifier: exact integers in-process; math-verify in real worker processes (no mocks).

Choices pinned here: integers compare by value ("042", "+7" and " 42 " equal 42, as math-verify
itself judges them, so the fast path and the slow path agree); "1e3" is E-notation, 1000, and
"0x10" is not a plain integer and goes to math-verify. Every value of an answer counts: one the
parser drops is a second value (``HIDDEN_VALUE``), and the forms readers write elsewhere pass
(``HONEST_FORMS``; the full corpus is test_math_corpus.py).
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
    with MathVerifier(kill_after_s=1.0) as shared:
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
     {"type": "math", "answer": "1", "lenient": "yes"}, {"type": "math", "answer": "1", "tolerance": -1e-6},
     {"type": "math", "answer": "1", "tolerance": "1e-6"}, {"type": "math", "answer": "1", "tolerance": True},
     {"type": "math", "answer": "1", "tolerance": float("nan")}],
)  # fmt: skip
def test_bad_criteria_is_an_error_not_a_fail(criteria: dict) -> None:
    result = MathVerifier().verify(Query("bad-row", "p", criteria), answered("1"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA)
    assert not result.scorable and "bad-row" in result.detail


@pytest.mark.parametrize(
    ("gold", "answer", "verdict", "error_class"),
    [
        ("\\frac{1}{2}", "0.5", Verdict.PASS, ErrorClass.NONE),
        ("\\frac{1}{2}", "1/2", Verdict.PASS, ErrorClass.NONE),
        ("0.5", "\\dfrac{1}{2}", Verdict.PASS, ErrorClass.NONE),
        ("\\frac{1}{2}", "0.3", Verdict.FAIL, ErrorClass.WRONG_ANSWER),
        ("1000", "1e3", Verdict.PASS, ErrorClass.NONE),  # E-notation: 1 * 10^3, not 1 * e * 3
        ("1000", "1e4", Verdict.FAIL, ErrorClass.WRONG_ANSWER),
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
    with MathVerifier(kill_after_s=30, pool_size=1) as crashing:
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
    with MathVerifier(kill_after_s=10.0) as shared:
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


BAD_FORMAT, WRONG, UNPARSEABLE = ErrorClass.BAD_FORMAT, ErrorClass.WRONG_ANSWER, ErrorClass.UNPARSEABLE
SET = "\\{1, 2\\}"
NOT_ONE_VALUE = [
    # (gold, answer, error class, words of the detail). Most PASSED before the one-value check:
    # math-verify kept one disjunct, line, element or right-hand side, and rounded decimals to 6 places.
    ("42", "x = 43 \\lor x = 42", BAD_FORMAT, "disjunction"),
    ("42", "43 \\vee 42", BAD_FORMAT, "disjunction"),
    ("42", "43 \\text{ or } 42", BAD_FORMAT, "disjunction"),
    ("42", "42 or", BAD_FORMAT, "disjunction"),
    ("42", "x=43 \\land x=42", BAD_FORMAT, "conjunction"),
    ("42", "43 \\wedge 42", BAD_FORMAT, "conjunction"),
    ("42", "43 and 42", BAD_FORMAT, "conjunction"),
    ("42", "x = 43 = 42", BAD_FORMAT, "chain"),
    ("42", "x==42", BAD_FORMAT, "chain"),
    ("42", "43 = 42", BAD_FORMAT, "left side is not one symbol"),  # math-verify read the right side
    ("42", "x < 42", BAD_FORMAT, "relation"),
    ("42", "x \\le 42", BAD_FORMAT, "relation"),
    ("42", "42 \\ne x", BAD_FORMAT, "relation"),
    ("42", "\\approx 42", BAD_FORMAT, "relation"),
    ("42", "x \\to 42", BAD_FORMAT, "relation"),
    ("42", "\\lbrace 43, 42 \\rbrace", BAD_FORMAT, "a set"),
    ("42", "\\{43, 42\\}", BAD_FORMAT, "a set"),
    ("42", "43, 42", BAD_FORMAT, "commas"),
    ("42", "43; 42", BAD_FORMAT, "commas"),
    ("42", "\\begin{cases} 43 \\\\ 42 \\end{cases}", BAD_FORMAT, "case list"),
    ("42", "43 \\\\ 42", BAD_FORMAT, "line break"),
    ("42", "43\n42", BAD_FORMAT, "line break"),
    ("42", "40 2", BAD_FORMAT, "side by side"),  # math-verify added them: 40 + 2 = 42
    ("42", "43 \\dots 42", BAD_FORMAT, "ellipsis"),
    ("42", "42 \\pm 1", BAD_FORMAT, "\\pm"),
    ("42", "\\boxed{43} \\boxed{42}", BAD_FORMAT, "several \\boxed"),
    ("42", "43 \\boxed{42}", BAD_FORMAT, "outside \\boxed"),
    ("42", "42\\}", UNPARSEABLE, "unbalanced"),
    ("\\frac{2}{3}", "\\frac{2}{3} \\lor 0", BAD_FORMAT, "disjunction"),
    ("\\frac{2}{3}", "0 \\\\ \\frac{2}{3}", BAD_FORMAT, "line break"),
    ("\\frac{2}{3}", "0.6666667", WRONG, "rounded decimal"),  # 2/3 - 6666667/10^7 = -1/(3*10^7)
    ("\\frac{2}{3}", "0.666667", WRONG, "rounded decimal"),
    ("\\frac{2}{3}", "x = 0.6666667", WRONG, "rounded decimal"),
    (SET, "\\{1, 3\\} \\lor \\{1, 2\\}", BAD_FORMAT, "disjunction"),
    (SET, "\\{1, 3\\}, \\{1, 2\\}", BAD_FORMAT, "commas"),
    (SET, "\\{1, 3\\} \\\\ \\{1, 2\\}", BAD_FORMAT, "line break"),
    (SET, "\\begin{cases} \\{1, 3\\} \\\\ \\{1, 2\\} \\end{cases}", BAD_FORMAT, "case list"),
    (SET, "S = \\{1, 3\\} = \\{1, 2\\}", BAD_FORMAT, "chain"),
]


@pytest.mark.parametrize(("gold", "answer", "error_class", "why"), NOT_ONE_VALUE)
def test_an_answer_that_is_not_one_value_fails(gold: str, answer: str, error_class: ErrorClass, why: str) -> None:
    fresh = MathVerifier()
    result = fresh.verify(row(gold), answered(answer))
    assert (result.verdict, result.error_class, result.score) == (Verdict.FAIL, error_class, 0.0), result.detail
    assert why in result.detail
    assert not fresh.pool.started  # decided in-process: math-verify never saw it


def test_a_batch_of_hedges_never_reaches_math_verify() -> None:
    fresh = MathVerifier()
    results = fresh.verify_batch([(row(gold), answered(answer)) for gold, answer, _, _ in NOT_ONE_VALUE])
    assert [(r.verdict, r.error_class) for r in results] == [(Verdict.FAIL, c) for _, _, c, _ in NOT_ONE_VALUE]
    assert not fresh.pool.started


READ_IN_PART = [
    # (gold, answer): math-verify parsed up to what it could not read and dropped the rest, and passed.
    ("42", "42@43"), ("42", "42-"), ("42", "42é"), ("42", "42\x1b"), ("42", "43~42"),
    ("42", "42_43"), ("42", "42\\pi\\foo"), ("3", "42\\pi\\max 3"), ("42", "42\\8"),
]  # fmt: skip


@pytest.mark.parametrize(("gold", "answer"), READ_IN_PART)
def test_an_answer_math_verify_would_read_in_part_is_unparseable(gold: str, answer: str) -> None:
    fresh = MathVerifier()
    result = fresh.verify(row(gold), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE), result.detail
    assert not fresh.pool.started


@pytest.mark.parametrize(
    ("gold", "answer", "criteria"),
    [
        ("42", "42", {}),
        ("42", "x = 42", {}),  # the value right of "symbol =" is judged
        ("42", "\\theta_1 = 42", {}),
        ("42", "\\boxed{42}", {}),
        ("42", "The answer is $\\boxed{42}$.", {}),  # text without a number around one box
        ("42", "$42$", {}),
        ("42", "42.0", {}),
        ("42", "\\frac{84}{2}", {}),
        ("42", "42^\\circ", {}),
        ("1000", "1,000", {}),  # thousands separators: one number
        ("\\frac{1}{2}", "0.5", {}),  # a decimal that IS the fraction
        ("\\frac{1}{4}", "0.25", {}),
        ("\\frac14", "0.25", {}),
        ("\\frac{5}{2}", "2\\frac{1}{2}", {}),  # a mixed number is one value
        (SET, "\\{2, 1\\}", {}),  # a set gold admits a set, in any order
        (SET, "x \\in \\{2, 1\\}", {}),
        ("[0,1)", "[0, 1)", {}),  # an interval gold admits an interval
        ("[0,1) \\cup (2,3]", "(2,3] \\cup [0,1)", {}),
        ("(1,2)", "(x, y) = (1, 2)", {}),  # a tuple gold admits a tuple of symbols = a tuple
        ("1,2", "2,1", {}),  # a bare-list gold admits a bare list
        ("\\pm 3", "3, -3", {}),  # a \pm gold is two values
        ("3", "\\log_2 8", {}),  # an index is not a second number
        ("30", "30^\\circ", {}),
        ("\\$18.90", "18.9", {}),
        ("y = 2x + 3", "y = 3 + 2x", {}),  # an equation gold admits an equation
        ("x^2 + y^2 = 1", "y^2 + x^2 = 1", {}),
        ("\\frac{2}{3}", "0.6666667", {"tolerance": 1e-6}),  # |0.6666667 - 2/3| = 3.3e-8 <= 1e-6
        ("\\sqrt{2}", "1.4142136", {"tolerance": 1e-6}),  # |1.4142136 - 1.41421356...| = 4.4e-8
        ("1000000", "1000000.5", {"tolerance": 1e-6}),  # relative: 0.5 <= 1e-6 * 10^6 = 1
    ],
)
def test_one_value_in_any_accepted_form_passes(patient: MathVerifier, gold: str, answer: str, criteria: dict) -> None:
    result = patient.verify(row(gold, **criteria), answered(answer))
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0), result.detail
    assert ("tolerance" in result.detail) == ("tolerance" in criteria)


@pytest.mark.parametrize(
    ("gold", "answer", "tolerance"),
    [
        ("\\sqrt{2}", "1.414214", None),  # math-verify rounded both to 6 places and passed it
        ("\\pi", "3.141593", None),
        ("\\frac{2}{3}", "0.667", 1e-6),  # 3.3e-4 > 1e-6
        ("\\sqrt{2}", "1.4142", 1e-6),  # 1.4e-5 > 1e-6
        ("1000000", "1000002", 1e-6),  # 2 > 1e-6 * 10^6 = 1
    ],
)
def test_decimals_are_exact_unless_the_row_sets_a_tolerance(
    patient: MathVerifier, gold: str, answer: str, tolerance: float | None
) -> None:
    criteria = {} if tolerance is None else {"tolerance": tolerance}
    result = patient.verify(row(gold, **criteria), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result.detail


def test_what_follows_the_answer_is_its_fail_and_only_a_pool_fault_is_an_error():
    """The outcome table (rlvr/workers.py statuses): a raise or death while judging this answer is
    its fail (memory when it ran out of memory); a worker that never started, or a SIGKILL from
    outside, is ours: error, unscorable. A wrong answer must not make itself unscorable."""
    import signal

    from rlvr.workers import JobOutcome

    cases = [
        (JobOutcome("raised", detail="MemoryError", exception="MemoryError"), Verdict.FAIL, ErrorClass.MEMORY),
        (
            JobOutcome("raised", detail="RecursionError", exception="RecursionError"),
            Verdict.FAIL,
            ErrorClass.RUNTIME_ERROR,
        ),
        (JobOutcome("died", detail="exit 1", exitcode=1), Verdict.FAIL, ErrorClass.RUNTIME_ERROR),
        (JobOutcome("timeout", detail="2 s"), Verdict.FAIL, ErrorClass.TIMEOUT),
        (JobOutcome("died", detail="killed", exitcode=-signal.SIGKILL), Verdict.ERROR, ErrorClass.INFRASTRUCTURE),
        (JobOutcome("crashed", detail="no worker"), Verdict.ERROR, ErrorClass.INFRASTRUCTURE),
    ]
    verifier = MathVerifier()  # no worker starts: the outcomes are made up
    for outcome, verdict, error_class in cases:
        result = verifier._from_outcome(row("42"), outcome)
        assert (result.verdict, result.error_class) == (verdict, error_class), outcome


HIDDEN_VALUE = [
    # (answer for gold 42): a second value inside a construct math-verify drops; all PASSED for 42
    # before the verifier asked the parser which values it read (issue 27, item 4).
    r"42 \text{ (approximately 43)}",
    r"\left. 42 \right|_{43}",
    r"{42}^{1}_{43}",
    r"42 \textbf{ (43)}",
    r"42\mbox{ 43}",
    r"42 \mathrm{43}",
    r"42\operatorname{43}",
    r"\left. 42 \right|^{43}",
    r"42^{}_{43}",
    r"\boxed{42 \text{ (43)}}",
]


@pytest.mark.parametrize("answer", HIDDEN_VALUE)
def test_a_value_the_parser_drops_is_a_second_value(patient: MathVerifier, answer: str) -> None:
    result = patient.verify(row("42"), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.BAD_FORMAT), result.detail
    assert "math-verify drops" in result.detail


@pytest.mark.parametrize("answer", ["42^e", "42^ee", "42x%", "42 m%", "42%e%"])
def test_a_symbol_the_parser_drops_is_a_partial_reading(patient: MathVerifier, answer: str) -> None:
    """math-verify read each as 42: "42^e" is 42 to the power e, not 42."""
    result = patient.verify(row("42"), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE), result.detail


def test_a_unit_squared_is_no_second_value(patient: MathVerifier) -> None:
    """math-verify drops the 2 of "cm^2" with the unit; a square or cube of a unit is not counted."""
    assert patient.verify(row("15"), answered(r"15\text{ cm}^2")).verdict is Verdict.PASS
    assert patient.verify(row("15"), answered(r"15\mbox{ m}^{3}")).verdict is Verdict.PASS
    seven = patient.verify(row("15"), answered(r"15\text{ cm}^7"))
    assert (seven.verdict, seven.error_class) == (Verdict.FAIL, ErrorClass.BAD_FORMAT)


HONEST_FORMS = [
    # (gold, answer): forms readers write that were refused before (issue 27, item 7)
    ("9", r"Answer \( 9 \)"),  # inline and display delimiters, with words around
    ("9", r"Answer \[ 9 \]"),
    ("9", "Answer $$ \n 9 \n $$"),  # display math may span lines
    ("\\frac{1}{2}", r"\(\frac{1}{2}\)"),
    ("32349", r"32,\! 349"),  # MATH's thousands separators
    ("14916", r"14{,}916"),
    ("11111111100", r"11,\! 111,\! 111,\! 100"),
    ("1000", "1,000"),
    ("900,\\!000,\\!000", "900000000"),  # in the gold too
    ("10", r"\$10"),  # a dollar sign
    ("\\$6", "6"),
    ("16386.20", r"\$16,\!386.20"),
    (r"x \le 3", "x <= 3"),  # ASCII relations
    (r"x \ge 3", "x >= 3"),
    (r"x \ne 3", "x != 3"),
    (r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}"),  # bracket styles
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\left[\begin{array}{cc}1 & 2 \\3 & 4\end{array}\right]"),
    ("204_5", "204_5"),  # the gold as written is never refused
    ("204_5", "204_{5}"),
    (r"15\mbox{ cm}^2", r"15\mbox{ cm}^2"),
    ("y = 2x + 3", "y=3+2x"),  # an equation for an equation
    ("2x+4y-3=0", r"y=-\frac{1}{2}x+\frac{3}{4}"),
    (r"\boxed{1, 2, 3}", "1, 2, 3"),  # a bare list for a boxed list
    (r"\{1, 2\}", "2, 1"),  # a bare list for a set
    ("(2, 2), (6, 2)", r"\boxed{(2, 2)} \quad \text{and} \quad \boxed{(6, 2)}"),  # boxes listing a list
    ("6 \\text{ and } 8", r"\boxed{6,8}"),
    ("1000", "1e3"),  # E-notation: a power of ten
    ("-440000", "-4.4e+5"),
    ("0.0025", "2.5E-3"),
    ("2e", "2e"),  # "2e" with no exponent digits is 2 times Euler's number
    ("2e", r"2 \cdot e"),
    ("e^{2}", "e^2"),
    ("1 - \\frac{1}{\\mathrm{e}}", "1 - \\frac{1}{e}"),
    ("x > 5", r"(5, \infty)"),  # an interval for an inequality
    ("-2 \\le x \\le 7", r"x \in [-2,7]"),
    ("42", "Thus, the answer is $42$."),  # prose around one value
    ("42", r"The answer is \boxed{42}."),
    ("42", "42$"),  # a lone $ at the end: a delimiter without its partner
]


@pytest.mark.parametrize(("gold", "answer"), HONEST_FORMS)
def test_honest_forms_pass(patient: MathVerifier, gold: str, answer: str) -> None:
    result = patient.verify(row(gold), answered(answer))
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0), result.detail


@pytest.mark.parametrize(
    ("gold", "answer", "error_class"),
    [
        ("1000", "1, 000", BAD_FORMAT),  # a list: a comma and a space
        ("1000", "1 000", BAD_FORMAT),  # a space is no thousands separator
        ("1.22", "1,22", BAD_FORMAT),  # a comma is no decimal point
        ("(2,500)", "2500", WRONG),  # inside brackets, a pair
        (r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", r"\begin{vmatrix}1&2\\3&4\end{vmatrix}", BAD_FORMAT),  # det
        ("e^{3}", "1e3", WRONG),  # E-notation is not Euler's number
        ("2000", "2e", WRONG),
        ("120", "5!=120", BAD_FORMAT),  # a factorial and =, as no gold states a relation
        ("(1,2)", "2, 1", BAD_FORMAT),  # a tuple or interval is no list
        ("204_5", "204_6", BAD_FORMAT),
        ("42", "x <= 42", BAD_FORMAT),
    ],
)
def test_the_readings_that_tell_forms_apart(
    patient: MathVerifier, gold: str, answer: str, error_class: ErrorClass
) -> None:
    result = patient.verify(row(gold), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, error_class), result.detail
