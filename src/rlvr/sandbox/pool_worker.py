"""DANGER: the supervisor of one pre-forked sandbox slot. Runs INSIDE the sandbox (standard library
only) and forks a process per job that runs UNTRUSTED code.

The host (``rlvr.sandbox.pool``) starts this once per slot in a bubblewrap sandbox built like a
fresh one (namespaces, read-only root, private tmpfs, cleared environment), except that this
supervisor keeps host uid 0 with only the capabilities it needs to fence jobs: SETUID and SETGID
(to drop each job to a uid of its own), SETPCAP (to empty the job's bounding set), KILL (to end
every process of a job), CHOWN, DAC_OVERRIDE and FOWNER (to hand a job its directory and delete
whatever it left). It never runs candidate code.

Before the first job it forks the zygote (``start_zygote``), which holds nothing but the compiled
drivers. Every job is forked from the zygote, never from this process: this one reads the jobs'
files and the jobs' results, and a job forked from it could read earlier jobs' answers in the memory
it inherits.

One job, start to finish:

1. The host sends a frame {"id", "uid", "driver", "files", "limits", "wall_s"} on stdin (one job
   in flight per slot, so nothing of a later job is ever buffered in this process).
2. A fresh directory ``/sandbox/job`` owned by the job's uid receives the files.
3. The zygote gets {"uid", "limits", "driver"} and the job's three pipe ends, forks the job, and
   later reports its wait status (the job's orphans come to this process, a child subreaper). The
   job's process starts a new session, sets the rlimits (CPU, address space, processes, file size, open files, no core),
   empties its capability bounding set, clears its groups, drops to the job's uid (all
   capabilities vanish with the change from uid 0), sets no_new_privs, loads the job's own seccomp
   filter (``seccomp.JOB_DENIED``: no descriptor can be put in flight), reads stdin from /dev/null,
   closes every other fd but the result channel and the stdout/stderr pipes, clears the environment
   and runs the driver. Forking a warm interpreter instead of starting Python costs ~1 ms, not ~30.
4. This process reads the channel, stdout and stderr (each capped) until the job exits or the wall
   clock runs out, and answers {"id", "exit_code", "signal", "timed_out", "output_truncated",
   "channel", ...}. The host judges the channel's content; nothing here decides a verdict.
5. Then it SIGKILLs every process in the pid namespace that runs as a job's uid (all but init,
   itself and the zygote; daemons that called setsid or double-forked included) until none is
   left, deletes the job's directory and everything in /tmp and /dev/shm, and answers {"id",
   "clean"}. Cleaning comes after the answer, so nothing the job left behind can turn its verdict
   into an error; a slot that could not clean exits, and the host starts a new one.

The seccomp filters (``seccomp.py``) keep jobs from making kernel objects that would outlive them
here (System V IPC, POSIX message queues, keys, and unix sockets kept alive by a descriptor in
flight): /tmp, /dev/shm and the job's directory are all a job can leave behind, and step 5 empties
them.

Frames both ways are a 4-byte big-endian length and a UTF-8 JSON body.
"""

import base64
import ctypes
import json
import math  # noqa: F401  (drivers import it: loaded once here, every forked job inherits it)
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import types  # noqa: F401  (likewise)

JOB_DIR = "/sandbox/job"
SCRATCH_DIRS = ("/tmp", "/dev/shm")
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
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


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_job_filter(program):
    """prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, program): the job's own filter, on top of the
    sandbox's; raises if the kernel refuses it (the job then runs nothing)."""
    code = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(code))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot load the job's seccomp filter")


def run_job_child(job, code, channel_w, stdout_w, stderr_w, job_filter):
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
        load_job_filter(job_filter)  # after this, no descriptor can be put in flight (seccomp.py JOB_DENIED)
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(stdout_w, 1)
        os.dup2(stderr_w, 2)
        channel = os.dup2(channel_w, 3) if channel_w != 3 else 3
        os.closerange(4, 65536)
        os.chdir(JOB_DIR)
        os.environ.clear()
        os.environ.update(
            {
                "PATH": SANDBOX_PATH,
                "LANG": "C.UTF-8",
                "HOME": JOB_DIR,
                "TMPDIR": JOB_DIR,
                "PYTHONDONTWRITEBYTECODE": "1",
                "RLVR_CHANNEL_FD": str(channel),
            }
        )
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


def start_zygote(drivers, job_filter):
    """Fork the zygote, before any job exists; returns (the socket to it, its pid).

    Every job is forked from the zygote, which holds nothing but the compiled drivers: no frame,
    file or reply of any job ever enters it (the supervisor keeps them), so a job that reads its
    inherited memory finds no other job there. Per job it gets {"uid", "limits", "driver"} with the
    job's three pipe ends, forks the job, answers with its pid (4 bytes), waits for it, and then
    sends (pid, wait status) (8 bytes).
    """
    supervisor_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid != 0:
        zygote_end.close()
        return supervisor_end, pid
    try:
        supervisor_end.close()
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)  # the host's pipes are the supervisor's alone
        os.dup2(null, 1)
        os.close(null)
        zygote_loop(zygote_end, drivers, job_filter)
    finally:
        os._exit(0)


def zygote_loop(sock, drivers, job_filter):
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 65536, 3)
        if not message:  # the supervisor is gone
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            sock.close()
            run_job_child(request, drivers.get(request["driver"]), *fds, job_filter)
        for fd in fds:
            os.close(fd)
        sock.send(struct.pack("=i", pid))
        _, status = os.waitpid(pid, 0)  # its orphans go to the supervisor, the child subreaper
        sock.send(struct.pack("=ii", pid, status))


def spawn_job(zygote, job, pipes):
    """Have the zygote start ``job`` on the write ends of ``pipes``; returns the job's pid."""
    request = json.dumps({"uid": job["uid"], "limits": job["limits"], "driver": job["driver"]}).encode()
    socket.send_fds(zygote, [request], [pipes[name][1] for name in ("channel", "stdout", "stderr")])
    answer = zygote.recv(16)
    if len(answer) != 4:
        raise RuntimeError("the zygote did not start the job")
    return struct.unpack("=i", answer)[0]


def job_status(zygote, pid, timeout):
    """The job's wait status as the zygote reports it once the job's first process has ended, or
    None if no report came within ``timeout`` seconds."""
    if not select.select([zygote], [], [], timeout)[0]:
        return None
    answer = zygote.recv(16)
    if len(answer) != 8 or struct.unpack("=ii", answer)[0] != pid:
        raise RuntimeError("the zygote's report is not this job's")
    return struct.unpack("=ii", answer)[1]


KEEP_STDERR = 8192
"""Bytes of stderr kept for the host (it looks for MemoryError when no result came back)."""


def collect(zygote, pid, streams, job):
    """Read the job's streams until it exits or the deadline; returns (buffers, status, reason).

    ``streams`` maps a read fd to "channel", "stdout" or "stderr". Each stream is capped at
    ``output_bytes``; beyond it the job is killed. Only the channel and the head of stderr are kept.
    The job has exited when the zygote reports its status; ``status`` is None if it had not by the
    deadline or the cap.
    """
    deadline = time.monotonic() + job["wall_s"]
    cap = job["limits"]["output_bytes"]
    kept = {name: bytearray() for name in streams.values()}
    counts = dict.fromkeys(streams.values(), 0)
    reason = ""
    status = None
    watch = [*streams, zygote]

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

    while status is None and not reason:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            reason = "wall-clock timeout"
            break
        ready, _, _ = select.select(watch, [], [], remaining)
        for fd in ready:
            if fd is zygote:
                status = job_status(zygote, pid, 0)
            elif not reason:
                drain(fd, block=True)
    for fd in [fd for fd in watch if fd is not zygote]:  # what the job wrote before it exited
        if not reason:
            drain(fd, block=False)
    del kept["channel"][cap:]
    return kept, status, reason


def job_processes(known):
    """Pids in this namespace that run as a job's uid (every uid but 0): the job's processes and
    whatever they started, daemons included. ``known`` are ours (init, this process, the zygote),
    skipped unread. The real uid is read from status: /proc/PID itself is root's for a process
    that dropped privileges (it is not dumpable)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in known:
            try:
                with open("/proc/%s/status" % name, "rb") as handle:
                    uid_line = next(line for line in handle if line.startswith(b"Uid:"))
            except (OSError, StopIteration):
                continue  # gone already
            if int(uid_line.split()[1]) != 0:
                found.append(int(name))
    return found


def end_everything(known):
    """SIGKILL every process of the job and reap them all, within 5 s (as the child subreaper, this
    process inherits the orphans: daemons that called setsid or double-forked included)."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        others = job_processes(known)
        if not others:
            return True
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:  # reap what died
            try:
                reaped, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if reaped == 0:
                break
        time.sleep(0.0005)
    return False


def empty_dir(path):
    """Delete everything inside ``path``, however deep or odd.

    Each subdirectory is first moved up to be a child of ``path`` (under a name no job can guess),
    so the walk needs neither recursion nor long paths: a job that nests directories thousands
    deep, or past PATH_MAX, cannot make this fail (``shutil.rmtree`` recurses, and raised).
    """
    root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    token = os.urandom(8).hex()
    moved = 0
    queue = [None]  # None: ``path`` itself; else the name of a directory moved into it
    try:
        while queue:
            name = queue[-1]
            fd = root if name is None else os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
            try:
                entries = list(os.scandir(fd))
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        moved += 1
                        os.rename(entry.name, ".rm-%s-%d" % (token, moved), src_dir_fd=fd, dst_dir_fd=root)
                        queue.append(".rm-%s-%d" % (token, moved))
                    else:
                        os.unlink(entry.name, dir_fd=fd)
            finally:
                if fd != root:
                    os.close(fd)
            if not entries:  # emptied: remove it (the root stays)
                queue.pop()
                if name is not None:
                    os.rmdir(name, dir_fd=root)
    finally:
        os.close(root)


def clean_files():
    """Delete the job's directory and everything in /tmp and /dev/shm; True if all is gone."""
    if os.path.lexists(JOB_DIR):
        empty_dir(JOB_DIR)
        os.rmdir(JOB_DIR)
    for scratch in SCRATCH_DIRS:
        if os.path.isdir(scratch):
            empty_dir(scratch)
    return not os.path.lexists(JOB_DIR)


def finish_job(zygote, pid, status_pending, known):
    """End the job's processes, take the zygote's report on it if it is still due (so the next
    job's reports are that job's), and delete its files. Never raises: False retires the slot."""
    try:
        if not end_everything(known):
            return False
        if status_pending and job_status(zygote, pid, 5.0) is None:
            return False
        return clean_files()
    except Exception:
        return False


def run_job(job, drivers, zygote):
    """Run one job to its end; returns (the reply, its pid, whether the zygote's report on it is
    still due). Its processes and files are left for ``finish_job``."""
    started = time.monotonic()
    if job["driver"] not in drivers:
        raise KeyError("no driver named %r" % job["driver"])
    try:
        prepare_job_dir(job)
    except OSError as error:  # the job's own files do not fit the sandbox: that job's failure
        return reply_without_run(job, started, "job files not written: %s" % os.strerror(error.errno or 0))
    pipes = {name: os.pipe() for name in ("channel", "stdout", "stderr")}
    try:
        pid = spawn_job(zygote, job, pipes)
    finally:
        for _, write_end in pipes.values():
            os.close(write_end)
    try:
        kept, status, reason = collect(zygote, pid, {read_end: name for name, (read_end, _) in pipes.items()}, job)
    finally:
        for read_end, _ in pipes.values():
            os.close(read_end)
    if status is None:  # killed before it exited: finish_job reaps it
        exit_code, signal_number = 128 + signal.SIGKILL, signal.SIGKILL
    elif os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        exit_code = 128 + signal_number
    else:
        exit_code, signal_number = os.WEXITSTATUS(status), None
    return (
        {
            "id": job["id"],
            "exit_code": exit_code,
            "signal": signal_number,
            "timed_out": reason == "wall-clock timeout",
            "output_truncated": bool(reason) and reason != "wall-clock timeout",
            "killed_reason": reason,
            "channel": base64.b64encode(kept["channel"]).decode(),
            "stderr": base64.b64encode(kept["stderr"]).decode(),
            "elapsed_s": time.monotonic() - started,
        },
        pid,
        status is None,
    )


def reply_without_run(job, started, reason):
    return (
        {
            "id": job["id"],
            "exit_code": None,
            "signal": None,
            "timed_out": False,
            "output_truncated": True,
            "killed_reason": reason,
            "channel": "",
            "stderr": "",
            "elapsed_s": time.monotonic() - started,
        },
        None,
        False,
    )


def main():
    if _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("cannot become a child subreaper")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    hello = read_frame(stdin)
    drivers = {name: compile(source, name + "_driver.py", "exec") for name, source in hello["drivers"].items()}
    zygote, zygote_pid = start_zygote(drivers, base64.b64decode(hello["job_filter"]))
    ours = {1, os.getpid(), zygote_pid}
    write_frame(stdout, {"ready": True, "pid": os.getpid()})
    while True:
        job = read_frame(stdin)
        if job is None:
            return
        try:
            reply, pid, status_pending = run_job(job, drivers, zygote)
        except Exception as error:  # the slot is unusable; the host restarts it
            write_frame(stdout, {"id": job.get("id"), "broken": "%s: %s" % (type(error).__name__, error)})
            return
        write_frame(stdout, reply)  # the verdict's data first: cleaning up cannot change it
        clean = finish_job(zygote, pid, status_pending, ours)
        write_frame(stdout, {"id": job["id"], "clean": clean})
        if not clean:
            return


main()
