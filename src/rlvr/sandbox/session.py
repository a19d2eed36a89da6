"""DANGER: a long-lived untrusted process in the sandbox, talked to over its stdin and stdout.

A proof checker such as ``coqtop`` pays seconds to load its libraries (``Require Import Lia``: 3-4 s
on 2 cores) and then checks a proof in milliseconds, so starting it per check wastes almost all of
the time. ``SandboxSession`` starts one command in a sandbox fenced exactly as ``run_untrusted``'s
(``bwrap._bwrap_argv``: namespaces, read-only root, private tmpfs, cleared environment, seccomp,
rlimits, an unprivileged uid of its own) and keeps it: the caller writes input and reads output up
to a marker it chose, under a wall-clock deadline per exchange. On a deadline, an output cap, or
the process ending, the whole pid namespace is killed and the session is dead; the caller starts a
new one. RLIMIT_CPU counts the whole session, so ``limits.cpu_s`` is its lifetime budget: callers
retire a session before it runs out (the coq verifier reads the process's CPU time and address
space from /proc after each check).

What the command keeps between exchanges is the caller's concern: the checker's own state must be
reset between checks (``Reset`` to a per-check mark for coqtop, then probes that the state is the
one the reset promises), and nothing of one check's input may be able to change that reset.
"""

from __future__ import annotations

import os
import secrets
import selectors
import subprocess
import time

from rlvr.sandbox.bwrap import (
    SANDBOX_UIDS,
    BwrapFds,
    SandboxLimits,
    SandboxUnavailable,
    _bwrap_argv,
    find_host,
    memfd,
    open_seccomp_filter,
    read_init_pidfd,
    start_bwrap,
    stop,
)


class SessionEnded(RuntimeError):
    """The session is dead: its process ended, overran a deadline or its output cap; ``reason`` says which."""

    def __init__(self, reason: str, output: bytes) -> None:
        super().__init__(reason)
        self.reason = reason
        self.output = output


class SandboxSession:
    """One sandboxed process with stdin and merged stdout/stderr pipes (see the module docstring)."""

    def __init__(
        self,
        command: list[str],
        *,
        limits: SandboxLimits,
        files: dict[str, bytes] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``files`` (absolute paths under /sandbox or /tmp -> content) and ``env`` as for ``run_untrusted``."""
        host = find_host()
        self.limits = limits
        file_fds = {dest: memfd(dest, data) for dest, data in (files or {}).items()}
        info_r, info_w = os.pipe()
        seccomp_fd = open_seccomp_filter()
        uid = SANDBOX_UIDS[secrets.randbelow(len(SANDBOX_UIDS))]
        fds = BwrapFds(info_w, seccomp_fd)
        argv = _bwrap_argv(host, limits, file_fds, fds, uid, dict(env or {})) + list(command)
        passed = [*file_fds.values(), info_w, seccomp_fd]
        try:
            self.proc = start_bwrap(argv, pass_fds=passed, stdin=subprocess.PIPE, stderr=subprocess.STDOUT)
        except SandboxUnavailable:
            os.close(info_r)
            raise
        finally:
            for fd in passed:
                os.close(fd)
        self.init_pidfd = read_init_pidfd(info_r)
        os.close(info_r)
        if self.init_pidfd is None:
            output = self.proc.stdout.read() if self.proc.stdout else b""
            self.proc.wait()
            raise SandboxUnavailable(f"bubblewrap could not start the session: {output.decode(errors='replace')[:300]}")
        self.alive = True

    def exchange(self, text: str, marker: bytes, timeout_s: float) -> bytes:
        """Write ``text``, then read until ``marker`` has appeared and its line has ended; returns
        everything read. Raises SessionEnded (the session then is dead) on a deadline, the output
        cap, or the process ending first."""
        if not self.alive:
            raise SessionEnded("the session has ended", b"")
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            raise SessionEnded("the process ended", b"") from None
        output = bytearray()
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                found = output.find(marker)
                if found >= 0 and b"\n" in output[found:]:
                    return bytes(output)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.close()
                    raise SessionEnded(f"no answer within {timeout_s:g} s", bytes(output))
                if not selector.select(timeout=remaining):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.close()
                    raise SessionEnded("the process ended", bytes(output))
                output += chunk
                if len(output) > self.limits.output_bytes:
                    self.close()
                    raise SessionEnded(f"output over {self.limits.output_bytes} bytes", bytes(output))

    def close(self) -> None:
        """Kill the pid namespace (everything the command started) and reap bwrap."""
        if not self.alive:
            return
        self.alive = False
        stop(self.proc, self.init_pidfd)
