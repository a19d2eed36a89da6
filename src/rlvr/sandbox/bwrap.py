"""DANGER: runs untrusted code. The bubblewrap backend, and the only door: ``run_untrusted``.

How one run is fenced (docs/verifiers.md, "The sandbox", lists what each limit means):

- ``bwrap`` starts as root on the host (it needs to see the Python install, which may live under
  a 0700 ``/root``) and builds new mount, pid, network, ipc, uts and cgroup namespaces. The root
  is an empty tmpfs holding read-only binds of ``/usr`` (plus the ``/bin``, ``/lib*`` links) and
  of the Python install prefix, a fresh ``/proc`` for the new pid namespace (only the sandbox's
  processes), a minimal ``/dev``, and size-limited private tmpfs mounts at ``/tmp``, ``/dev/shm``
  and the working directory. No ``/etc``, no ``/home``, no ``/root``, no repository, no network device
  but a down loopback.
- Inside, ``setpriv`` drops to an unprivileged host uid/gid (a fresh random one per run by
  default, no supplementary groups, every capability set emptied, no_new_privs), then execs the
  command. The uid is a real host uid, not root remapped by a user namespace, so that
  ``RLIMIT_NPROC`` binds (the kernel never enforces it for uid 0); a uid of its own per run means
  the process budget is not shared with concurrent sandboxes or with the host's ``nobody``.
- A seccomp filter (``seccomp.py``) denies System V IPC, POSIX message queues, kernel keys and a
  few other kernel interfaces: objects that would outlive the run or escape its memory cap.
- rlimits (CPU seconds, address space, processes, file size, open files, core 0) are set by
  ``prlimit`` before ``bwrap`` runs and are inherited by everything inside.
- The environment is cleared (``--clearenv``); the process gets a new session (no terminal to
  inject keystrokes into) and dies with its parent.
- A wall-clock deadline, and caps on stdout/stderr/the result channel: on breach the namespace's
  init is SIGKILLed; the kernel then kills every process in the pid namespace (daemons that
  called setsid or double-forked included) before ``bwrap`` can reap it, so when this function
  returns nothing from the run is alive.

There is no fallback: if bubblewrap is missing or cannot start, ``SandboxUnavailable`` says so.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.sandbox.seccomp import SeccompUnsupported, sandbox_filter

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`)"

WORKDIR = "/sandbox"
"""The working directory inside the sandbox (a private tmpfs)."""

SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": WORKDIR, "PYTHONDONTWRITEBYTECODE": "1"}
"""The whole environment of a sandboxed process; nothing of the host's leaks in."""


TOOL_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where bwrap, prlimit and setpriv are looked for: fixed, so that a PATH entry cannot swap them."""


SANDBOX_UIDS = range(2_000_000_000, 2_100_000_000)
"""Host uids (and gids) for sandboxed runs: far above any account's, one drawn at random per run."""


class SandboxUnavailable(RuntimeError):
    """No sandbox can run here; the message says why and how to fix it. Never a silent fallback."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run. Each is enforced by the kernel or by the host-side watcher."""

    wall_s: float = 10.0
    """Wall-clock seconds before the whole process tree is killed (``timed_out``)."""
    cpu_s: int = 5
    """RLIMIT_CPU per process: SIGXCPU at this many CPU seconds, SIGKILL one second later."""
    memory_mb: int = 512
    """RLIMIT_AS per process (virtual address space); Python raises MemoryError beyond it."""
    processes: int = 32
    """RLIMIT_NPROC for the sandbox uid: a fork bomb stops here (fork fails with EAGAIN)."""
    file_size_mb: int = 16
    """RLIMIT_FSIZE: the largest file a process may write (SIGXFSZ beyond it)."""
    open_files: int = 64
    """RLIMIT_NOFILE."""
    tmpfs_mb: int = 64
    """Size of each private tmpfs (/tmp and the working directory)."""
    output_bytes: int = 1 << 20
    """Cap per output stream (stdout, stderr, channel); beyond it the run is killed (``output_truncated``)."""


@dataclass
class SandboxRun:
    """What became of one sandboxed command."""

    exit_code: int | None
    """The command's exit status as bwrap reports it (128 + N when killed by signal N)."""
    signal: int | None
    """The signal that ended the command, when bwrap reported 128 + N, or SIGKILL when we killed it."""
    timed_out: bool
    output_truncated: bool
    stdout: bytes
    stderr: bytes
    channel: bytes = b""
    """What the command wrote to the result channel fd (``$RLVR_CHANNEL_FD``), if one was asked for."""
    elapsed_s: float = 0.0
    killed_reason: str = ""
    """Why the host killed the run ("wall-clock timeout", "stdout over 1048576 bytes"), or ""."""
    info: dict = field(default_factory=dict)
    infrastructure_error: str = ""
    """Set when the sandbox itself failed to run the command (a pool slot died twice): no verdict."""


@dataclass(frozen=True)
class _Host:
    bwrap: str
    prlimit: str
    setpriv: str
    mount: str
    sh: str
    python: str
    """The real interpreter (symlinks resolved), run inside the sandbox."""
    binds: tuple[str, ...]
    """Host directories bound read-only at the same path."""
    links: tuple[tuple[str, str], ...]
    """(target, path) symlinks such as ("usr/bin", "/bin") recreated inside."""


_HOST: _Host | None = None


def find_host() -> _Host:
    """Locate bwrap, prlimit, setpriv and the Python install; cached after the first success."""
    global _HOST
    if _HOST is not None:
        return _HOST
    tools = {name: shutil.which(name, path=TOOL_PATH) for name in ("bwrap", "prlimit", "setpriv", "mount", "sh")}
    if tools["bwrap"] is None:
        raise SandboxUnavailable(f"bubblewrap (`bwrap`) is not on PATH: {INSTALL_HINT}")
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise SandboxUnavailable(
            f"{', '.join(missing)} not found: install util-linux and a POSIX sh (`apt-get install util-linux dash`)"
        )
    if os.geteuid() != 0:
        # Without root, bwrap would need a user namespace in which the host uid is the caller's own:
        # RLIMIT_NPROC and the uid drop below rely on starting as root.
        raise SandboxUnavailable(
            "the bubblewrap sandbox must be started as root (it drops to an unprivileged uid inside)"
        )
    python = os.path.realpath(sys.executable)
    binds, links = ["/usr"], []
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            links.append((os.readlink(top), top))
        elif os.path.isdir(top):
            binds.append(top)
    for prefix in {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(python))}:
        if not any(prefix == b or prefix.startswith(b + "/") for b in binds):
            binds.append(prefix)
    _HOST = _Host(
        tools["bwrap"],
        tools["prlimit"],
        tools["setpriv"],
        tools["mount"],
        tools["sh"],
        python,
        tuple(binds),
        tuple(links),
    )
    return _HOST


def sandbox_python() -> str:
    """Path of the Python interpreter inside the sandbox (the host's real one, bound read-only)."""
    return find_host().python


PROC_OPTIONS = "subset=pid,hidepid=invisible"
"""The /proc a run sees: its own processes (none of another uid: not bubblewrap's init) and nothing
else. The rest of
/proc (stat, meminfo, vmstat, loadavg, sys/, ...) is host-wide counters that every process on
the machine moves, and a way for one run to signal a later one (docs/verifiers.md, "Threat model")."""
PROC_READY = b"rlvr-sandbox: /proc is the run's own\n"
"""What the run's shell writes on stderr once its /proc is mounted, before the command starts
(``own_proc``); the host removes it. A run without it never reached its command."""


def _own_proc_argv(host: _Host) -> list[str]:
    """A shell that mounts the run's own /proc (PROC_OPTIONS) over bubblewrap's, says so, and execs
    the rest of the command line; bubblewrap's --proc cannot take mount options."""
    script = f'{host.mount} -n -t proc -o {PROC_OPTIONS} proc /proc || exit 125; printf "%s" "$0" >&2; exec "$@"'
    return [host.sh, "-c", script, PROC_READY.decode()]


def _bwrap_argv(
    host: _Host,
    limits: SandboxLimits,
    files: dict[str, int],
    fds: BwrapFds,
    uid: int,
    env: dict[str, str],
    *,
    own_proc: bool = False,
) -> list[str]:
    """prlimit (the rlimits) + bwrap (the namespaces) + setpriv (the drop to ``uid``), for one run.
    With ``own_proc``, a shell first mounts the run's own /proc (``_own_proc_argv``)."""
    megabyte = 1 << 20
    argv = [
        host.prlimit,
        f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}",
        f"--as={limits.memory_mb * megabyte}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_size_mb * megabyte}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]
    argv += namespace_argv(host, limits.tmpfs_mb, files, fds, env, workdir_perms="0777")
    argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    argv += ["--cap-add", "CAP_SYS_ADMIN", "--", *_own_proc_argv(host)] if own_proc else ["--"]
    argv += [
        host.setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]
    return argv


@dataclass(frozen=True)
class BwrapFds:
    """The descriptors bwrap reads at start: where it writes its info, and the seccomp filter."""

    info: int
    """Write end of a pipe: bwrap's JSON with the pid of the namespace's init."""
    seccomp: int
    """A file holding ``seccomp.sandbox_filter()``, which bwrap loads just before the command runs."""


def open_seccomp_filter() -> int:
    """A memfd holding the compiled filter, for ``BwrapFds.seccomp`` (the caller closes it)."""
    try:
        return memfd("seccomp", sandbox_filter())
    except SeccompUnsupported as error:  # no sandbox without the filter: say so, never run unfenced
        raise SandboxUnavailable(str(error)) from error


def namespace_argv(
    host: _Host, tmpfs_mb: int, files: dict[str, int], fds: BwrapFds, env: dict[str, str], *, workdir_perms: str
) -> list[str]:
    """The bwrap command line up to its capabilities: namespaces, mounts, seccomp, environment.

    Shared by fresh runs and the pre-forked pool (``rlvr.sandbox.pool``), so both fence alike.
    """
    megabyte = 1 << 20
    argv = [
        host.bwrap,
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--info-fd",
        str(fds.info),
        "--seccomp",
        str(fds.seccomp),
    ]
    made: set[str] = set()
    for path in host.binds:  # parents created 0755 so that the unprivileged uid can walk to the bind
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in made:
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
        argv += ["--ro-bind", path, path]
    for target, path in host.links:
        argv += ["--symlink", target, path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    # /tmp and /dev/shm sticky as usual, each a tmpfs of its own size (bwrap's /dev/shm is part of an
    # unbounded /dev tmpfs otherwise: pages written there are host memory no rlimit counts); the
    # working directory as the caller says (fresh runs may delete what the host put there; the pool
    # keeps it root's and hands each job a directory of its own).
    for mount, perms in (("/tmp", "1777"), ("/dev/shm", "1777"), (WORKDIR, workdir_perms)):
        argv += ["--perms", perms, "--size", str(tmpfs_mb * megabyte), "--tmpfs", mount]
    for dest, fd in files.items():
        argv += ["--perms", "0644", "--file", str(fd), dest]
    argv += ["--remount-ro", "/", "--chdir", WORKDIR, "--clearenv"]
    for key, value in {**SANDBOX_ENV, **env}.items():
        argv += ["--setenv", key, value]
    return argv


def start_bwrap(argv: list[str], *, pass_fds: list[int], stdin: int, stderr: int) -> subprocess.Popen:
    """DANGER: start ``argv`` (bubblewrap, then the untrusted command) in a process group of its
    own, handing it ``pass_fds``, with stdout piped back; SandboxUnavailable if it cannot start."""
    try:
        return subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, pass_fds=pass_fds, start_new_session=True
        )
    except OSError as error:
        raise SandboxUnavailable(f"cannot start bubblewrap: {error}; {INSTALL_HINT}") from error


def read_init_pidfd(info_r: int) -> int | None:
    """Read bwrap's ``--info-fd`` JSON to its end (bwrap closes it once the namespace's init runs)
    and open a pidfd for that init; None if bwrap failed first. ``info_r`` stays open."""
    info = bytearray()
    while chunk := os.read(info_r, 4096):
        info += chunk
    return _open_init_pidfd(bytes(info))


def memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def run_untrusted(
    command: list[str],
    *,
    files: dict[str, bytes] | None = None,
    limits: SandboxLimits = SandboxLimits(),
    channel: bool = False,
    uid: int | None = None,
    env: dict[str, str] | None = None,
) -> SandboxRun:
    """DANGER: run ``command`` (untrusted) inside a fresh bubblewrap sandbox and wait for it.

    ``files`` maps absolute paths inside the sandbox (under ``/sandbox`` or ``/tmp``) to their
    content. ``uid`` is the unprivileged host uid/gid to run as (default: a random one from
    ``SANDBOX_UIDS``). With ``channel``, the command finds a writable pipe at fd ``$RLVR_CHANNEL_FD``; what it
    writes comes back in ``SandboxRun.channel`` (capped like stdout). Raises SandboxUnavailable if
    the sandbox cannot start; everything the command does is reported in the result, never raised.
    """
    host = find_host()
    opened: list[int] = []
    try:
        file_fds = {dest: memfd(dest, data) for dest, data in (files or {}).items()}
        opened += file_fds.values()
        info_r, info_w = os.pipe()
        seccomp_fd = open_seccomp_filter()
        opened += [info_r, info_w, seccomp_fd]
        extra_env = dict(env or {})
        streams: dict[int, str] = {info_r: "info"}
        pass_fds = [*file_fds.values(), info_w, seccomp_fd]
        if channel:
            chan_r, chan_w = os.pipe()
            opened += [chan_r, chan_w]
            streams[chan_r] = "channel"
            pass_fds.append(chan_w)
            extra_env["RLVR_CHANNEL_FD"] = str(chan_w)
        if uid is None:
            uid = SANDBOX_UIDS[secrets.randbelow(len(SANDBOX_UIDS))]
        argv = _bwrap_argv(host, limits, file_fds, BwrapFds(info_w, seccomp_fd), uid, extra_env, own_proc=True)
        argv += list(command)
        started = time.monotonic()
        proc = start_bwrap(argv, pass_fds=pass_fds, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for fd in pass_fds:  # the child holds them now; our copies would keep pipes from closing
            os.close(fd)
            opened.remove(fd)
        streams[proc.stdout.fileno()] = "stdout"
        streams[proc.stderr.fileno()] = "stderr"
        run = _watch(proc, streams, limits, started)
    finally:
        for fd in opened:
            os.close(fd)
    _raise_if_bwrap_failed(run)
    if not run.stderr.startswith(PROC_READY) and not run.timed_out:
        message = run.stderr.decode(errors="replace").strip()
        raise SandboxUnavailable(f"the sandbox could not mount its own /proc ({PROC_OPTIONS}): {message}")
    run.stderr = run.stderr.removeprefix(PROC_READY)
    return run


def _watch(proc: subprocess.Popen, streams: dict[int, str], limits: SandboxLimits, started: float) -> SandboxRun:
    """Collect output until every stream closes; kill the tree on a deadline or an output cap."""
    buffers = {name: bytearray() for name in streams.values()}
    init_pidfd: int | None = None
    reason = ""
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        deadline = started + limits.wall_s
        while selector.get_map() and not reason:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reason = "wall-clock timeout"
                break
            for key, _ in selector.select(timeout=remaining):
                name = streams[key.fd]
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    if name == "info":
                        init_pidfd = _open_init_pidfd(buffers["info"])
                    continue
                buffers[name] += chunk
                if name != "info" and len(buffers[name]) > limits.output_bytes:
                    reason = f"{name} over {limits.output_bytes} bytes"
                    del buffers[name][limits.output_bytes :]
    if reason:
        kill_tree(proc, init_pidfd)
    try:
        returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        reason = reason or "wall-clock timeout"
        returncode = kill_and_reap(proc, init_pidfd)
    if init_pidfd is not None:
        os.close(init_pidfd)
    proc.stdout.close()
    proc.stderr.close()
    elapsed = time.monotonic() - started
    try:
        info = json.loads(bytes(buffers["info"]) or b"{}")
    except ValueError:  # bwrap died while writing it; the run's stderr says why
        info = {}
    killed_signal = signal.SIGKILL if reason else (returncode - 128 if returncode > 128 else None)
    return SandboxRun(
        exit_code=returncode,
        signal=killed_signal,
        timed_out=reason == "wall-clock timeout",
        output_truncated=bool(reason) and reason != "wall-clock timeout",
        stdout=bytes(buffers["stdout"]),
        stderr=bytes(buffers["stderr"]),
        channel=bytes(buffers.get("channel", b"")),
        elapsed_s=elapsed,
        killed_reason=reason,
        info=info,
    )


def _open_init_pidfd(info: bytes) -> int | None:
    """A pidfd for the sandbox's pid-namespace init (bwrap's ``child-pid``); None if bwrap died early."""
    try:
        return os.pidfd_open(int(json.loads(info)["child-pid"]))
    except (ValueError, KeyError, OSError):
        return None


def kill_tree(proc: subprocess.Popen, init_pidfd: int | None) -> None:
    """SIGKILL the namespace's init: the kernel kills everything in the pid namespace with it, and
    bwrap exits only after reaping it. The process group catches a bwrap that has no init yet."""
    if init_pidfd is not None:
        try:
            signal.pidfd_send_signal(init_pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_and_reap(proc: subprocess.Popen, init_pidfd: int | None) -> int:
    """``kill_tree``, then wait for bwrap; one stuck past 5 s loses its whole process group. Returns
    bwrap's exit status."""
    kill_tree(proc, init_pidfd)
    try:
        return proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:  # bwrap itself stuck: take its whole process group down
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


def stop(proc: subprocess.Popen, init_pidfd: int | None) -> None:
    """End a long-lived sandbox (a session, a pool slot): ``kill_and_reap``, then close its pipes
    and the pidfd."""
    kill_and_reap(proc, init_pidfd)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    if init_pidfd is not None:
        os.close(init_pidfd)


def _raise_if_bwrap_failed(run: SandboxRun) -> None:
    """bwrap reports its own setup failures as ``bwrap: ...`` on stderr with no container info."""
    if not run.info and run.stderr.startswith(b"bwrap: ") and not run.timed_out:
        message = run.stderr.decode(errors="replace").strip()
        raise SandboxUnavailable(f"bubblewrap could not build the sandbox: {message}; {INSTALL_HINT}")
