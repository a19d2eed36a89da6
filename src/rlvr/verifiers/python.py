"""Python function tasks, judged on the host from data returned by a sandboxed run.

Rows look like ``{"type": "python", "entry_point": "f", "tests": [{"args": [1, 2], "expected": 3}],
"hidden_tests": [...]}``. The code is ``extract_code(completion, "python")``. All tests of one
completion run in ONE sandboxed process (a fenced child of a pre-forked slot of
``rlvr.sandbox.pool``, or a fresh ``rlvr.sandbox.run_untrusted``): a driver
(``rlvr/sandbox/python_driver.py``) calls ``entry_point(*args)`` for each test and returns plain
JSON values on a private channel; expected values never enter the sandbox. Exit codes, printed
text and sentinels never decide a pass: only ``same_value(expected, returned)`` does.

Comparison (``same_value``) is exact and type-aware: ``True`` is not ``1``, ``"1"`` is not ``1``,
an int expected needs an int back. A float expected accepts a float (or int) within a relative
tolerance of 1e-9, because float arithmetic is not associative (0.1 + 0.2 != 0.3). Tuples come back
as lists (JSON has no tuples), so ``(1, 2)`` matches ``[1, 2]``.

Reward is binary by default: ``pass`` (score 1) only if every visible and hidden test passes,
else ``fail`` with score 0; the passed share is in ``detail`` and the per-test outcomes. With
``partial_credit=True`` a completion that passes some tests gets ``partial`` with that share.
"""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from rlvr.sandbox import SandboxLimits, SandboxRun, SandboxUnavailable, run_untrusted, sandbox_python
from rlvr.sandbox.pool import PoolJob, SandboxPool
from rlvr.types import ErrorClass, Query, TestOutcome, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import unavailable
from rlvr.verifiers.sandboxed import SandboxedVerifier, raised_before_tests, tests_verdict

DRIVER = resources.files("rlvr.sandbox").joinpath("python_driver.py").read_bytes()

DEFAULT_LIMITS = SandboxLimits(wall_s=5.0, cpu_s=3, memory_mb=512, processes=16, output_bytes=1 << 20)
"""Per completion (all its tests together)."""

FLOAT_REL_TOL = 1e-9

SELF_CHECK = Query(
    "python-self-check", "", {"type": "python", "entry_point": "f", "tests": [{"args": [2], "expected": 4}]}
)
SELF_CHECK_CODE = "def f(x):\n    return x * 2\n"
"""A known-good answer run once per verifier: if it does not pass, the sandbox or the driver is
broken, and every result is ``error`` (infrastructure), not a silent fail for the completions."""


@dataclass(frozen=True)
class PythonCriteria:
    """The ``verifier`` object of a python row."""

    entry_point: str
    tests: list[dict[str, Any]]
    """Visible and hidden tests together, each {"args": [...], "expected": ...}, visible first."""
    num_visible: int

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> PythonCriteria:
        """Validated criteria; a ValueError says which key is wrong."""
        entry_point = criteria.get("entry_point")
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            raise ValueError(f'"entry_point" must be a Python identifier, got {entry_point!r}')
        visible, hidden = criteria.get("tests"), criteria.get("hidden_tests", [])
        for key, tests in (("tests", visible), ("hidden_tests", hidden)):
            if not isinstance(tests, list) or not all(
                isinstance(t, dict) and isinstance(t.get("args"), list) and "expected" in t for t in tests
            ):
                raise ValueError(f'"{key}" must be a list of {{"args": [...], "expected": ...}}')
        if not visible and not hidden:
            raise ValueError('"tests" is empty: nothing to check the code against')
        return cls(entry_point, [*visible, *hidden], len(visible))


def same_value(expected: Any, returned: Any) -> bool:
    """Exact, type-aware equality of plain JSON values (see the module docstring)."""
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return type(returned) is type(expected) and returned == expected
    if isinstance(expected, int):
        return type(returned) is int and returned == expected
    if isinstance(expected, float):
        if type(returned) not in (int, float):
            return False
        try:
            return math.isclose(returned, expected, rel_tol=FLOAT_REL_TOL)
        except OverflowError:  # an int too large for a float is not close to any float
            return False
    if isinstance(expected, list):
        return (
            type(returned) is list
            and len(returned) == len(expected)
            and all(same_value(e, r) for e, r in zip(expected, returned))
        )
    if isinstance(expected, dict):
        return (
            type(returned) is dict
            and returned.keys() == expected.keys()
            and all(same_value(expected[k], returned[k]) for k in expected)
        )
    raise ValueError(f"expected value of type {type(expected).__name__} is not plain JSON")


class PythonVerifier(SandboxedVerifier):
    """Verifier for ``{"type": "python", ...}`` rows.

    ``isolation="pool"`` (the default) runs each completion in a fenced child of a pre-forked
    sandbox slot (``rlvr.sandbox.pool``): same guarantees, ~10x the throughput. ``"fresh"`` starts
    a new bubblewrap sandbox per completion (``run_untrusted``).
    """

    name = "python"
    self_check = (SELF_CHECK, SELF_CHECK_CODE)

    def __init__(
        self,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        partial_credit: bool = False,
        isolation: Literal["pool", "fresh"] = "pool",
        slots: int | None = None,
    ) -> None:
        if isolation not in ("pool", "fresh"):
            raise ValueError(f"isolation must be 'pool' or 'fresh', got {isolation!r}")
        self.limits = limits
        self.partial_credit = partial_credit
        self.isolation = isolation
        self._pool = SandboxPool({"python": DRIVER}, slots=slots) if isolation == "pool" else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def _run_prepared(self, query: Query, prepared: tuple[PythonCriteria, str, dict[str, str]]) -> VerifierResult:
        return self._run_many([(query, prepared)])[0]

    def _run_many(self, jobs: list[tuple[Query, tuple[PythonCriteria, str, dict[str, str]]]]) -> list[VerifierResult]:
        """DANGER: every job's code at once, in the pool's slots or one fresh sandbox after another."""
        try:
            runs = self._run([files for _, (_, _, files) in jobs])
        except SandboxUnavailable as error:
            return [unavailable(str(error)) for _ in jobs]
        results = []
        for (_, (criteria, nonce, _)), run in zip(jobs, runs, strict=True):
            result = self._judge(criteria, run, nonce)
            result.elapsed_s = run.elapsed_s
            results.append(result)
        return results

    def _prepare(self, query: Query, completion: str) -> tuple[PythonCriteria, str, dict[str, str]] | VerifierResult:
        """(criteria, nonce, files for the sandbox), or the result when there is nothing to run."""
        prepared = self._criteria_and_answer(query, completion, PythonCriteria.from_dict)
        if isinstance(prepared, VerifierResult):
            return prepared
        criteria, code = prepared
        nonce = secrets.token_hex(16)
        job = {
            "nonce": nonce,
            "entry_point": criteria.entry_point,
            "args": [json.dumps(test["args"]) for test in criteria.tests],
        }  # inputs only, never "expected"
        return criteria, nonce, {"solution.py": code, "job.json": json.dumps(job)}

    def _run(self, jobs: list[dict[str, str]]) -> list[SandboxRun]:
        """DANGER: each job's code runs untrusted, in the pool or in a fresh sandbox each."""
        if self._pool is not None:
            return self._pool.run_batch([PoolJob("python", files, self.limits) for files in jobs])
        runs = []
        for files in jobs:
            sandbox_files = {
                "/sandbox/driver.py": DRIVER,
                **{f"/sandbox/{name}": text.encode("utf-8", "replace") for name, text in files.items()},
            }
            runs.append(
                run_untrusted(
                    [sandbox_python(), "-I", "-S", "/sandbox/driver.py"],
                    files=sandbox_files,
                    limits=self.limits,
                    channel=True,
                )
            )
        return runs

    def _judge(self, criteria: PythonCriteria, run: SandboxRun, nonce: str) -> VerifierResult:
        results = self._test_results(
            run,
            nonce,
            lambda frame: raised_before_tests(frame, ("import_raised", "no_entry_point")),
            lambda results: len(results) == len(criteria.tests),
        )
        return results if isinstance(results, VerifierResult) else self._score(criteria, results)

    def _score(self, criteria: PythonCriteria, results: list[Any]) -> VerifierResult:
        outcomes, raised = [], []
        for index, (test, result) in enumerate(zip(criteria.tests, results)):
            name = f"{'visible' if index < criteria.num_visible else 'hidden'}[{index}]"
            if isinstance(result, dict) and "value" in result:
                passed = same_value(test["expected"], result["value"])
                detail = "" if passed else clip(f"returned {json.dumps(result['value'])}")
            elif isinstance(result, dict) and "raised" in result:
                passed, detail = False, clip(f"raised {result['raised']}")
                raised.append(str(result["raised"]))
            else:
                passed, detail = (
                    False,
                    clip(
                        f"returned a non-plain value: {result.get('bad_type', '?')}"
                        if isinstance(result, dict)
                        else "malformed result"
                    ),
                )
            outcomes.append(TestOutcome(name, passed, detail))
        if "MemoryError" in raised:
            error_class = ErrorClass.MEMORY
        elif raised:
            error_class = ErrorClass.RUNTIME_ERROR
        else:
            error_class = ErrorClass.WRONG_ANSWER
        return tests_verdict(outcomes, error_class, partial_credit=self.partial_credit)
