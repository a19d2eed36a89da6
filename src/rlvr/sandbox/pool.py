"""DANGER: runs untrusted code. Pre-forked sandbox slots: ``SandboxPool.run_batch``.

Starting a bubblewrap sandbox and a Python interpreter costs ~30 ms per check, which caps a
2-core machine at a few dozen checks per second. A pool keeps one sandbox per slot alive; in it a
supervisor (``pool_worker.py``) forks a fenced child per job: a fresh unprivileged uid, rlimits,
no capabilities, no_new_privs, a directory of its own, and after the job every process of it is
killed and every file it wrote is deleted. The slot's sandbox is built by the same
``namespace_argv`` as a fresh run (no network, read-only root, private tmpfs, cleared environment,
new session, dies with its parent). What a job returns comes back as a ``SandboxRun``, so verifiers
judge a pooled run exactly as a fresh one.

Jobs are forked from a zygote that never held another job's files or results, and the seccomp
filter keeps them from making kernel objects that would outlive them (``pool_worker.py``).

A slot whose supervisor stops answering or reports a failure before a job's reply is killed (the
kernel ends its whole pid namespace) and replaced; the job is retried once on a new slot, then
reported as an infrastructure failure (``SandboxRun.infrastructure_error``), never as a verdict.
Cleaning up after a job comes after its reply: a slot that cannot clean, or takes too long, is
retired, and the reply stands, so nothing a job leaves behind can turn its verdict into an error.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import secrets
import selectors
import socket
import struct
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from importlib import resources

from rlvr.sandbox.bwrap import (
    INSTALL_HINT,
    PROC_OPTIONS,
    SANDBOX_UIDS,
    WORKDIR,
    BwrapFds,
    SandboxLimits,
    SandboxRun,
    SandboxUnavailable,
    find_host,
    memfd,
    namespace_argv,
    open_seccomp_filter,
    read_init_pidfd,
    start_bwrap,
    stop,
)
from rlvr.sandbox.seccomp import job_filter

SUPERVISOR = resources.files("rlvr.sandbox").joinpath("pool_worker.py").read_bytes()
JOB_FILTER = base64.b64encode(job_filter()).decode()
"""The second seccomp filter each job loads before its driver runs (seccomp.py ``job_filter``)."""
SUPERVISOR_CAPS = (
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_KILL",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_SYS_ADMIN",
    "CAP_NET_ADMIN",
)
"""All the supervisor keeps (bwrap drops the rest); each job loses them all when it changes uid.
SYS_ADMIN clones each job into namespaces of its own and mounts its tmpfs and /proc; NET_ADMIN
brings up its loopback."""
JOB_LAYERS = ("pid", "ipc", "uts")
"""Namespaces every job is cloned into, besides its own mount namespace (pool_worker.py LAYERS).
Jobs share their slot's network namespace but can make unix sockets only (seccomp.py
``job_filter``), which leave nothing in it; "net", a network namespace per job, is a layer the
throughput benchmark prices."""
KNOWN_LAYERS = (*JOB_LAYERS, "net")
START_GRACE_S = 2.0
"""Beyond a job's own wall clock, how long the supervisor may take to start it and send its reply."""
CLEANUP_GRACE_S = 6.0
"""After a reply, how long the supervisor may take to kill the job's processes and delete its files
(it gives up on the processes at 5 s); past it the slot is retired, and the reply still stands."""
START_TIMEOUT_S = 15.0
MAX_FRAME = 64 << 20


@dataclass(frozen=True)
class PoolJob:
    """One untrusted run: ``driver`` (a name given to the pool) runs in a directory holding ``files``."""

    driver: str
    files: dict[str, str]
    """File name -> text, written into the job's working directory."""
    limits: SandboxLimits


@dataclass
class _Slot:
    proc: subprocess.Popen
    init_pidfd: int | None
    buffer: bytearray = field(default_factory=bytearray)
    job: int | None = None
    """The job it runs, then cleans up after (``cleaning``), until it says it is clean."""
    cleaning: bool = False
    """The job's reply is in; the supervisor is ending its processes and deleting its files."""
    deadline: float = 0.0


class SandboxPool:
    """A fixed number of pre-forked sandbox slots; ``run_batch`` spreads jobs over them."""

    def __init__(
        self,
        drivers: dict[str, bytes],
        *,
        slots: int | None = None,
        tmpfs_mb: int = 64,
        layers: tuple[str, ...] = JOB_LAYERS,
    ) -> None:
        """``drivers`` maps a name to the source of a script that runs inside (see python_driver.py).
        ``layers``: the namespaces each job gets of its own besides its mounts; JOB_LAYERS, except
        in the throughput benchmark, which changes them to price each one."""
        unknown = set(layers) - set(KNOWN_LAYERS)
        if unknown:
            raise ValueError(f"unknown isolation layers {sorted(unknown)}; known: {', '.join(KNOWN_LAYERS)}")
        self.layers = tuple(layers)
        self.drivers = {name: source.decode() for name, source in drivers.items()}
        self.num_slots = slots or max(1, os.cpu_count() or 1)
        self.tmpfs_mb = tmpfs_mb
        self._slots: list[_Slot | None] = [None] * self.num_slots
        self._lock = threading.Lock()  # one batch at a time: slots hold one job each
        weakref.finalize(self, SandboxPool._close_slots, self._slots)
        atexit.register(SandboxPool._close_slots, self._slots)

    def run_batch(self, jobs: list[PoolJob]) -> list[SandboxRun]:
        """Run every job; results in job order. Raises SandboxUnavailable if no slot can start."""
        with self._lock:
            return _Batch(self, jobs).run()

    def close(self) -> None:
        with self._lock:
            SandboxPool._close_slots(self._slots)

    @staticmethod
    def _close_slots(slots: list[_Slot | None]) -> None:
        for index, slot in enumerate(slots):
            if slot is not None:
                _stop(slot)
                slots[index] = None

    def _start_slot(self) -> _Slot:
        host = find_host()
        opened: list[int] = []
        try:
            script = memfd("pool_worker.py", SUPERVISOR)
            info_r, info_w = os.pipe()
            seccomp_fd = open_seccomp_filter()
            # The supervisor's line to its zygote, made here so that it belongs to the host's
            # network namespace: the slot's, which its jobs share, then holds no socket at all.
            zygote_sockets = [sock.detach() for sock in socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)]
            opened += [script, info_r, info_w, seccomp_fd, *zygote_sockets]
            argv = namespace_argv(
                host,
                self.tmpfs_mb,
                {f"{WORKDIR}/pool_worker.py": script},
                BwrapFds(info_w, seccomp_fd),
                {},
                workdir_perms="0755",
            )
            for cap in SUPERVISOR_CAPS:
                argv += ["--cap-add", cap]
            argv += ["--", host.python, "-I", "-S", f"{WORKDIR}/pool_worker.py"]
            passed = [script, info_w, seccomp_fd, *zygote_sockets]
            proc = start_bwrap(argv, pass_fds=passed, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
            os.close(info_w)
            opened.remove(info_w)
            slot = _Slot(proc, read_init_pidfd(info_r))
            for fd in zygote_sockets:  # the slot holds them now
                os.close(fd)
                opened.remove(fd)
            world = {"layers": list(self.layers), "proc_options": PROC_OPTIONS}
            hello = {"drivers": self.drivers, "job_filter": JOB_FILTER, "world": world}
            _send(slot, {**hello, "zygote_sockets": zygote_sockets})
            hello = _receive(slot, time.monotonic() + START_TIMEOUT_S)
            if not (isinstance(hello, dict) and hello.get("ready")):
                _stop(slot)
                stderr = proc.stderr.read(4096).decode(errors="replace").strip() if proc.stderr else ""
                raise SandboxUnavailable(f"a sandbox pool slot did not start: {stderr or 'no answer'}; {INSTALL_HINT}")
            return slot
        finally:
            for fd in opened:
                os.close(fd)


class _Batch:
    """The event loop of one ``run_batch``: hand jobs to idle slots, collect replies, replace broken slots."""

    def __init__(self, pool: SandboxPool, jobs: list[PoolJob]) -> None:
        self.pool, self.jobs = pool, jobs
        self.results: list[SandboxRun | None] = [None] * len(jobs)
        self.pending = list(range(len(jobs)))[::-1]  # popped from the end: job order
        self.tries = [0] * len(jobs)

    def run(self) -> list[SandboxRun]:
        with selectors.DefaultSelector() as selector:
            self.selector = selector
            try:
                while self.pending or any(s is not None and s.job is not None for s in self.pool._slots):
                    self._fill_idle_slots()
                    self._wait_for_frames()
            except BaseException:  # a slot mid-job cannot be trusted with the next batch
                for index, slot in enumerate(self.pool._slots):
                    if slot is not None and slot.job is not None:
                        self._replace(index)
                raise
        return [result for result in self.results if result is not None]

    def _fill_idle_slots(self) -> None:
        for index in range(self.pool.num_slots):
            if not self.pending:
                return
            slot = self.pool._slots[index]
            if slot is not None and slot.job is not None:
                continue
            if slot is not None and slot.proc.poll() is not None:  # died while idle (killed from outside):
                self._replace(index)  # no job's fault, so no job's try
                slot = None
            if slot is None:
                slot = self.pool._slots[index] = self.pool._start_slot()
            job_index = self.pending.pop()
            job = self.jobs[job_index]
            self.tries[job_index] += 1
            frame = {
                "id": job_index,
                "uid": SANDBOX_UIDS[secrets.randbelow(len(SANDBOX_UIDS))],
                "driver": job.driver,
                "files": job.files,
                "wall_s": job.limits.wall_s,
                "limits": {
                    "cpu_s": job.limits.cpu_s,
                    "memory_mb": job.limits.memory_mb,
                    "processes": job.limits.processes,
                    "file_size_mb": job.limits.file_size_mb,
                    "open_files": job.limits.open_files,
                    "output_bytes": job.limits.output_bytes,
                    "tmpfs_mb": job.limits.tmpfs_mb,
                },
            }
            slot.job, slot.cleaning = job_index, False
            slot.deadline = time.monotonic() + job.limits.wall_s + START_GRACE_S
            slot.buffer.clear()
            try:
                _send(slot, frame)
            except OSError:
                self._slot_failed(index, "the slot's supervisor is gone")
                continue
            self.selector.register(slot.proc.stdout.fileno(), selectors.EVENT_READ, index)

    def _wait_for_frames(self) -> None:
        busy = [(i, s) for i, s in enumerate(self.pool._slots) if s is not None and s.job is not None]
        if not busy:
            return
        timeout = max(0.0, min(s.deadline for _, s in busy) - time.monotonic())
        for key, _ in self.selector.select(timeout):
            index = key.data
            slot = self.pool._slots[index]
            chunk = os.read(key.fd, 1 << 20)
            if not chunk:
                self._slot_failed(index, "the slot's supervisor exited")
                continue
            slot.buffer += chunk
            while slot is self.pool._slots[index] and slot.job is not None:
                frame = _take_frame(slot.buffer)
                if frame is None:
                    break
                if slot.cleaning:
                    self._cleaned(index, frame)
                else:
                    self._finish(index, frame)
        now = time.monotonic()
        for index, slot in busy:
            if self.pool._slots[index] is slot and slot.job is not None and now > slot.deadline:
                self._slot_failed(index, "the slot's supervisor did not answer in time")

    def _finish(self, index: int, reply: object) -> None:
        """The job's reply: its result is final, whatever the cleanup after it brings."""
        slot = self.pool._slots[index]
        if not isinstance(reply, dict) or reply.get("id") != slot.job or "broken" in reply:
            detail = reply.get("broken") if isinstance(reply, dict) else None
            self._slot_failed(index, f"the slot's supervisor failed: {detail or 'malformed reply'}")
            return
        self.results[slot.job] = SandboxRun(
            exit_code=reply["exit_code"],
            signal=reply["signal"],
            timed_out=reply["timed_out"],
            output_truncated=reply["output_truncated"],
            stdout=b"",
            stderr=base64.b64decode(reply["stderr"]),
            channel=base64.b64decode(reply["channel"]),
            elapsed_s=reply["elapsed_s"],
            killed_reason=reply["killed_reason"],
            info={"slot": index},
        )
        slot.cleaning, slot.deadline = True, time.monotonic() + CLEANUP_GRACE_S

    def _cleaned(self, index: int, frame: object) -> None:
        """The cleanup report: a clean slot takes the next job; any other is retired, never reused."""
        slot = self.pool._slots[index]
        self.selector.unregister(slot.proc.stdout.fileno())
        clean = isinstance(frame, dict) and frame.get("id") == slot.job and frame.get("clean") is True
        slot.job, slot.cleaning = None, False
        if not clean:
            self._replace(index)

    def _slot_failed(self, index: int, why: str) -> None:
        """The supervisor broke: a job it had not answered is tried again once, then reported as
        an infrastructure failure; a job already answered keeps its result."""
        slot = self.pool._slots[index]
        job_index = None if slot.cleaning else slot.job
        if slot.job is not None:
            try:
                self.selector.unregister(slot.proc.stdout.fileno())
            except (KeyError, ValueError):
                pass
        if job_index is not None:
            if self.tries[job_index] < 2:
                self.pending.append(job_index)
            else:
                self.results[job_index] = SandboxRun(
                    exit_code=None,
                    signal=None,
                    timed_out=False,
                    output_truncated=False,
                    stdout=b"",
                    stderr=b"",
                    infrastructure_error=why,
                )
        self._replace(index)

    def _replace(self, index: int) -> None:
        slot = self.pool._slots[index]
        if slot is not None:
            _stop(slot)
        self.pool._slots[index] = None


def _send(slot: _Slot, body: dict) -> None:
    data = json.dumps(body).encode()
    slot.proc.stdin.write(struct.pack(">I", len(data)) + data)
    slot.proc.stdin.flush()


def _take_frame(buffer: bytearray) -> object | None:
    """The first complete frame in ``buffer`` (removed from it), or None if none is complete yet."""
    if len(buffer) < 4:
        return None
    (length,) = struct.unpack(">I", buffer[:4])
    if length > MAX_FRAME:
        return {"broken": f"reply of {length} bytes"}
    if len(buffer) < 4 + length:
        return None
    body = bytes(buffer[4 : 4 + length])
    del buffer[: 4 + length]
    try:
        return json.loads(body)
    except ValueError:
        return {"broken": "reply is not JSON"}


def _receive(slot: _Slot, deadline: float) -> object | None:
    fd = slot.proc.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (frame := _take_frame(slot.buffer)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            slot.buffer += chunk
    return frame


def _stop(slot: _Slot) -> None:
    """Kill the slot's namespace (every process in it) and wait for bwrap."""
    stop(slot.proc, slot.init_pidfd)
    slot.init_pidfd = None
