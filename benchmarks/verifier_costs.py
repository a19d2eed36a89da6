"""Cost of one check for the smt, checklist and pytest verifiers (warm; checks one after another),
and of the first symbolic math check on a fresh math worker, with the old and the current warm-up.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/verifier_costs.py

Each verifier is built and warmed first (the pool started, the sandbox self-check run), so the
numbers are steady-state costs per check; the median of N checks is printed. smt batches go
through ``verify_batch`` (two z3 workers), the others through ``verify``.
"""

from __future__ import annotations

import statistics
import time

from rlvr.types import Query
from rlvr.verifiers.checklist import ChecklistVerifier
from rlvr.verifiers.math import WARMUP, MathVerifier
from rlvr.verifiers.pytest_style import PytestVerifier
from rlvr.verifiers.smt import SmtVerifier

XY = "(declare-const x Int) (declare-const y Int)"
SMT_MODEL = Query(
    "m",
    "",
    {"type": "smt", "mode": "model", "declarations": XY, "constraints": "(assert (> x y)) (assert (= (+ x y) 1))"},
)
SMT_EQUIVALENT = Query("e", "", {"type": "smt", "mode": "equivalent", "declarations": XY, "reference": "(+ x x)"})
CHECKLIST = Query(
    "k",
    "",
    {
        "type": "checklist",
        "items": [
            {"check": "contains", "value": "Paris", "weight": 2},
            {"check": "regex", "pattern": r"\b1[0-9]{3}\b"},
            {"check": "max_words", "value": 50},
            {"check": "not_contains", "value": "London"},
        ],
    },
)
PYTEST = Query(
    "p",
    "",
    {
        "type": "pytest",
        "expected_tests": 3,
        "test_code": (
            "def test_a():\n    assert f(2) == 4\n\ndef test_b():\n    assert f(-3) == -6\n\n"
            "def test_c():\n    assert f(0) == 0\n"
        ),
    },
)


def per_check_ms(run, count: int) -> float:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


OLD_MATH_WARMUP = ("1", "\\frac{1}{2}")
"""Loads math-verify's LaTeX grammar only, not sympy's simplifier."""


def first_symbolic_check(warmup: tuple[str, str]) -> str:
    """Verdict and seconds of the first symbolic check in each of three fresh one-worker pools."""
    row = Query("q", "", {"type": "math", "answer": "x^2-1"})
    outcomes = []
    for _ in range(3):
        with MathVerifier(pool_size=1) as verifier:
            verifier.pool.warmup = warmup
            verifier.pool.start()
            result = verifier.verify(row, "<answer>(x-1)(x+1)</answer>")
            outcomes.append(f"{result.verdict.value} {result.elapsed_s:.2f} s")
    return ", ".join(outcomes)


def main() -> None:
    print(f"math first symbolic check, old warm-up:      {first_symbolic_check(OLD_MATH_WARMUP)}")
    print(f"math first symbolic check, current warm-up:  {first_symbolic_check(WARMUP)}")
    with SmtVerifier() as smt:
        smt.pool.start()
        model = [(SMT_MODEL, "<answer>x = 3, y = -2</answer>")] * 50
        equivalent = [(SMT_EQUIVALENT, "<answer>(* 2 x)</answer>")] * 50
        smt_model_ms = per_check_ms(lambda: smt.verify_batch(model), 3) / len(model)
        smt_equivalent_ms = per_check_ms(lambda: smt.verify_batch(equivalent), 3) / len(equivalent)
    checklist = ChecklistVerifier()
    checklist_ms = per_check_ms(lambda: checklist.verify(CHECKLIST, "<answer>Paris, since 1190.</answer>"), 500)
    pytest_verifier = PytestVerifier()
    code = "<answer>\n```python\ndef f(x):\n    return 2 * x\n```\n</answer>"
    pytest_verifier.verify(PYTEST, code)  # self-check
    pytest_ms = per_check_ms(lambda: pytest_verifier.verify(PYTEST, code), 20)
    print(f"smt model (2 asserts), batch of 50 on 2 workers: {smt_model_ms:.2f} ms per check")
    print(f"smt equivalent, batch of 50 on 2 workers:        {smt_equivalent_ms:.2f} ms per check")
    print(f"checklist (4 items):                             {checklist_ms:.3f} ms per check")
    print(f"pytest (3 tests, one sandbox):                   {pytest_ms:.1f} ms per check")


if __name__ == "__main__":
    main()
