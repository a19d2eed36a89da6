"""What every verifier that runs code in the sandbox shares: a self-check before the first
verdict, and the timing of each verification.

A known-good answer runs once per verifier instance. If it does not pass, the sandbox or the
driver is broken, and every completion gets that ``error`` (or ``unavailable``) result instead of
a silent fail: a broken harness must never read as wrong answers (DESIGN.md, "Verifier results").
"""

from __future__ import annotations

import json
import signal
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

from rlvr.sandbox import SandboxLimits, SandboxRun
from rlvr.types import ErrorClass, Query, TestOutcome, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import BaseVerifier, extract_code

Criteria = TypeVar("Criteria")


def _copy(result: VerifierResult) -> VerifierResult:
    return VerifierResult(result.verdict, 0.0, result.error_class, result.detail)


def fail(error_class: ErrorClass, detail: str, tests: list[TestOutcome] | None = None) -> VerifierResult:
    return VerifierResult(Verdict.FAIL, 0.0, error_class, detail, tests or [])


class SandboxedVerifier(BaseVerifier):
    self_check: tuple[Query, str]
    """(query, known-good completion) run once before the first real verification."""
    limits: SandboxLimits

    _broken: VerifierResult | None = None
    _checked: bool = False

    @abstractmethod
    def _verify(self, query: Query, completion: str) -> VerifierResult:
        """Judge one completion (no self-check, no timing)."""

    def _verify_many(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        """Judge several completions; verifiers with a sandbox pool run them side by side."""
        return [self._verify(query, completion) for query, completion in items]

    def _self_check(self) -> VerifierResult | None:
        """None if the known-good answer passes, else the result every completion should get."""
        if not self._checked:
            self._checked = True
            result = self._verify(*self.self_check)
            if result.verdict is Verdict.UNAVAILABLE:
                self._broken = result
            elif result.verdict is not Verdict.PASS:
                detail = f"sandbox self-check failed ({result.error_class.value}: {result.detail})"
                self._broken = VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
        return self._broken

    def _screen(self, query: Query, completion: str) -> VerifierResult | None:
        """The result when the row or the completion decides without running anything (a bad row,
        no code, a refused proof), else None. It runs before the self-check, in ``verify`` and
        ``verify_batch`` alike, so it holds whether or not the sandbox or a toolchain works: a
        completion never turns its own fail into ``unavailable`` or ``error``."""
        return None

    def verify(self, query: Query, completion: str) -> VerifierResult:
        started = time.perf_counter()
        result = self._screen(query, completion)
        if result is None:
            broken = self._self_check()
            result = _copy(broken) if broken is not None else self._verify(query, completion)
        result.elapsed_s = time.perf_counter() - started
        return result

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        screened = [self._screen(query, completion) for query, completion in items]
        to_run = [item for item, result in zip(items, screened) if result is None]
        if to_run:
            broken = self._self_check()
            ran = iter([_copy(broken) for _ in to_run] if broken is not None else self._verify_many(to_run))
        return [result if result is not None else next(ran) for result in screened]

    def _criteria_and_code(
        self, query: Query, completion: str, parse: Callable[[dict[str, Any]], Criteria], language: str
    ) -> tuple[Criteria, str] | VerifierResult:
        """(criteria, code) to run, or the result that decides without a run: a row whose criteria do
        not parse is the dataset's fault (``error``), a completion with no code is ``no_answer``."""
        try:
            criteria = parse(query.verifier)
        except ValueError as error:
            detail = f"query {query.id!r} has bad {self.name} criteria: {error}"
            return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
        code = extract_code(completion, language)
        if not code.strip():
            return fail(ErrorClass.NO_ANSWER, "no code in completion")
        return criteria, code

    def _frame_or_failure(self, run: SandboxRun, nonce: str) -> tuple[dict[str, Any], VerifierResult | None]:
        """The driver's result frame, or the failure that decides the verdict before any result is read:
        wall-clock timeout, output limit, no intact frame, or code that does not parse."""
        if run.infrastructure_error:
            return {}, VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, run.infrastructure_error)
        if run.timed_out:
            return {}, fail(ErrorClass.TIMEOUT, f"killed after {self.limits.wall_s:g} s wall clock")
        if run.output_truncated:
            return {}, fail(ErrorClass.OUTPUT_LIMIT, f"killed: {run.killed_reason}")
        frame = read_frame(run.channel, nonce)
        if frame is None:
            return {}, fail(*classify_silent_death(run))
        if frame.get("status") == "syntax_error":
            return frame, fail(ErrorClass.SYNTAX_ERROR, clip(str(frame.get("detail", ""))))
        return frame, None


def raised_before_tests(frame: dict[str, Any], statuses: tuple[str, ...]) -> VerifierResult | None:
    """The fail for a driver frame whose status says the code raised before any test could run
    (``import_raised`` and the driver's own such statuses): memory or runtime error; else None."""
    status = frame.get("status")
    if status not in statuses:
        return None
    raised = str(frame.get("detail", ""))
    error_class = ErrorClass.MEMORY if raised == "MemoryError" else ErrorClass.RUNTIME_ERROR
    return fail(error_class, clip(f"{status}: {raised}"))


def read_frame(channel: bytes, nonce: str) -> dict[str, Any] | None:
    """The driver's single JSON frame if it is intact and carries this run's nonce, else None."""

    def reject_constant(name: str) -> None:
        raise ValueError(f"{name} is not plain JSON")

    try:
        frame = json.loads(channel.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(frame, dict) or frame.get("nonce") != nonce:
        return None
    return frame


def classify_silent_death(run: SandboxRun) -> tuple[ErrorClass, str]:
    """No result frame: say why as well as the run lets us tell. Never a pass."""
    if run.signal == signal.SIGXCPU:
        return ErrorClass.TIMEOUT, "killed at the CPU-time limit"
    if b"MemoryError" in run.stderr:
        return ErrorClass.MEMORY, "ran out of memory before returning results"
    return ErrorClass.PROTOCOL_VIOLATION, f"no result frame (exit status {run.exit_code})"
