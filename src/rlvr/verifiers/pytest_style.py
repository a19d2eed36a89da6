"""pytest-style assertion tests, run in the bubblewrap sandbox. WEAKER than ``python``: read this first.

Rows look like ``{"type": "pytest", "test_code": "def test_a():\\n    assert f(2) == 4\\n",
"expected_tests": 1}``. The code is ``extract_code(completion, "python")``. One sandboxed
``python -I -S`` process (no site-packages, so no real pytest) runs ``rlvr/sandbox/pytest_driver.py``:
it execs the candidate, then the row's test code, runs each ``test_*`` function the test code
defines, and returns per-test outcomes in one frame carrying this run's nonce.

A pass needs an intact frame, exactly the ``test_*`` names the host found in ``test_code``
(``expected_tests`` of them, each run once) and every one ``passed``. Skips, errors
(``SystemExit`` included), missing or extra tests are not passes; printed summaries and exit codes
are never read.

The weaker guarantee: the assertions (and with them the expected values) run inside the
candidate's interpreter, so a candidate can defeat them. An object whose ``__eq__`` always returns
True makes ``assert f(1) == 2`` pass here, while the ``python`` verifier, which compares plain data
on the host, rejects it. Use ``python`` rows where the expected values are data; use ``pytest``
rows for properties that need code, and expect a policy under RL pressure to find such hacks.

What it does hold: the names in the tests resolve to objects fixed before the candidate ran (a
copy of the builtins, copies of the modules the tests import, and only the candidate's public
names that are not builtins), so ``def abs``, ``builtins.abs = ...`` or ``math.isclose = ...`` in
the candidate cannot rig them; the driver's docstring says how.
"""

from __future__ import annotations

import ast
import json
import secrets
from dataclasses import dataclass
from importlib import resources
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxRun, SandboxUnavailable, run_untrusted, sandbox_python
from rlvr.types import ErrorClass, Query, TestOutcome, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import fail, unavailable
from rlvr.verifiers.sandboxed import SandboxedVerifier, raised_before_tests, tests_verdict

DRIVER = resources.files("rlvr.sandbox").joinpath("pytest_driver.py").read_bytes()

DEFAULT_LIMITS = SandboxLimits(wall_s=5.0, cpu_s=3, memory_mb=512, processes=16, output_bytes=1 << 20)
"""Per completion (all its tests together)."""

SELF_CHECK = Query(
    "pytest-self-check",
    "",
    {
        "type": "pytest",
        "expected_tests": 2,
        "test_code": "def test_double():\n    assert f(2) == 4\n\ndef test_zero():\n    assert f(0) == 0\n",
    },
)
SELF_CHECK_CODE = "def f(x):\n    return x * 2\n"

_ERROR_CLASSES = {"failed": ErrorClass.WRONG_ANSWER, "skipped": ErrorClass.WRONG_ANSWER}


@dataclass(frozen=True)
class PytestCriteria:
    """The ``verifier`` object of a pytest row."""

    test_code: str
    test_names: tuple[str, ...]
    """The top-level ``def test_*`` names in ``test_code``, in order; exactly these must run."""

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> PytestCriteria:
        """Validated criteria; a ValueError says which key is wrong. ``test_code`` is parsed, not run."""
        test_code = criteria.get("test_code")
        if not isinstance(test_code, str) or not test_code.strip():
            raise ValueError('"test_code" must be a non-empty string of Python test functions')
        try:
            tree = ast.parse(test_code)
        except (SyntaxError, ValueError, RecursionError) as error:
            raise ValueError(f'"test_code" does not parse: {clip(str(error))}') from error
        names = test_function_names(tree)
        expected = criteria.get("expected_tests")
        if not isinstance(expected, int) or isinstance(expected, bool) or expected < 1:
            raise ValueError(f'"expected_tests" must be a positive integer, got {expected!r}')
        if len(names) != expected:
            raise ValueError(
                f'"test_code" defines {len(names)} distinct test_* functions, "expected_tests" is {expected}'
            )
        if any(isinstance(node, ast.Import | ast.ImportFrom) and _imports_pytest(node) for node in ast.walk(tree)):
            raise ValueError('"test_code" imports pytest, which the sandbox does not have: use plain assert')
        return cls(test_code, names)


def test_function_names(tree: ast.Module) -> tuple[str, ...]:
    """Distinct names of top-level ``def test_*`` functions, in first-definition order."""
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    return tuple(dict.fromkeys(names))


def _imports_pytest(node: ast.Import | ast.ImportFrom) -> bool:
    modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
    return any(module.split(".")[0] == "pytest" for module in modules)


class PytestVerifier(SandboxedVerifier):
    """Verifier for ``{"type": "pytest", ...}`` rows; one fresh bubblewrap sandbox per completion."""

    name = "pytest"
    self_check = (SELF_CHECK, SELF_CHECK_CODE)

    def __init__(self, *, limits: SandboxLimits = DEFAULT_LIMITS, partial_credit: bool = False) -> None:
        self.limits = limits
        self.partial_credit = partial_credit

    def _prepare(self, query: Query, completion: str) -> tuple[PytestCriteria, str] | VerifierResult:
        return self._criteria_and_answer(query, completion, PytestCriteria.from_dict)

    def _run_prepared(self, query: Query, prepared: tuple[PytestCriteria, str]) -> VerifierResult:
        criteria, code = prepared
        nonce = secrets.token_hex(16)
        files = {
            "/sandbox/driver.py": DRIVER,
            "/sandbox/solution.py": code.encode("utf-8", "replace"),
            "/sandbox/tests.py": criteria.test_code.encode(),
            "/sandbox/job.json": json.dumps({"nonce": nonce}).encode(),
        }
        try:
            run = run_untrusted(
                [sandbox_python(), "-I", "-S", "/sandbox/driver.py"], files=files, limits=self.limits, channel=True
            )
        except SandboxUnavailable as error:
            return unavailable(str(error))
        return self._judge(criteria, run, nonce)

    def _judge(self, criteria: PytestCriteria, run: SandboxRun, nonce: str) -> VerifierResult:
        results = self._test_results(
            run,
            nonce,
            lambda frame: raised_before_tests(frame, ("import_raised", "tests_raised")),
            lambda results: all(isinstance(result, dict) for result in results),
        )
        if isinstance(results, VerifierResult):
            return results
        ran = [result.get("name") for result in results]
        if sorted(map(str, ran)) != sorted(criteria.test_names) or len(ran) != len(criteria.test_names):
            expected = clip(", ".join(criteria.test_names))
            detail = f"ran {len(ran)} tests, expected exactly {len(criteria.test_names)}: {expected}"
            return fail(ErrorClass.PROTOCOL_VIOLATION, detail)
        return self._score(results)

    def _score(self, results: list[dict[str, Any]]) -> VerifierResult:
        outcomes, classes = [], []
        for result in results:
            outcome, detail = str(result.get("outcome")), clip(str(result.get("detail", "")))
            passed = outcome == "passed"
            elapsed = result.get("elapsed_s")
            elapsed = float(elapsed) if isinstance(elapsed, int | float) else 0.0
            outcomes.append(TestOutcome(str(result["name"]), passed, "" if passed else f"{outcome}: {detail}", elapsed))
            if not passed:
                classes.append(
                    ErrorClass.MEMORY
                    if detail == "MemoryError"
                    else _ERROR_CLASSES.get(outcome, ErrorClass.RUNTIME_ERROR)
                )
        first_class = classes[0] if classes else ErrorClass.NONE
        return tests_verdict(outcomes, first_class, partial_credit=self.partial_credit)
