"""A small pool of persistent worker processes with a hard wall-clock limit per job.

It sits below tasks/ and verifiers/ (tests/test_imports.py): the verifiers judge in it, and task
sources that must run third-party code out of the trainer's process (task.name=verifiers loads
an environment) use it too.

Why processes and not threads: math-verify (and sympy under it) can spin for minutes on a
pathological answer such as ``9^{9^{9^{9}}}``, and its own timeout is ``signal.alarm``, which only
works in the main thread of the main interpreter and cannot interrupt C code
(math_verify/utils.py, ``timeout``). A job that overruns here is ended the only reliable way:
the worker is SIGKILLed and a fresh one takes its place.

This module is imported by every worker, so it imports only the standard library (no torch:
``rlvr.types`` pulls torch in, which costs seconds and hundreds of MB per worker).

Outcomes say what happened, never a bare failure, and whether the job is to blame:

- ``ok``: the job returned a value.
- ``raised``: the job raised. The worker is then retired and a fresh one started, because a job
  that raised may have left its process half-broken: after z3 runs out of memory, every later z3
  call in that process raised "out of memory" too. A restart (z3 imported and warmed up) took
  1.0-1.3 s on 2 cores, paid only after a raise; jobs that merely fail should return, not raise.
- ``timeout``: the job overran ``timeout_s``; its worker was killed and replaced.
- ``died``: the worker process ended while running the job; ``exitcode`` says how (z3 exits with
  101 when it cannot allocate, a C parser can segfault). Usually the job's doing, except a
  SIGKILL (-9): that comes from outside, e.g. the OOM killer, since the pool's own kills are
  timeouts.
- ``crashed``: the pool failed before the job ran (a worker that could not start, or that was
  found dead before the job was sent): an infrastructure failure for the caller to report.
"""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import resource
import signal
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Literal

StartMethod = Literal["spawn", "forkserver"]
OutcomeStatus = Literal["ok", "raised", "timeout", "died", "crashed"]

MAX_START_FAILURES = 3
"""Consecutive failed worker starts after which a batch gives up on its unsent jobs."""


@dataclass
class JobOutcome:
    """What became of one job sent to the pool."""

    status: OutcomeStatus
    value: Any = None
    """The job's return value when status is "ok"."""
    detail: str = ""
    """One line for people when status is not "ok"."""
    elapsed_s: float = 0.0
    """From sending the job to its result (or to the kill)."""
    exception: str = ""
    """Class name of what the job raised when status is "raised", e.g. "MemoryError"."""
    exitcode: int | None = None
    """How the worker ended when status is "died": an exit status, or minus a signal number."""

    @property
    def caused_by_job(self) -> bool:
        """The job raised, or its worker died while running it by anything but a SIGKILL from
        outside (the host's OOM killer; the pool's own kills are timeouts): what went wrong follows
        the job's input, so a verifier makes it that answer's fail, never an ``error``."""
        return self.status in ("raised", "died") and self.exitcode != -signal.SIGKILL


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    started_at: float
    ready: bool = False
    job: int | None = None
    """Index (in the current batch) of the job this worker is running, if any."""
    sent_at: float = 0.0


Job = Callable[..., Any] | str
"""A module-level function, or its "package.module:function" name: with a name, the parent never
imports the job's module (math-verify pulls in sympy: a second and ~50 MB the trainer can skip)."""


def resolve_job(job: Job) -> Callable[..., Any]:
    if callable(job):
        return job
    module_name, _, function_name = job.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def _worker_main(
    conn: Connection,
    job_ref: Job,
    warmup: tuple[Any, ...] | None,
    memory_limit_mb: int | None,
) -> None:
    """Body of a worker process: answer ``job(*args)`` for each message until the pipe closes."""
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when workers end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if memory_limit_mb is not None:
            limit = memory_limit_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        job = resolve_job(job_ref)
        if warmup is not None:
            job(*warmup)  # first call loads parsers/grammars; keep it off the first job's clock
    except Exception as error:
        conn.send(("startup_error", f"{type(error).__name__}: {error}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            args = conn.recv()
        except EOFError:  # the parent closed the pipe or died
            return
        try:
            message = ("ok", job(*args))
        except Exception as error:
            message = ("raised", (type(error).__name__, f"{type(error).__name__}: {error}"))
        conn.send(message)


def _describe_exit(process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "still running"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


class WorkerPool:
    """``size`` persistent processes running ``job(*args)``, each under ``timeout_s`` of wall clock.

    Workers start lazily on the first job (or on ``start()``), so creating a pool is free. ``job``
    is a module-level function (pickled by name) or its "module:function" name; every worker
    imports its module, so that module should be cheap to import. ``warmup`` args, if given, are
    run once before a worker reports ready, off any job's clock. ``memory_limit_mb`` caps each
    worker's address space (RLIMIT_AS) so that a runaway job fails inside its worker instead of
    waking the OOM killer, which may pick the trainer; None lifts the cap. A worker whose job
    raised, overran or died is replaced before the next job (module docstring).

    ``close()`` stops the workers; a later job starts fresh ones. Pools still open at interpreter
    exit are closed by an ``atexit`` hook. Safe to share between threads (one batch at a time).
    """

    def __init__(
        self,
        job: Job,
        *,
        size: int = 2,
        timeout_s: float = 2.0,
        startup_timeout_s: float = 60.0,
        start_method: StartMethod = "forkserver",
        memory_limit_mb: int | None = 4096,
        warmup: tuple[Any, ...] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.job = job
        self.size = size
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.memory_limit_mb = memory_limit_mb
        self.warmup = warmup
        # 'forkserver' or 'spawn', never 'fork': forking a trainer that holds torch/OpenMP threads
        # can deadlock the child. forkserver re-imports the parent's __main__ once per server
        # rather than once per worker, which keeps worker restarts cheap. Both re-import the
        # main script, so it needs the usual ``if __name__ == "__main__":`` guard.
        self._context = multiprocessing.get_context(start_method)
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._start_failures = 0
        self._last_start_error = ""
        _OPEN_POOLS.add(self)

    # -- public -------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return bool(self._workers)

    def pids(self) -> list[int]:
        """Process ids of the current workers (empty until the pool starts)."""
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    def start(self) -> None:
        """Start the workers now and wait until they are ready (otherwise the first job does)."""
        with self._lock:
            self._run_batch([], until_ready=True)
            if not self._all_ready():
                raise RuntimeError(f"worker processes fail to start ({self._last_start_error})")

    def run(self, *args: Any) -> JobOutcome:
        return self.run_batch([args])[0]

    def run_batch(self, jobs: Sequence[tuple[Any, ...]]) -> list[JobOutcome]:
        """Run ``job(*args)`` for each args tuple, ``size`` at a time; outcomes in input order."""
        with self._lock:
            return self._run_batch(jobs)

    def close(self) -> None:
        with self._lock:
            self._kill_all()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- scheduling ---------------------------------------------------------------------------

    def _run_batch(self, jobs: Sequence[tuple[Any, ...]], until_ready: bool = False) -> list[JobOutcome]:
        outcomes: list[JobOutcome | None] = [None] * len(jobs)
        pending = deque(range(len(jobs)))
        self._start_failures = 0
        while len(self._workers) < self.size:
            self._workers.append(self._spawn())
        while pending or self._busy() or (until_ready and not self._all_ready()):
            self._dispatch(pending, jobs, outcomes)
            if self._start_failures >= MAX_START_FAILURES:
                self._give_up(pending, outcomes)
                if not self._busy():
                    break
            self._wait_and_collect(outcomes)
        finished = [outcome for outcome in outcomes if outcome is not None]
        assert len(finished) == len(jobs), "every job ends with an outcome"
        return finished

    def _busy(self) -> bool:
        return any(w.job is not None for w in self._workers)

    def _all_ready(self) -> bool:
        return all(w.ready for w in self._workers)

    def _dispatch(self, pending: deque[int], jobs: Sequence[tuple], outcomes: list) -> None:
        for i, worker in enumerate(self._workers):
            if not (pending and worker.ready and worker.job is None):
                continue
            index = pending.popleft()
            worker.job, worker.sent_at = index, time.monotonic()
            try:
                worker.conn.send(jobs[index])
            except OSError:  # broken pipe: the worker died while idle
                outcomes[index] = self._crash_outcome(worker)
                self._workers[i] = self._replace(worker)

    def _give_up(self, pending: deque[int], outcomes: list) -> None:
        detail = f"worker processes fail to start ({self._last_start_error})"
        while pending:
            outcomes[pending.popleft()] = JobOutcome("crashed", detail=detail)

    def _deadline(self, worker: _Worker) -> float:
        if worker.job is not None:
            return worker.sent_at + self.timeout_s
        return worker.started_at + self.startup_timeout_s

    def _wait_and_collect(self, outcomes: list) -> None:
        waiting = [i for i, w in enumerate(self._workers) if not w.ready or w.job is not None]
        if not waiting:
            return
        next_deadline = min(self._deadline(self._workers[i]) for i in waiting)
        timeout = max(0.0, next_deadline - time.monotonic())
        readable = wait([self._workers[i].conn for i in waiting], timeout)
        for i in waiting:  # each index is handled once, so self._workers[i] is still that worker
            if self._workers[i].conn in readable:
                self._receive(i, outcomes)
            elif time.monotonic() >= self._deadline(self._workers[i]):
                self._expire(i, outcomes)

    def _receive(self, i: int, outcomes: list) -> None:
        worker = self._workers[i]
        try:
            kind, payload = worker.conn.recv()
        except (EOFError, OSError):  # the worker died: OOM killer, segfault, os._exit ...
            if worker.job is not None:
                outcomes[worker.job] = self._died_outcome(worker)
            else:
                self._note_start_failure(f"worker died while starting, {self._exit_of(worker)}")
            self._workers[i] = self._replace(worker)
            return
        if kind == "ready":
            worker.ready, self._start_failures = True, 0
        elif kind == "startup_error":
            self._note_start_failure(payload)
            self._workers[i] = self._replace(worker)
        elif kind == "ok":
            outcomes[worker.job] = JobOutcome("ok", payload, elapsed_s=time.monotonic() - worker.sent_at)
            worker.job = None
        else:  # "raised": retire the worker, so that nothing the job left behind meets the next one
            name, text = payload
            elapsed = time.monotonic() - worker.sent_at
            outcomes[worker.job] = JobOutcome("raised", None, f"job raised {text}", elapsed, exception=name)
            self._workers[i] = self._replace(worker)

    def _expire(self, i: int, outcomes: list) -> None:
        worker = self._workers[i]
        if worker.job is not None:
            detail = f"no result within {self.timeout_s:g} s; worker killed and replaced"
            outcomes[worker.job] = JobOutcome("timeout", detail=detail, elapsed_s=self.timeout_s)
        else:
            self._note_start_failure(f"worker not ready within {self.startup_timeout_s:g} s")
        self._workers[i] = self._replace(worker)

    def _note_start_failure(self, message: str) -> None:
        self._start_failures += 1
        self._last_start_error = message

    def _crash_outcome(self, worker: _Worker) -> JobOutcome:
        """The worker was dead before the job reached it: the pool's failure, not the job's."""
        detail = f"worker process died before the job was sent ({self._exit_of(worker)})"
        return JobOutcome("crashed", detail=detail)

    def _died_outcome(self, worker: _Worker) -> JobOutcome:
        elapsed = time.monotonic() - worker.sent_at
        detail = f"worker process died during the job ({self._exit_of(worker)})"
        return JobOutcome("died", detail=detail, elapsed_s=elapsed, exitcode=worker.process.exitcode)

    # -- process lifecycle --------------------------------------------------------------------

    def _spawn(self) -> _Worker:
        parent_conn, child_conn = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main,
            args=(child_conn, self.job, self.warmup, self.memory_limit_mb),
            name="rlvr-verifier-worker",
            daemon=True,
        )
        process.start()
        child_conn.close()  # so that the worker's death reads as EOF on parent_conn
        return _Worker(process, parent_conn, started_at=time.monotonic())

    def _exit_of(self, worker: _Worker) -> str:
        worker.process.join(timeout=1.0)
        return _describe_exit(worker.process)

    def _replace(self, worker: _Worker) -> _Worker:
        self._kill(worker)
        return self._spawn()

    @staticmethod
    def _kill(worker: _Worker) -> None:
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=5.0)
        worker.conn.close()

    def _kill_all(self) -> None:
        for worker in self._workers:
            self._kill(worker)
        self._workers = []


_OPEN_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


@atexit.register
def _close_open_pools() -> None:
    """Kill every pool's workers at interpreter exit (no lock: no batch runs at that point)."""
    for pool in list(_OPEN_POOLS):
        pool._kill_all()
