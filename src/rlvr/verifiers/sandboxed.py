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
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxRun
from rlvr.types import ErrorClass, Query, TestOutcome, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import BaseVerifier, Criteria, extract_code, fail, parse_criteria, verifier_error


def _copy(result: VerifierResult) -> VerifierResult:
    return VerifierResult(result.verdict, 0.0, result.error_class, result.detail)


class SandboxedVerifier(BaseVerifier):
    self_check: tuple[Query, str]
    """(query, known-good completion) run once before the first real verification."""
    limits: SandboxLimits

    _broken: VerifierResult | None = None
    _checked: bool = False

    @abstractmethod
    def _prepare(self, query: Query, completion: str) -> VerifierResult | Any:
        """What ``_run_prepared`` runs (criteria and code or proof), or the result when the row or
        the completion decides without running anything: a bad row, no code, a refused proof."""

    @abstractmethod
    def _run_prepared(self, query: Query, prepared: Any) -> VerifierResult:
        """DANGER: run what ``_prepare`` gave in the sandbox, and judge it."""

    def _run_many(self, jobs: list[tuple[Query, Any]]) -> list[VerifierResult]:
        """``_run_prepared`` on each (query, prepared); verifiers with a sandbox pool run them side by side."""
        return [self._run_prepared(query, prepared) for query, prepared in jobs]

    def _verify(self, query: Query, completion: str) -> VerifierResult:
        """Judge one completion (no self-check, no timing); the self-check comes here unscreened."""
        return self._verify_many([(query, completion)])[0]

    def _verify_many(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        """Judge several completions: ``_prepare`` each, then ``_run_many`` what is left to run."""
        prepared = [self._prepare(query, completion) for query, completion in items]
        jobs = [(query, job) for (query, _), job in zip(items, prepared) if not isinstance(job, VerifierResult)]
        ran = iter(self._run_many(jobs) if jobs else [])
        return [job if isinstance(job, VerifierResult) else next(ran) for job in prepared]

    def _self_check(self) -> VerifierResult | None:
        """None if the known-good answer passes, else the result every completion should get."""
        if not self._checked:
            self._checked = True
            result = self._verify(*self.self_check)
            if result.verdict is Verdict.UNAVAILABLE:
                self._broken = result
            elif result.verdict is not Verdict.PASS:
                detail = f"sandbox self-check failed ({result.error_class.value}: {result.detail})"
                self._broken = verifier_error(detail)
        return self._broken

    def _screen(self, query: Query, completion: str) -> VerifierResult | None:
        """``_prepare``'s result when it decides without a run, else None. It runs before the
        self-check, in ``verify`` and ``verify_batch`` alike, so it holds whether or not the sandbox
        or a toolchain works: a completion never turns its own fail into ``unavailable`` or ``error``."""
        prepared = self._prepare(query, completion)
        return prepared if isinstance(prepared, VerifierResult) else None

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

    answer_noun: str = "code"
    """What ``_answer`` takes from a completion, as a "no ... in completion" fail names it."""
    language: str = "python"
    """The fenced-block language ``_answer`` looks for (``extract_code``)."""

    def _answer(self, completion: str) -> str:
        """What runs: the completion's code (``extract_code``); the provers take a proof instead."""
        return extract_code(completion, self.language)

    def _criteria_and_answer(
        self, query: Query, completion: str, parse: Callable[[dict[str, Any]], Criteria]
    ) -> tuple[Criteria, str] | VerifierResult:
        """(criteria, code or proof) to run, or the result that decides without a run: a row whose
        criteria do not parse is the dataset's fault (``error``), a completion with nothing to run
        is ``no_answer``."""
        criteria = parse_criteria(query, parse, self.name)
        if isinstance(criteria, VerifierResult):
            return criteria
        answer = self._answer(completion)
        if not answer.strip():
            return fail(ErrorClass.NO_ANSWER, f"no {self.answer_noun} in completion")
        return criteria, answer

    def _test_results(
        self,
        run: SandboxRun,
        nonce: str,
        decided: Callable[[dict[str, Any]], VerifierResult | None],
        well_formed: Callable[[list[Any]], bool],
    ) -> list[Any] | VerifierResult:
        """The driver's per-test results, or the result that decides without them: the run's own
        failure (``_frame_or_failure``), what ``decided`` reads in the frame before any test ran (code
        that raised on import, a compile error), or a frame that is not status "ok" with a list of
        results ``well_formed`` accepts (``protocol_violation``)."""
        frame, failure = self._frame_or_failure(run, nonce)
        if failure is None:
            failure = decided(frame)
        if failure is not None:
            return failure
        results = frame.get("results")
        if frame.get("status") != "ok" or not isinstance(results, list) or not well_formed(results):
            return fail(ErrorClass.PROTOCOL_VIOLATION, "result channel frame is malformed")
        return results

    def _frame_or_failure(self, run: SandboxRun, nonce: str) -> tuple[dict[str, Any], VerifierResult | None]:
        """The driver's result frame, or the failure that decides the verdict before any result is read:
        wall-clock timeout, output limit, no intact frame, or code that does not parse."""
        if run.infrastructure_error:
            return {}, verifier_error(run.infrastructure_error)
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


def tests_verdict(outcomes: list[TestOutcome], error_class: ErrorClass, *, partial_credit: bool) -> VerifierResult:
    """``pass`` when every test passed; else ``fail`` with ``error_class`` (the first failed test's),
    or with ``partial_credit`` and some passed, ``partial`` scored by the share passed. The detail
    counts the passes and names the first failed test."""
    passed_count = sum(outcome.passed for outcome in outcomes)
    summary = f"{passed_count}/{len(outcomes)} tests passed"
    if passed_count == len(outcomes):
        return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, summary, outcomes)
    first_failure = next(outcome for outcome in outcomes if not outcome.passed)
    detail = f"{summary}; {first_failure.name} {first_failure.detail}"
    if partial_credit and passed_count:
        return VerifierResult(Verdict.PARTIAL, passed_count / len(outcomes), error_class, detail, outcomes)
    return VerifierResult(Verdict.FAIL, 0.0, error_class, detail, outcomes)


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
