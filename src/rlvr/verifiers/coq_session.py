"""DANGER: one long-lived ``coqtop`` in the sandbox (``rlvr.sandbox.session``), kept between checks,
and the measurements that decide when it is replaced.

The coq verifier (``rlvr.verifiers.coq``) owns the protocol; this module starts coqtop, loads a
row's preamble, undoes a check and proves the undo worked by asking ``_PROBES``, and reads the
session's memory and CPU use from /proc on the host.
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass

from rlvr.sandbox import SandboxLimits, SandboxUnavailable
from rlvr.sandbox.session import SandboxSession, SessionEnded
from rlvr.verifiers.coq_report import errors, fingerprint

START_TIMEOUT_S = 60.0
"""For starting coqtop and loading a preamble (``Require Import Reals``: about 1 s alone, more on a busy machine)."""
_PROBES = (
    "Print {base}.\nShow.\nDefinition {probe} := 0.\nLocate {probe}.\nReset {probe}.\nTest Guard Checking.\n"
    "Test Positivity Checking.\nTest Universe Checking.\nPrint Libraries.\nShow Ltac Profile.\n"
)
"""Asked right after the preamble and after each reset, and the answers must be equal: the base
constant defined after the preamble exists, no proof is open (``Show`` errs), a new constant lands
at top level (``Locate`` names no module or section), the kernel's checks are on, the loaded
libraries are the same, and no Ltac profile was recorded (``start ltac profiling`` is a tactic, and
``Reset`` does not stop it)."""


def name(role: str) -> str:
    """A fresh name no proof can know: it is drawn from a CSPRNG after the proof was written."""
    return f"Rlvr_{role}_{secrets.token_hex(8)}"


FINDLIB_CONF = "/sandbox/ocamlfind.conf"
"""coqtop loads its tactic plugins (lia's micromega, ring) through findlib, which reads its
configuration from /etc, and the sandbox has no /etc: the host's file is copied in."""


def findlib_conf() -> bytes:
    try:
        with open("/etc/ocamlfind.conf", "rb") as handle:
            return handle.read()
    except OSError:
        return b'destdir="/usr/lib/ocaml"\npath="/usr/lib/ocaml"\n'


def find_coqtop() -> str:
    found = shutil.which("coqtop", path="/usr/local/bin:/usr/bin:/bin")
    if found is None:
        raise SandboxUnavailable("no Coq: `coqtop` is not on PATH (Debian/Ubuntu: `apt-get install coq`)")
    return found


@dataclass(frozen=True)
class Usage:
    """What the session's largest process holds, read from /proc on the host."""

    address_space_mb: float
    resident_mb: float
    cpu_s: float


def measure(pid: int) -> Usage | None:
    """The largest ``VmSize`` (with its ``VmRSS`` and CPU time) among ``pid`` and its descendants,
    or None when they cannot be read (the session has ended)."""
    best: Usage | None = None
    pending = [pid]
    try:
        while pending:
            current = pending.pop()
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    pending += [int(child) for child in handle.read().split()]
            with open(f"/proc/{current}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
            with open(f"/proc/{current}/stat") as handle:
                ticks = handle.read().rsplit(")", 1)[1].split()[11:13]  # utime, stime
            size_kb = int(fields.get("VmSize", "0 kB").split()[0])
            if best is None or size_kb / 1024 > best.address_space_mb:
                resident_kb = int(fields.get("VmRSS", "0 kB").split()[0])
                cpu_s = sum(map(int, ticks)) / os.sysconf("SC_CLK_TCK")
                best = Usage(size_kb / 1024, resident_kb / 1024, cpu_s)
    except (OSError, ValueError, IndexError):
        return None
    return best


class CoqSession:
    """One sandboxed coqtop, the preamble it has loaded and the answers to ``_PROBES`` right after it."""

    def __init__(self, limits: SandboxLimits, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.process = SandboxSession(
            [find_coqtop(), "-q", "-time"],
            limits=limits,
            files={FINDLIB_CONF: findlib_conf()},
            env={"OCAMLFIND_CONF": FINDLIB_CONF},
        )
        self.preamble: str | None = None
        self.checks = 0
        """Checks begun on this session; a check on a session that served none is on a fresh one."""
        self.base, self.probe, self.expected_state = name("base"), name("probe"), ""
        try:
            self.ask("Set Silent.\n", START_TIMEOUT_S)  # goals are not printed: less output to read
        except SessionEnded as ended:
            raise SandboxUnavailable(f"coqtop did not start in the sandbox: {ended.reason}") from None

    @property
    def alive(self) -> bool:
        return self.process.alive

    def ask(self, text: str, timeout_s: float | None = None) -> tuple[str, str]:
        """Send ``text`` and a marker; (everything printed up to the marker, the marker's name)."""
        marker = name("marker")
        output = self.process.exchange(
            f"{text}Print {marker}.\n", f"Error: {marker} not a defined object.".encode(), timeout_s or self.timeout_s
        )
        return output.decode("utf-8", "replace"), marker

    def load(self, preamble: str) -> str:
        """Load ``preamble`` after ``Reset Initial``; the first error it raised, or ""."""
        self.preamble, self.base = None, name("base")
        output, marker = self.ask(
            f"Reset Initial.\nSet Silent.\n{preamble}\nDefinition {self.base} := 0.\n", START_TIMEOUT_S
        )
        problems = errors(output, marker)
        if problems:
            return problems[0]
        self.expected_state = self.state(name("mark"), "")
        self.preamble = preamble
        return ""

    def state(self, mark: str, reset: str) -> str:
        """The answers to ``_PROBES`` (after ``reset``), with the random names replaced by their roles."""
        probes = _PROBES.format(base=self.base, probe=self.probe)
        output, marker = self.ask(f"{reset}Locate {mark}.\n{probes}")
        return fingerprint(output, {mark: "MARK", marker: "MARKER"})

    def reset(self, mark: str) -> bool:
        """Undo a check back to ``mark``; True if the state then answers as right after the preamble."""
        try:
            return self.alive and self.state(mark, f"Reset {mark}.\n") == self.expected_state
        except SessionEnded:
            return False

    def spent(self, memory_mb: int, recycle_at: float, cpu_budget_s: float) -> bool:
        usage = measure(self.process.proc.pid)
        return usage is None or usage.address_space_mb > recycle_at * memory_mb or usage.cpu_s > cpu_budget_s

    def close(self) -> None:
        self.process.close()
