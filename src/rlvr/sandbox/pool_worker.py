"""DANGER: the supervisor of one pre-forked sandbox slot. Runs INSIDE the sandbox (standard library
only) and forks a process per job that runs UNTRUSTED code.

The host (``rlvr.sandbox.pool``) starts this once per slot in a bubblewrap sandbox built like a
fresh one (namespaces, read-only root, private tmpfs, cleared environment), except that this
supervisor keeps host uid 0 with only the capabilities it needs to fence jobs: SETUID and SETGID
(to drop each job to a uid of its own), SETPCAP (to empty the job's bounding set), KILL (to end
every process of a job), CHOWN, DAC_OVERRIDE and FOWNER (to hand a job its directory and delete
whatever it left). It never runs candidate code.

One job, start to finish:

1. The host sends a frame {"id", "uid", "driver", "files", "limits", "wall_s"} on stdin (one job
   in flight per slot, so nothing of a later job is ever buffered in this process).
2. A fresh directory ``/sandbox/job`` owned by the job's uid receives the files.
3. ``fork``: the child starts a new session, sets the rlimits (CPU, address space, processes,
   file size, open files, no core), empties its capability bounding set, clears its groups, drops to the job's uid (all capabilities
   vanish with the change from uid 0), sets no_new_privs, reads stdin from /dev/null, closes
   every other fd but the result channel and the stdout/stderr pipes, clears the environment and runs the driver, compiled
   once at start. Forking this warm interpreter instead of starting Python costs ~1 ms, not ~30.
4. The supervisor reads the channel, stdout and stderr (each capped) until the child exits or the wall clock runs out,
   then SIGKILLs every other process in the pid namespace (``kill(-1)``: daemons that called
   setsid or double-forked included: as a child subreaper it inherits and reaps them) until none
   is left, and deletes the job's directory and everything in /tmp and /dev/shm.
5. It answers {"id", "exit_code", "signal", "timed_out", "output_truncated", "channel", ...}.
   The host judges the channel's content; nothing here decides a verdict.

Frames both ways are a 4-byte big-endian length and a UTF-8 JSON body.
"""

import base64
import ctypes
import json
import math  # noqa: F401  (drivers import it: loaded once here, every forked job inherits it)
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time
import types  # noqa: F401  (likewise)

JOB_DIR = "/sandbox/job"
SCRATCH_DIRS = ("/tmp", "/dev/shm")
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
LAST_CAP = 63
PR_SET_CHILD_SUBREAPER = 36
SANDBOX_PATH = "/usr/bin:/bin"

_libc = ctypes.CDLL(None, use_errno=True)


def read_frame(stream):
    header = stream.read(4)
    if len(header) < 4:
        return None
    (length,) = struct.unpack(">I", header)
    return json.loads(stream.read(length))


def write_frame(stream, body):
    data = json.dumps(body).encode()
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def clear_inheritable_capabilities():
    """capset(2) with every set empty (version 3: two 32-bit words per set)."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def run_job_child(job, code, channel_w, stdout_w, stderr_w):
    """In the forked child: fence this process, then run the driver. Never returns."""
    try:
        os.setsid()
        limits = job["limits"]
        megabyte = 1 << 20
        for which, value in (
            (resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1)),
            (resource.RLIMIT_AS, (limits["memory_mb"] * megabyte,) * 2),
            (resource.RLIMIT_NPROC, (limits["processes"],) * 2),
            (resource.RLIMIT_FSIZE, (limits["file_size_mb"] * megabyte,) * 2),
            (resource.RLIMIT_NOFILE, (limits["open_files"],) * 2),
            (resource.RLIMIT_CORE, (0, 0)),
        ):
            resource.setrlimit(which, value)
        uid = job["uid"]
        for cap in range(LAST_CAP + 1):  # empty the bounding set too (EINVAL past the kernel's last cap)
            _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from uid 0 to another: the kernel clears permitted and effective
        clear_inheritable_capabilities()
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            os._exit(125)
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(stdout_w, 1)
        os.dup2(stderr_w, 2)
        channel = os.dup2(channel_w, 3) if channel_w != 3 else 3
        os.closerange(4, 65536)
        os.chdir(JOB_DIR)
        os.environ.clear()
        os.environ.update({"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": JOB_DIR, "TMPDIR": JOB_DIR,
                           "PYTHONDONTWRITEBYTECODE": "1", "RLVR_CHANNEL_FD": str(channel)})
        sys.argv = ["driver.py"]
    except BaseException:
        os._exit(126)  # could not fence the job: run nothing
    try:
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    except BaseException:
        os._exit(1)
    os._exit(0)


def prepare_job_dir(job):
    os.mkdir(JOB_DIR, 0o700)
    for name, text in job["files"].items():
        path = os.path.join(JOB_DIR, name)
        with open(path, "w", encoding="utf-8", errors="replace") as handle:
            handle.write(text)
        os.chown(path, job["uid"], job["uid"])
    os.chown(JOB_DIR, job["uid"], job["uid"])


KEEP_STDERR = 8192
"""Bytes of stderr kept for the host (it looks for MemoryError when no result came back)."""


def collect(pid, streams, job):
    """Read the job's streams until it exits or the deadline; returns (buffers, status, reason).

    ``streams`` maps a read fd to "channel", "stdout" or "stderr". Each stream is capped at
    ``output_bytes``; beyond it the job is killed. Only the channel and the head of stderr are kept.
    """
    deadline = time.monotonic() + job["wall_s"]
    cap = job["limits"]["output_bytes"]
    pidfd = os.pidfd_open(pid)
    kept = {name: bytearray() for name in streams.values()}
    counts = dict.fromkeys(streams.values(), 0)
    reason = ""
    status = None
    watch = [*streams, pidfd]

    def drain(fd, block):
        nonlocal reason
        name = streams[fd]
        while block or select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                watch.remove(fd)
                return
            counts[name] += len(chunk)
            if name == "channel" or len(kept[name]) < KEEP_STDERR:
                kept[name] += chunk
            if counts[name] > cap:
                reason = "%s over %d bytes" % (name, cap)
                return
            if block:
                return

    try:
        while status is None and not reason:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reason = "wall-clock timeout"
                break
            ready, _, _ = select.select(watch, [], [], remaining)
            for fd in ready:
                if fd == pidfd:
                    status = os.waitpid(pid, 0)[1]
                elif not reason:
                    drain(fd, block=True)
        for fd in [fd for fd in watch if fd != pidfd]:  # what the job wrote before it exited
            if not reason:
                drain(fd, block=False)
    finally:
        os.close(pidfd)
    del kept["channel"][cap:]
    return kept, status, reason


def end_everything(pid):
    """SIGKILL every process in the namespace but init and this one, reap them all, within 5 s."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:  # reap what died (our orphans come to us: we are the subreaper)
            try:
                reaped, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if reaped == 0:
                break
        time.sleep(0.001)
    return False


def clean_files():
    shutil.rmtree(JOB_DIR, ignore_errors=True)
    for scratch in SCRATCH_DIRS:
        try:
            entries = os.listdir(scratch)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(scratch, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
    return not os.path.exists(JOB_DIR)


def run_job(job, drivers):
    started = time.monotonic()
    prepare_job_dir(job)
    pipes = {name: os.pipe() for name in ("channel", "stdout", "stderr")}
    pid = os.fork()
    if pid == 0:
        for read_end, _ in pipes.values():
            os.close(read_end)
        run_job_child(job, drivers[job["driver"]], *(pipes[name][1] for name in ("channel", "stdout", "stderr")))
    for _, write_end in pipes.values():
        os.close(write_end)
    try:
        kept, status, reason = collect(pid, {read_end: name for name, (read_end, _) in pipes.items()}, job)
    finally:
        for read_end, _ in pipes.values():
            os.close(read_end)
    clean = end_everything(pid)
    if status is None:  # killed before it exited: end_everything reaped it
        exit_code, signal_number = 128 + signal.SIGKILL, signal.SIGKILL
    elif os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        exit_code = 128 + signal_number
    else:
        exit_code, signal_number = os.WEXITSTATUS(status), None
    clean = clean_files() and clean
    return {
        "id": job["id"], "exit_code": exit_code, "signal": signal_number,
        "timed_out": reason == "wall-clock timeout", "output_truncated": bool(reason) and reason != "wall-clock timeout",
        "killed_reason": reason, "channel": base64.b64encode(kept["channel"]).decode(),
        "stderr": base64.b64encode(kept["stderr"]).decode(), "elapsed_s": time.monotonic() - started, "clean": clean,
    }


def main():
    if _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("cannot become a child subreaper")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    hello = read_frame(stdin)
    drivers = {name: compile(source, name + "_driver.py", "exec") for name, source in hello["drivers"].items()}
    write_frame(stdout, {"ready": True, "pid": os.getpid()})
    while True:
        job = read_frame(stdin)
        if job is None:
            return
        try:
            reply = run_job(job, drivers)
        except Exception as error:  # the slot is unusable; the host restarts it
            reply = {"id": job.get("id"), "broken": "%s: %s" % (type(error).__name__, error)}
        write_frame(stdout, reply)
        if reply.get("broken") or not reply.get("clean"):
            return


main()
