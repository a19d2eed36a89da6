"""Programs that read stdin and write stdout, judged on the host by comparing whole outputs.

Rows look like ``{"type": "stdio", "tests": [{"stdin": "1 2\\n", "stdout": "3\\n"}],
"hidden_tests": [...]}``. The code is ``extract_code(completion, "python")``, run as a script
with ``python -I -S`` (standard library only).
All tests of one completion run in ONE sandboxed process (``rlvr.sandbox.run_untrusted``): a
driver (``rlvr/sandbox/stdio_driver.py``) runs the program once per test as a child process with
that test's stdin and returns each test's captured stdout on a private channel. Expected outputs
never enter the sandbox; the host compares.

A test passes iff the program exited with status 0 within its time limit and its normalised
stdout equals the normalised expected stdout exactly (``normalise_output``): line endings
``\\r\\n`` become ``\\n``, trailing whitespace is stripped from every line, and trailing blank
lines are dropped. Nothing else is forgiven: no prefix matching, no zip over the shorter list of
lines, leading whitespace and blank lines in the middle count. The exit status can only fail a
test, never pass one.

Reward is binary by default (``pass`` iff every visible and hidden test passes); with
``partial_credit=True`` a completion that passes some tests gets ``partial`` with that share.
``rlvr.verifiers.c`` reuses all of this with a compile step in front.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import signal
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxRun, SandboxUnavailable, run_untrusted, sandbox_python
from rlvr.types import ErrorClass, Query, TestOutcome, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import fail, unavailable
from rlvr.verifiers.sandboxed import SandboxedVerifier, tests_verdict

DRIVER = resources.files("rlvr.sandbox").joinpath("stdio_driver.py").read_bytes()

DEFAULT_LIMITS = SandboxLimits(wall_s=10.0, cpu_s=3, memory_mb=512, processes=16, output_bytes=1 << 20)
"""Per completion (all its tests together); ``wall_s`` bounds the whole sandbox."""

TEST_TIMEOUT_S = 2.0
"""Wall-clock seconds per test run; after a timeout the remaining tests are not run."""

MAX_STDOUT_BYTES = 64 * 1024
"""Largest stdout kept per test; a program that prints more fails with ``output_limit``."""

STARTUP_MARGIN_S = 1.0
"""Of the sandbox's ``wall_s``, kept back from the driver's budget so that its frame gets out."""


def normalise_output(text: str) -> str:
    """``\\r\\n`` -> ``\\n``, trailing whitespace stripped per line, trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


@dataclass(frozen=True)
class StdioCriteria:
    """The ``verifier`` object of a stdio (or c) row."""

    tests: list[dict[str, str]]
    """Visible and hidden tests together, each {"stdin": ..., "stdout": ...}, visible first."""
    num_visible: int
    flags: list[str] = field(default_factory=list)
    """Compiler flags (c rows only)."""

    @classmethod
    def from_dict(cls, criteria: dict[str, Any], max_stdout: int = MAX_STDOUT_BYTES) -> StdioCriteria:
        """Validated criteria; a ValueError says which key is wrong."""
        visible, hidden = criteria.get("tests"), criteria.get("hidden_tests", [])
        for key, tests in (("tests", visible), ("hidden_tests", hidden)):
            if not isinstance(tests, list) or not all(
                isinstance(t, dict) and isinstance(t.get("stdin"), str) and isinstance(t.get("stdout"), str)
                for t in tests
            ):
                raise ValueError(f'"{key}" must be a list of {{"stdin": "...", "stdout": "..."}}')
        if not visible and not hidden:
            raise ValueError('"tests" is empty: nothing to check the program against')
        for test in [*visible, *hidden]:
            try:
                test["stdin"].encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a stdin is not valid Unicode text (lone surrogate)") from None
            if len(test["stdout"].encode("utf-8", "surrogatepass")) > max_stdout:
                raise ValueError(f"an expected stdout is longer than the {max_stdout}-byte cap per test")
        return cls([*visible, *hidden], len(visible))


@dataclass
class Program:
    """How to run one completion's code inside the sandbox."""

    files: dict[str, bytes]
    run: list[str]
    compile: dict[str, Any] | None = None
    """{"argv": [...], "timeout_s": s} run once before the tests (c), or None."""
    python_syntax: str | None = None
    """A Python file whose syntax the driver checks before running it, or None."""


class StdioVerifier(SandboxedVerifier):
    """Verifier for ``{"type": "stdio", ...}`` rows (Python scripts); one sandbox per completion."""

    name = "stdio"
    language = "python"
    self_check = (
        Query("stdio-self-check", "", {"type": "stdio", "tests": [{"stdin": "2\n", "stdout": "4\n"}]}),
        "print(int(input()) * 2)\n",
    )
    """A known-good answer run once per verifier: if it does not pass, every result is ``error``."""
    default_limits = DEFAULT_LIMITS

    def __init__(
        self,
        *,
        limits: SandboxLimits | None = None,
        test_timeout_s: float = TEST_TIMEOUT_S,
        max_stdout_bytes: int = MAX_STDOUT_BYTES,
        partial_credit: bool = False,
    ) -> None:
        """``limits``: for one completion, all its tests together (default ``default_limits``)."""
        self.limits = self.default_limits if limits is None else limits
        self.test_timeout_s = test_timeout_s
        self.max_stdout_bytes = max_stdout_bytes
        self.partial_credit = partial_credit

    # --- what differs between languages ---------------------------------------------------------

    def criteria(self, verifier: dict[str, Any]) -> StdioCriteria:
        return StdioCriteria.from_dict(verifier, self.max_stdout_bytes)

    def program(self, criteria: StdioCriteria, code: str) -> Program:
        """The files and commands for ``code``; raises SandboxUnavailable if a tool is missing."""
        return Program(
            files={"/sandbox/solution.py": code.encode("utf-8", "replace")},
            run=[sandbox_python(), "-I", "-S", "/sandbox/solution.py"],
            python_syntax="/sandbox/solution.py",
        )

    # --- shared ---------------------------------------------------------------------------------

    def _prepare(self, query: Query, completion: str) -> tuple[StdioCriteria, str] | VerifierResult:
        return self._criteria_and_answer(query, completion, self.criteria)

    def _run_prepared(self, query: Query, prepared: tuple[StdioCriteria, str]) -> VerifierResult:
        criteria, code = prepared
        nonce = secrets.token_hex(16)
        try:
            program = self.program(criteria, code)
            run = self._run(program, criteria, nonce)
        except SandboxUnavailable as error:
            return unavailable(str(error))
        return self._judge(criteria, run, nonce)

    def _run(self, program: Program, criteria: StdioCriteria, nonce: str) -> SandboxRun:
        job = {
            "nonce": nonce,
            "stdins": [test["stdin"] for test in criteria.tests],  # never "stdout"
            "run": program.run,
            "compile": program.compile,
            "python_syntax": program.python_syntax,
            "timeout_s": self.test_timeout_s,
            "max_stdout": self.max_stdout_bytes,
            "budget_s": max(0.5, self.limits.wall_s - STARTUP_MARGIN_S),
        }
        # The channel carries every test's stdout, base64 (4/3) plus a little JSON per test.
        channel_bytes = len(criteria.tests) * (self.max_stdout_bytes * 4 // 3 + 2048) + 8192
        limits = replace(self.limits, output_bytes=max(self.limits.output_bytes, channel_bytes))
        files = {**program.files, "/sandbox/driver.py": DRIVER, "/sandbox/job.json": json.dumps(job).encode()}
        return run_untrusted(
            [sandbox_python(), "-I", "-S", "/sandbox/driver.py"], files=files, limits=limits, channel=True
        )

    def _judge(self, criteria: StdioCriteria, run: SandboxRun, nonce: str) -> VerifierResult:
        results = self._test_results(run, nonce, _compile_failure, lambda results: len(results) == len(criteria.tests))
        return results if isinstance(results, VerifierResult) else self._score(criteria, results)

    def _score(self, criteria: StdioCriteria, results: list[Any]) -> VerifierResult:
        outcomes, classes = [], []
        for index, (test, result) in enumerate(zip(criteria.tests, results)):
            name = f"{'visible' if index < criteria.num_visible else 'hidden'}[{index}]"
            error_class, detail = self._outcome(test["stdout"], result)
            elapsed = result.get("elapsed_s", 0.0) if isinstance(result, dict) else 0.0
            elapsed = float(elapsed) if isinstance(elapsed, int | float) else 0.0
            outcomes.append(TestOutcome(name, error_class is ErrorClass.NONE, detail, elapsed))
            classes.append(error_class)
        first_class = next(
            (error_class for error_class in classes if error_class is not ErrorClass.NONE), ErrorClass.NONE
        )
        return tests_verdict(outcomes, first_class, partial_credit=self.partial_credit)

    def _outcome(self, expected: str, result: Any) -> tuple[ErrorClass, str]:
        """(ErrorClass.NONE, "") if the test passed, else its error class and a few words."""
        if not isinstance(result, dict):
            return ErrorClass.PROTOCOL_VIOLATION, "malformed result"
        if result.get("not_run") is True:
            return ErrorClass.TIMEOUT, "not run: an earlier test ran out of time"
        if result.get("timed_out") is True:
            return ErrorClass.TIMEOUT, f"timed out ({self.test_timeout_s:g} s per test)"
        if result.get("over_cap") is True:
            return ErrorClass.OUTPUT_LIMIT, f"printed over {self.max_stdout_bytes} bytes"
        status = result.get("exit")
        if type(status) is not int:
            return ErrorClass.PROTOCOL_VIOLATION, "malformed result"
        if status != 0:
            return _exit_class(status, str(result.get("stderr_tail", "")))
        try:
            stdout = base64.b64decode(str(result.get("stdout_b64", "")), validate=True)
        except (binascii.Error, ValueError):
            return ErrorClass.PROTOCOL_VIOLATION, "malformed result"
        printed = normalise_output(stdout.decode("utf-8", "surrogateescape"))
        if printed == normalise_output(expected):
            return ErrorClass.NONE, ""
        if not printed:
            return ErrorClass.WRONG_ANSWER, "printed nothing"
        shown = printed.encode("utf-8", "backslashreplace").decode("utf-8")
        return ErrorClass.WRONG_ANSWER, clip(f"printed {json.dumps(shown)}")


def _compile_failure(frame: dict[str, Any]) -> VerifierResult | None:
    """The fail of code that did not compile (c), or whose compiler ran out of time; else None."""
    status = frame.get("status")
    if status == "compile_error":
        return fail(ErrorClass.COMPILE_ERROR, clip(first_error_line(str(frame.get("stderr", ""))), 200))
    if status == "compile_timeout":
        return fail(ErrorClass.TIMEOUT, "the compiler ran out of time")
    return None


def _exit_class(status: int, stderr_tail: str) -> tuple[ErrorClass, str]:
    """A nonzero exit: the signal says timeout or output limit where it can; else runtime error."""
    if status < 0:
        if -status == signal.SIGXCPU:
            return ErrorClass.TIMEOUT, "killed at the CPU-time limit"
        if -status == signal.SIGXFSZ:
            return ErrorClass.OUTPUT_LIMIT, "killed at the file-size limit"
        return ErrorClass.RUNTIME_ERROR, f"killed by signal {-status}"
    if "MemoryError" in stderr_tail:
        return ErrorClass.MEMORY, "MemoryError"
    last_line = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else ""
    return ErrorClass.RUNTIME_ERROR, clip(f"exit status {status}" + (f": {last_line}" if last_line else ""))


def first_error_line(stderr: str) -> str:
    """The compiler's first ``error:`` line (else its first line): what people need to see."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if "error" in line:
            return line
    return lines[0] if lines else "compilation failed"
