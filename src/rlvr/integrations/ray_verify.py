"""Verification on a Ray cluster: ``verify_batch`` fans chunks of completions out as Ray tasks.

Each task runs rlvr's registered verifier for the rows' type inside a Ray worker process, so the
untrusted code still runs only in rlvr's bubblewrap sandbox (each worker keeps its own pre-forked
sandbox pool between tasks). A task is a pure function of its inputs (queries and completions in,
results out), so Ray may rerun it: a worker that dies (killed, out of memory, node lost) has its
task retried on another worker up to ``max_retries`` times, and the driver takes exactly one
result per ObjectRef, so no completion is lost or counted twice. A chunk that still cannot be
judged comes back as verdict ``error`` / ``infrastructure`` for each of its completions: counted as
unscorable, never a reward of 0.

Use it through ``RewardFunction(verifier_for=RayVerifiers())`` after ``ray.init(...)``.
"""

from __future__ import annotations

import os
from typing import Any

from rlvr.errors import UserError
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.base import BaseVerifier


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("the Ray verifier backend needs ray: .venv/bin/pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        raise UserError("start Ray before building a RayVerifier: ray.init() (local) or ray.init(address=...)")
    return ray


def ray_verifiers_for_run(address: str) -> RayVerifiers:
    """``reward.backend=ray``: join the cluster at ``address`` (empty: a running local one, or start
    one) and return the ``verifier_for`` that sends verification there."""
    try:
        import ray
    except ImportError:
        raise UserError("reward.backend=ray needs ray: .venv/bin/pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    return RayVerifiers()


def verify_chunk(type_name: str, items: list[tuple[Query, str]]) -> tuple[int, list[VerifierResult]]:
    """Runs in a Ray worker: (the worker's pid, results) from the worker's own registered verifier."""
    from rlvr.verifiers.registry import get_verifier

    return os.getpid(), get_verifier(type_name).verify_batch(items)


class RayVerifier(BaseVerifier):
    """The registered verifier ``type_name``, run as Ray tasks of ``chunk_size`` completions."""

    def __init__(self, type_name: str, *, chunk_size: int = 16, max_retries: int = 3) -> None:
        if chunk_size < 1 or max_retries < 0:
            raise ValueError(f"chunk_size must be >= 1 and max_retries >= 0, got {chunk_size}, {max_retries}")
        self.ray = _ray()
        self.name, self.chunk_size = type_name, chunk_size
        self._task = self.ray.remote(verify_chunk).options(max_retries=max_retries, retry_exceptions=False)
        self.last_worker_pids: list[int | None] = []
        """Diagnostics: the worker that judged each chunk of the last batch (None: none could)."""

    def verify(self, query: Query, completion: str) -> VerifierResult:
        return self.verify_batch([(query, completion)])[0]

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        chunks = [items[start : start + self.chunk_size] for start in range(0, len(items), self.chunk_size)]
        refs = [self._task.remote(self.name, chunk) for chunk in chunks]
        results: list[VerifierResult] = []
        self.last_worker_pids = []
        for chunk, ref in zip(chunks, refs, strict=True):
            try:
                pid, chunk_results = self.ray.get(ref)
            except (
                self.ray.exceptions.WorkerCrashedError,
                self.ray.exceptions.NodeDiedError,
                self.ray.exceptions.OutOfMemoryError,
            ) as error:  # retries used up: unjudged, not wrong
                pid, chunk_results = None, [_lost(error)] * len(chunk)
            if len(chunk_results) != len(chunk):
                raise RuntimeError(f"a Ray verify task returned {len(chunk_results)} results for {len(chunk)} items")
            self.last_worker_pids.append(pid)
            results.extend(chunk_results)
        return results


class RayVerifiers:
    """``verifier_for`` of a RewardFunction: one RayVerifier per type name, built on first use."""

    def __init__(self, *, chunk_size: int = 16, max_retries: int = 3) -> None:
        self.chunk_size, self.max_retries = chunk_size, max_retries
        self._verifiers: dict[str, RayVerifier] = {}

    def __call__(self, type_name: str) -> RayVerifier:
        from rlvr.verifiers.registry import UnknownVerifierError, known_types

        if type_name not in known_types():
            raise UnknownVerifierError(type_name)
        if type_name not in self._verifiers:
            self._verifiers[type_name] = RayVerifier(
                type_name, chunk_size=self.chunk_size, max_retries=self.max_retries
            )
        return self._verifiers[type_name]


def _lost(error: Exception) -> VerifierResult:
    detail = f"Ray worker lost after all retries: {str(error).strip().splitlines()[0][:200]}"
    return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
