"""What every verifier that runs code in the sandbox shares: a self-check before the first
verdict, and the timing of each verification.

A known-good answer runs once per verifier instance. If it does not pass, the sandbox or the
driver is broken, and every completion gets that ``error`` (or ``unavailable``) result instead of
a silent fail: a broken harness must never read as wrong answers (DESIGN.md, "Verifier results").
"""

from __future__ import annotations

import time
from abc import abstractmethod

from rlvr.types import ErrorClass, Query, TestOutcome, Verdict, VerifierResult
from rlvr.verifiers.base import BaseVerifier


def fail(error_class: ErrorClass, detail: str, tests: list[TestOutcome] | None = None) -> VerifierResult:
    return VerifierResult(Verdict.FAIL, 0.0, error_class, detail, tests or [])


class SandboxedVerifier(BaseVerifier):
    self_check: tuple[Query, str]
    """(query, known-good completion) run once before the first real verification."""

    _broken: VerifierResult | None = None
    _checked: bool = False

    @abstractmethod
    def _verify(self, query: Query, completion: str) -> VerifierResult:
        """Judge one completion (no self-check, no timing)."""

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

    def verify(self, query: Query, completion: str) -> VerifierResult:
        started = time.perf_counter()
        broken = self._self_check()
        if broken is not None:
            return VerifierResult(broken.verdict, 0.0, broken.error_class, broken.detail)
        result = self._verify(query, completion)
        result.elapsed_s = time.perf_counter() - started
        return result
