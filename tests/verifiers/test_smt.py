"""SmtVerifier: real z3 in real worker processes. Claims are checked, never trusted; unknown is never a pass."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.format import FormatVerifier
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.reward import RewardFunction
from rlvr.verifiers.smt import SmtVerifier, check_term, parse_assignment
from rlvr.workers import JobOutcome

XY = "(declare-const x Int) (declare-const y Int)"
XY_CONSTRAINTS = "(assert (> x y)) (assert (= (+ x y) 1)) (assert (< (* x y) 0))"

FERMAT3_DECLS = "(declare-const a Int) (declare-const b Int) (declare-const c Int)"
FERMAT3 = "(assert (> a 0)) (assert (> b 0)) (assert (> c 0)) (assert (= (+ (* a a a) (* b b b)) (* c c c)))"
"""Unsatisfiable (Fermat, n = 3), but no decision procedure proves it: z3 answers unknown."""


def model_row(constraints: str = XY_CONSTRAINTS, declarations: str = XY) -> Query:
    return Query("m1", "", {"type": "smt", "mode": "model", "declarations": declarations, "constraints": constraints})


def equivalent_row(reference: str = "(+ x x)", constraints: str = "", declarations: str = XY) -> Query:
    return Query(
        "e1",
        "",
        {
            "type": "smt",
            "mode": "equivalent",
            "declarations": declarations,
            "reference": reference,
            "constraints": constraints,
        },
    )


def answered(text: str) -> str:
    return f"<think>let me see</think><answer>{text}</answer>"


@pytest.fixture(scope="module")
def verifier() -> Iterator[SmtVerifier]:
    with SmtVerifier(solver_timeout_ms=200, kill_after_s=3.0, pool_size=1) as shared:
        yield shared


# --- model mode -------------------------------------------------------------------------------


def test_right_model_passes_with_one_outcome_per_assertion(verifier: SmtVerifier) -> None:
    result = verifier.verify(model_row(), answered("x = 3, y = -2"))
    assert (result.verdict, result.score, result.error_class) == (Verdict.PASS, 1.0, ErrorClass.NONE), result
    assert [(t.name, t.passed) for t in result.tests] == [("assert[0]", True), ("assert[1]", True), ("assert[2]", True)]


def test_wrong_model_fails_and_names_the_violated_assertion(verifier: SmtVerifier) -> None:
    result = verifier.verify(model_row(), answered("x = 2, y = -2"))  # x + y = 0, not 1
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result
    assert [t.passed for t in result.tests] == [True, False, True]


def test_partial_assignment_fails_even_if_it_could_be_completed(verifier: SmtVerifier) -> None:
    result = verifier.verify(model_row(), answered("x = 3"))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result
    assert "no value for y" in result.detail


@pytest.mark.parametrize(
    "answer",
    [
        "x = 3, y = -2, z = 0",
        "x = 3, y = -2.5",
        "x = 3, y = (- 2)",
        "x = 3, x = 3, y = -2",
        "x is 3 and y is -2",
        "x = 3 y = -2",
    ],
)
def test_unknown_names_wrong_sorts_terms_and_prose_are_unparseable(verifier: SmtVerifier, answer: str) -> None:
    result = verifier.verify(model_row(), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE), (answer, result)


def test_reals_booleans_and_bitvectors() -> None:
    declarations = "(declare-const r Real) (declare-const p Bool) (declare-const b (_ BitVec 8))"
    constraints = "(assert (= (* 2 r) 1)) (assert p) (assert (bvult #x80 b))"
    with SmtVerifier(pool_size=1) as verifier:
        good = verifier.verify(model_row(constraints, declarations), answered("r = 1/2; p = true; b = #xff"))
        also = verifier.verify(model_row(constraints, declarations), answered("r = 0.5\np = true\nb = 255"))
        bad = verifier.verify(model_row(constraints, declarations), answered("r = 1/2, p = false, b = 255"))
        narrow = verifier.verify(model_row(constraints, declarations), answered("r = 1/2, p = true, b = #xfff"))
    assert good.verdict is Verdict.PASS and also.verdict is Verdict.PASS, (good, also)
    assert (bad.verdict, bad.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER)
    assert (narrow.verdict, narrow.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE)


def test_quantified_constraint_z3_cannot_decide_is_unknown_never_pass(verifier: SmtVerifier) -> None:
    # x = 1 makes the body Fermat's n = 3 case: true, but z3 cannot prove it.
    constraints = (
        "(assert (forall ((a Int) (b Int) (c Int)) (=> (and (> a 0) (> b 0) (> c 0))"
        " (distinct (+ (* a a a) (* b b b)) (* x c c c)))))"
    )
    result = verifier.verify(model_row(constraints, "(declare-const x Int)"), answered("x = 1"))
    assert result.verdict is Verdict.UNKNOWN and result.score == 0.0, result
    assert result.error_class is ErrorClass.TIMEOUT
    assert not result.scorable


# --- equivalent mode --------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["(* 2 x)", "(+ x x 0)", "(- (* 3 x) x)", "(let ((t x)) (+ t t))"])
def test_equivalent_terms_pass(verifier: SmtVerifier, answer: str) -> None:
    result = verifier.verify(equivalent_row(), answered(answer))
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0), (answer, result)


@pytest.mark.parametrize("answer", ["(* 3 x)", "(+ x y)", "x", "(* 2 y)"])
def test_inequivalent_terms_fail_with_a_counterexample(verifier: SmtVerifier, answer: str) -> None:
    result = verifier.verify(equivalent_row(), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), (answer, result)
    assert "differs from the reference at" in result.detail


def test_equivalence_under_assumptions() -> None:
    with SmtVerifier(pool_size=1) as verifier:
        held = verifier.verify(equivalent_row("(abs x)", "(assert (>= x 0))"), answered("x"))
        free = verifier.verify(equivalent_row("(abs x)"), answered("x"))
    assert held.verdict is Verdict.PASS and free.verdict is Verdict.FAIL


@pytest.mark.parametrize("answer", [
    "(* 2 x",                      # unbalanced
    "(* 2 x))",                    # unbalanced the other way
    "(+ x x) (assert false)",      # two terms
    "x x) (assert (= x",           # closes the distinct and injects a command
    "(+ x x) ; comment",           # comments could hide parentheses
    "(+ z z)",                     # undeclared symbol (z3 rejects it)
    "(> x 0)",                     # a Bool, the reference is an Int
    "(frobnicate x)",              # unknown function
])  # fmt: skip
def test_malformed_or_injected_term_is_unparseable(verifier: SmtVerifier, answer: str) -> None:
    result = verifier.verify(equivalent_row(), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE), (answer, result)


def test_undecidable_equivalence_with_tiny_timeout_is_unknown(verifier: SmtVerifier) -> None:
    # Under FERMAT3 every answer is "equivalent" (the assumptions are unsatisfiable), but only a
    # proof of Fermat n = 3 would show it; z3 times out at 200 ms.
    row = equivalent_row("1", FERMAT3, FERMAT3_DECLS)
    result = verifier.verify(row, answered("0"))
    assert (result.verdict, result.error_class) == (Verdict.UNKNOWN, ErrorClass.TIMEOUT), result
    assert 0.1 < result.elapsed_s < 3.0


def test_unknown_as_fail_is_opt_in() -> None:
    with SmtVerifier(solver_timeout_ms=100, pool_size=1, unknown_as_fail=True) as verifier:
        result = verifier.verify(equivalent_row("1", FERMAT3, FERMAT3_DECLS), answered("0"))
    assert (result.verdict, result.error_class, result.score) == (Verdict.FAIL, ErrorClass.TIMEOUT, 0.0)


def test_the_hard_kill_ends_a_check_that_outlives_the_solver_timeout() -> None:
    # Solver timeout (60 s) far above the kill (1 s): the pool's SIGKILL is what ends this one.
    with SmtVerifier(solver_timeout_ms=60_000, kill_after_s=1.0, pool_size=1) as verifier:
        result = verifier.verify(equivalent_row("1", FERMAT3, FERMAT3_DECLS), answered("0"))
        after = verifier.verify(equivalent_row(), answered("(* 2 x)"))  # a fresh worker took over
    assert (result.verdict, result.error_class, result.score) == (Verdict.FAIL, ErrorClass.TIMEOUT, 0.0), result
    assert "killed" in result.detail
    assert after.verdict is Verdict.PASS


# --- rows and extraction ----------------------------------------------------------------------


@pytest.mark.parametrize(("criteria", "key"), [
    ({"mode": "guess", "declarations": XY, "constraints": XY_CONSTRAINTS}, '"mode"'),
    ({"mode": "model", "constraints": XY_CONSTRAINTS}, '"declarations"'),
    ({"mode": "model", "declarations": XY}, '"constraints"'),
    ({"mode": "equivalent", "declarations": XY, "reference": "(+ x"}, '"reference"'),
    ({"mode": "model", "declarations": XY, "constraints": "(assert (> x"}, "does not parse"),
    ({"mode": "model", "declarations": "(declare-fun f (Int) Int)", "constraints": "(assert (= (f 1) 2))"},
     "constants only"),
    ({"mode": "equivalent", "declarations": XY, "reference": "(+ q q)"}, "does not parse"),
])  # fmt: skip
def test_bad_criteria_is_an_error_naming_the_query_and_key(verifier: SmtVerifier, criteria: dict, key: str) -> None:
    answer = "x" if criteria["mode"] == "equivalent" else "x = 1, y = 0"
    result = verifier.verify(Query("bad-row", "", {"type": "smt", **criteria}), answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA), result
    assert "'bad-row'" in result.detail and key in result.detail
    assert not result.scorable


def test_missing_or_empty_answer(verifier: SmtVerifier) -> None:
    assert verifier.verify(model_row(), "x = 3, y = -2").error_class is ErrorClass.NO_ANSWER
    assert verifier.verify(model_row(), answered("  ")).error_class is ErrorClass.NO_ANSWER


def test_huge_answer_is_refused_before_z3(verifier: SmtVerifier) -> None:
    result = verifier.verify(equivalent_row(), answered("(+ x " + "(+ 0 " * 3000 + "x" + ")" * 3001))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE)


def test_parse_assignment_and_check_term() -> None:
    assert parse_assignment("x = 3, y = -2") == [("x", "3"), ("y", "-2")]
    assert parse_assignment("r=1/2;\n b = #b0101") == [("r", "1/2"), ("b", "#b0101")]
    assert isinstance(parse_assignment("x = y"), str)
    assert check_term("(+ x (* 2 y))") == "" and check_term("x") == ""
    assert check_term("x y") == "2 terms, expected one"


def test_registry_builds_the_smt_verifier() -> None:
    assert isinstance(get_verifier("smt"), SmtVerifier)


def test_unknown_gets_no_reward_and_stays_out_of_the_baseline(verifier: SmtVerifier) -> None:
    rewards = RewardFunction(verifier_for=lambda name: verifier if name == "smt" else FormatVerifier())
    unknown = rewards.score(equivalent_row("1", FERMAT3, FERMAT3_DECLS), answered("0"))
    judged = rewards.score(equivalent_row(), answered("(* 2 x)"))
    assert unknown.reward is None and not unknown.correct  # NaN in the trainer: no reward, no baseline
    assert judged.reward == 1.0 and judged.correct


@pytest.mark.parametrize("value", ["1/0", "1.5/2", "1e3", "0x10"])
def test_odd_real_literals_are_unparseable(verifier: SmtVerifier, value: str) -> None:
    result = verifier.verify(model_row("(assert (> r 0))", "(declare-const r Real)"), answered(f"r = {value}"))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE), result


# --- what an answer does to z3 is that answer's fail ------------------------------------------

Z3_OUT_OF_MEMORY = "(bv2int ((_ extract 7 0) ((_ repeat 100000000) ((_ int2bv 8) x))))"
"""An Int term (x's low 8 bits) built through an 800-million-bit vector: z3 raises "out of
memory" at its ``memory_max_size`` (1 GiB) within about a second."""
Z3_MEMOUT_EXIT = "(bv2int ((_ int2bv 100000000) x))"
"""z3 cannot allocate this 100-million-bit vector at all and ends the process with its
ERR_MEMOUT exit status, 101 (z3 src/util/error_codes.h)."""


@pytest.mark.parametrize("unknown_as_fail", [False, True])
def test_answers_that_exhaust_z3_memory_fail_as_memory_and_leave_a_clean_worker(unknown_as_fail: bool) -> None:
    row, right = equivalent_row(), answered("(* 2 x)")
    items = [
        (row, answered(Z3_OUT_OF_MEMORY)),
        (row, right),
        (row, answered(Z3_MEMOUT_EXIT)),
        (row, right),
        (model_row(), answered("x = 3, y = -2")),
    ]
    # One worker, one batch: every answer meets whatever the answer before it left behind.
    with SmtVerifier(pool_size=1, kill_after_s=20.0, unknown_as_fail=unknown_as_fail) as verifier:
        results = verifier.verify_batch(items)
    assert [(r.verdict, r.error_class) for r in results] == [
        (Verdict.FAIL, ErrorClass.MEMORY),
        (Verdict.PASS, ErrorClass.NONE),
        (Verdict.FAIL, ErrorClass.MEMORY),
        (Verdict.PASS, ErrorClass.NONE),
        (Verdict.PASS, ErrorClass.NONE),
    ], [r.detail for r in results]
    assert all(r.scorable for r in results)  # a wrong answer is never hidden as `error`
    assert "out of memory" in results[0].detail and "101" in results[2].detail


# --- division by zero never satisfies a constraint --------------------------------------------

X = "(declare-const x Int)"

ZERO_DIVISOR_TRAPS = [
    # (declarations, constraints, claimed model): the constraints have NO model with a nonzero
    # divisor, and SMT-LIB leaves (div 1 0) etc. unspecified, so the claim "holds" only if the
    # zero divisor may pick whatever value each check needs.
    (X, "(assert (= (div 1 x) 5)) (assert (= (div 1 x) 6))", "x = 0"),  # one number cannot be 5 and 6
    (X, "(assert (= (div 1 x) 5))", "x = 0"),  # 1 div x is -1, 0 or 1 for every x != 0
    (X, "(assert (= (mod x x) 1))", "x = 0"),  # x mod x = 0 for every x != 0
    ("(declare-const r Real)", "(assert (= (/ r r) 2.0))", "r = 0"),  # r / r = 1 for every r != 0
    (XY, "(assert (= (rem x y) 3)) (assert (< (rem x y) 3))", "x = 7, y = 0"),  # 3 < 3 is false
    (X, "(assert (forall ((k Int)) (= (div k x) 7)))", "x = 0"),  # k = 0: 0 div x = 0, never 7
]  # fmt: skip


@pytest.mark.parametrize(("declarations", "constraints", "claim"), ZERO_DIVISOR_TRAPS)
def test_a_zero_divisor_never_satisfies_constraints_that_have_no_model(
    verifier: SmtVerifier, declarations: str, constraints: str, claim: str
) -> None:
    result = verifier.verify(model_row(constraints, declarations), answered(claim))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result


def test_division_by_a_nonzero_divisor_or_behind_a_guard_still_passes(verifier: SmtVerifier) -> None:
    # 7 div 2 = 3 and 7 mod 2 = 1; the guarded (div 7 y) is 3 at y = 2 and not needed at y = 0.
    constraints = "(assert (= (div x y) 3)) (assert (= (mod x y) 1)) (assert (or (= y 0) (= (div 7 y) 3)))"
    right = verifier.verify(model_row(constraints), answered("x = 7, y = 2"))
    wrong = verifier.verify(model_row(constraints), answered("x = 6, y = 2"))  # 6 div 2 = 3 but 6 mod 2 = 0
    guarded_row = model_row("(assert (or (= y 0) (= (div 7 y) 3))) (assert (= x y))")
    guarded = verifier.verify(guarded_row, answered("x = 0, y = 0"))
    assert (right.verdict, right.score) == (Verdict.PASS, 1.0), right
    assert [t.passed for t in right.tests] == [True, True, True]
    assert (wrong.verdict, wrong.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), wrong
    assert [t.passed for t in wrong.tests] == [True, False, True]
    assert guarded.verdict is Verdict.PASS, guarded  # true whatever 7 div 0 is


def test_an_equivalent_answer_must_agree_whatever_a_zero_divisor_yields(verifier: SmtVerifier) -> None:
    # Under y = 0, (div x y) is an unspecified value: it need not be 0, so it is not the reference.
    result = verifier.verify(equivalent_row("0", "(assert (= y 0))"), answered("(div x y)"))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result


def test_a_worker_killed_from_outside_is_an_error_not_the_answers_fail() -> None:
    right = (model_row(), answered("x = 3, y = -2"))
    with SmtVerifier(solver_timeout_ms=60_000, kill_after_s=30.0, pool_size=1) as verifier:
        verifier.pool.start()
        os.kill(verifier.pool.pids()[0], signal.SIGKILL)  # while idle, as the host's OOM killer would
        time.sleep(0.2)
        idle = verifier.verify(*right)
        verifier.pool.start()  # the replacement is ready, so the kill below lands mid-job
        threading.Timer(0.5, os.kill, (verifier.pool.pids()[0], signal.SIGKILL)).start()
        busy = verifier.verify(equivalent_row("1", FERMAT3, FERMAT3_DECLS), answered("0"))  # z3 grinds for 60 s
        after = verifier.verify(*right)
    assert (idle.verdict, idle.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE), idle
    assert "before the job" in idle.detail
    assert (busy.verdict, busy.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE), busy
    assert "SIGKILL" in busy.detail
    assert after.verdict is Verdict.PASS


@pytest.mark.parametrize(("outcome", "expected"), [
    (JobOutcome("raised", detail="job raised MemoryError: z3 ran out of memory", exception="MemoryError"),
     (Verdict.FAIL, ErrorClass.MEMORY)),
    (JobOutcome("raised", detail="job raised Z3Exception: b'canceled'", exception="Z3Exception"),
     (Verdict.FAIL, ErrorClass.RUNTIME_ERROR)),
    (JobOutcome("died", detail="worker process died during the job (exit code 101)", exitcode=101),
     (Verdict.FAIL, ErrorClass.MEMORY)),
    (JobOutcome("died", detail="worker process died during the job (killed by SIGSEGV)", exitcode=-11),
     (Verdict.FAIL, ErrorClass.RUNTIME_ERROR)),
    (JobOutcome("died", detail="worker process died during the job (killed by SIGKILL)", exitcode=-9),
     (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)),
    (JobOutcome("crashed", detail="worker processes fail to start"), (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)),
])  # fmt: skip
def test_what_follows_the_answer_is_its_fail_and_only_a_pool_fault_is_an_error(
    verifier: SmtVerifier, outcome: JobOutcome, expected: tuple[Verdict, ErrorClass]
) -> None:
    # The outcomes real answers produce are tested above; a segfault or a non-memory raise has no
    # known trigger among answers, so this table pins down how they would be judged.
    result = verifier._from_outcome(model_row(), outcome)
    assert (result.verdict, result.error_class) == expected, result
