"""DANGER: the supervisor of one pre-forked sandbox slot. Runs INSIDE the sandbox (standard library
only) and starts a process per job that runs UNTRUSTED code.

The host (``rlvr.sandbox.pool``) starts this once per slot in a bubblewrap sandbox built like a
fresh one (namespaces, read-only root, private tmpfs, cleared environment), except that this
supervisor keeps host uid 0 with only the capabilities it needs to fence jobs: SYS_ADMIN (to clone
each job into namespaces of its own and mount its tmpfs and /proc), NET_ADMIN (a per-job network
namespace's loopback, when the benchmark asks for one), SETUID and SETGID (to drop each job to a
uid of its own), SETPCAP (to empty the job's bounding set), KILL (to end a job), CHOWN,
DAC_OVERRIDE and FOWNER (to hand a job its files). It never runs candidate code.

Before the first job it forks the zygote (``start_zygote``), which holds nothing but the compiled
drivers. Every job is cloned from the zygote, never from this process: this one reads the jobs'
files and the jobs' results, and a job forked from it could read earlier jobs' answers in the memory
it inherits.

Every job starts from nothing. It is cloned into a new mount, pid, IPC and UTS namespace
(``LAYERS``), where it is pid 1, and before it drops its privileges it mounts new tmpfs instances at
/tmp, /dev/shm and /sandbox and a /proc of its own (mounted with the host's ``bwrap.PROC_OPTIONS``,
as a fresh sandbox's is), and writes its files there: what the kernel keeps per namespace or per
mount (the last pid, the next inode number, free space, IPC objects) is that of a new sandbox,
whatever earlier jobs of the slot did. Jobs share the slot's network namespace, but they can make unix sockets only, and the
slot's holds no socket of its own (the supervisor's line to the zygote was made on the host), so
what a job reads there is the same in every slot. When the job's first process exits, the kernel
kills the rest of its pid namespace: mounts, files and daemons all go with it.

One job, start to finish:

1. The host sends a frame {"id", "uid", "driver", "files", "limits", "wall_s"} on stdin (one job
   in flight per slot, so nothing of a later job is ever buffered in this process).
2. The zygote gets {"uid", "limits", "driver"} and the job's four pipe ends (result channel,
   stdout, stderr; files) and clones the job (``start_job``), which builds its world
   (``build_job_world``: mounts, then the files this process writes into the files pipe). The
   job's process then starts a new session, sets the rlimits (CPU, address space, processes, file
   size, open files, no core), empties its capability bounding set, clears its groups, drops to the job's uid (all capabilities vanish with the change from uid 0),
   sets no_new_privs, loads the job's own seccomp filter (``seccomp.job_filter``: no descriptor
   in flight, unix sockets only), reads stdin from /dev/null, closes every other fd but the result
   channel and the stdout/stderr pipes, clears the environment and runs the driver. Forking a warm
   interpreter instead of starting Python costs ~1 ms, not ~30.
3. This process reads the channel, stdout and stderr (each capped) until the job exits or the wall
   clock runs out, and answers {"id", "exit_code", "signal", "timed_out", "output_truncated",
   "channel", ...}. The host judges the channel's content; nothing here decides a verdict.
4. Then it SIGKILLs the job if it did not end by itself (the kernel then ends every process of
   the job's pid namespace), takes the zygote's report that the job is gone, checks
   that no process of a job's uid is left, and answers {"id", "clean"}. Cleaning comes after the
   answer, so nothing the job left behind can turn its verdict into an error; a slot that could
   not clean exits, and the host starts a new one.

The seccomp filters (``seccomp.py``) keep jobs from making kernel objects that outlive their
namespaces (kernel keys, which are not namespaced; unix sockets kept alive by a descriptor in
flight) and from making namespaces of their own.

Frames both ways are a 4-byte big-endian length and a UTF-8 JSON body.
"""

import base64
import ctypes
import fcntl
import json
import math  # noqa: F401  (drivers import it: loaded once here, every forked job inherits it)
import os
import platform
import resource
import select
import signal
import socket
import struct
import sys
import time
import types  # noqa: F401  (likewise)

WORKDIR = "/sandbox"
JOB_DIR = "/sandbox/job"
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_CAPBSET_DROP = 24
LAST_CAP = 63
PR_SET_CHILD_SUBREAPER = 36
SANDBOX_PATH = "/usr/bin:/bin"

# clone(2) and mount(2) flags (linux/sched.h, linux/mount.h).
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
LAYERS = {"pid": CLONE_NEWPID, "net": CLONE_NEWNET, "ipc": CLONE_NEWIPC, "uts": CLONE_NEWUTS}
"""The namespaces each job is cloned into besides its mount namespace (the host asks for all of
them; ``SandboxPool(layers=...)`` drops some only to price each one in the throughput benchmark).
Nothing the kernel keeps per namespace (sockets in TIME_WAIT, network counters, the last pid, IPC
objects, mounts, tmpfs inode numbers) is then shared with any other job."""
SIGCHLD = 17
SYS_CLONE = {"x86_64": 56, "aarch64": 220}
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
FILES_NOT_WRITTEN = b"rlvr-pool: job files not written: "

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_pylibc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL across the call: clone returns twice
_pylibc.syscall.restype = ctypes.c_long


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
            (resource.RLIMIT_CPU, (limits["cpu_s"],) * 2),  # an init ignores SIGXCPU: SIGKILL at the limit
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
        # Dumpable again, as after an exec: the uid change cleared it, which would hide the job's
        # processes from each other in its /proc (hidepid). Nothing else of another uid is there.
        if _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0:
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


def clone_job(world):
    """clone(2) into a new mount namespace and the world's ``layers`` (LAYERS): like fork, but with
    "pid" the child is pid 1 of a new pid namespace. Returns the child's pid, or 0 in the child."""
    flags = CLONE_NEWNS | SIGCHLD
    for layer in world["layers"]:
        flags |= LAYERS[layer]
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = _pylibc.syscall(ctypes.c_long(SYS_CLONE[platform.machine()]), ctypes.c_ulong(flags), None, None, None, None)
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
        return 0
    ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone into new namespaces failed")
    return pid


def mount(source, target, fstype, flags, options):
    if _libc.mount(source, target.encode(), fstype, flags, options and options.encode()) != 0:
        error = ctypes.get_errno()
        raise OSError(error, "mount %s: %s" % (target, os.strerror(error)))


def build_job_world(job, files_fd, world):
    """In the cloned job, still privileged: fresh instances of everything a job can write or count
    in, then the job's files; returns "" or why the files could not be written. Nothing of the
    slot's own mounts stays visible to the job.

    - mounts stop propagating to the slot (the new mount namespace is a copy of the slot's);
    - new tmpfs instances at /tmp, /dev/shm and the working directory: fresh inode counters, free
      space and directory contents;
    - with "pid", a new /proc for the job's pid namespace, mounted with ``world["proc_options"]``:
      the job's own processes and none of the host-wide counters every process on the machine shares;
    - with "net", the new network namespace's loopback up (as bubblewrap leaves it in a fresh sandbox).
    """
    tmpfs_size = "size=%d" % (job["limits"]["tmpfs_mb"] << 20)
    mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    for target, mode in (("/tmp", "1777"), ("/dev/shm", "1777"), (WORKDIR, "0755")):
        mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV, "%s,mode=%s" % (tmpfs_size, mode))
    if "pid" in world["layers"]:
        mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, world["proc_options"])
    if "net" in world["layers"]:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))
    data = bytearray()
    while chunk := os.read(files_fd, 1 << 20):
        data += chunk
    os.close(files_fd)
    uid = job["uid"]
    os.mkdir(JOB_DIR, 0o700)
    os.chown(JOB_DIR, uid, uid)
    try:
        for name, text in json.loads(data).items():
            path = os.path.join(JOB_DIR, name)
            with open(path, "w", encoding="utf-8", errors="replace") as handle:
                handle.write(text)
            os.chown(path, uid, uid)
    except OSError as error:  # the job's own files do not fit its tmpfs: that job's failure
        return os.strerror(error.errno or 0)
    return ""


def start_job(job, code, fds, job_filter, world):
    """In the cloned child, pid 1 of the job's own namespaces and still privileged: build the job's
    world, then become the job (``run_job_child``). Never returns.

    The job is its pid namespace's init, so the kernel shields it from signals it has no handler
    for when they come from inside the namespace (its own ``kill``, ``abort``'s SIGABRT, a child's
    SIGTERM), and from the CPU limit's SIGXCPU: its soft and hard CPU limits are equal, so the
    kernel ends it with SIGKILL at the limit, which ``run_job`` reports as SIGXCPU. A second
    process per job as init would keep the usual signals, at about half the pool's throughput
    (benchmarks/verifier_throughput.py). When it exits, the kernel kills whatever it started.
    """
    channel_w, stdout_w, stderr_w, files_r = fds
    try:
        not_written = build_job_world(job, files_r, world)
        if not_written:
            os.write(stderr_w, FILES_NOT_WRITTEN + not_written.encode())
            os._exit(126)
    except BaseException:
        os._exit(126)  # no world of its own: run nothing
    run_job_child(job, code, channel_w, stdout_w, stderr_w, job_filter)


def start_zygote(drivers, job_filter, world, socket_fds):
    """Fork the zygote, before any job exists; returns (the socket to it, its pid).

    Every job is cloned from the zygote, which holds nothing but the compiled drivers: no frame,
    file or reply of any job ever enters it (the supervisor keeps them; a job's files reach the job
    through a pipe of its own), so a job that reads its inherited memory finds no other job there.
    Per job it gets {"uid", "limits", "driver"} with the job's four pipe ends (channel, stdout,
    stderr to write; its files to read), clones the job into namespaces of its own (``start_job``),
    answers with its pid (4 bytes), waits for it, and then sends (pid, wait status) (8 bytes). The
    job is its pid namespace's init: its exit waits for every other process there to be gone.
    """
    # The pair was made by the host, in the host's network namespace: the slot's own (which every
    # job shares) holds no socket at all, so what a job sees there is the same in every slot.
    supervisor_end, zygote_end = (socket.socket(fileno=fd) for fd in socket_fds)
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
        zygote_loop(zygote_end, drivers, job_filter, world)
    finally:
        os._exit(0)


def zygote_loop(sock, drivers, job_filter, world):
    """Clone each requested job into its world: {"layers": LAYERS names, "proc_options"}."""
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 65536, 4)
        if not message:  # the supervisor is gone
            return
        request = json.loads(message)
        pid = clone_job(world)
        if pid == 0:
            sock.close()
            start_job(request, drivers.get(request["driver"]), fds, job_filter, world)
        for fd in fds:
            os.close(fd)
        sock.send(struct.pack("=i", pid))
        _, status = os.waitpid(pid, 0)  # once the job and everything it started are gone
        sock.send(struct.pack("=ii", pid, status))


def spawn_job(zygote, job, pipes):
    """Have the zygote start ``job`` on the write ends of ``pipes``; returns the job's pid."""
    request = json.dumps({"uid": job["uid"], "limits": job["limits"], "driver": job["driver"]}).encode()
    ends = [pipes[name][1] for name in ("channel", "stdout", "stderr")] + [pipes["files"][0]]
    socket.send_fds(zygote, [request], ends)
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
    """SIGKILL every process of a job's uid left in the slot and reap them all, within 5 s. None
    should be: a job's processes die with its pid namespace. This is the check that they did (and,
    as the child subreaper, this process would inherit the jobs of a zygote that died)."""
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


def finish_job(zygote, pid, status_pending, known):
    """End the job and check that nothing of it is left; never raises: False retires the slot.

    A job killed before it exited (wall clock, output cap) is ended by SIGKILL to its pid 1: the
    kernel then kills every process of its pid namespace, and the zygote's report comes once they
    are all gone. Its files, mounts and sockets went with its namespaces. What is left to check is
    that no process of a job's uid remains in the slot (``end_everything``: none should)."""
    try:
        if status_pending:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if job_status(zygote, pid, 5.0) is None:
                return False
        return end_everything(known)
    except Exception:
        return False


def write_files(files_w, files):
    """Hand the job its files through its pipe; a job that died first just does not read them."""
    try:
        data = json.dumps(files).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(files_w, view) :]
    except BrokenPipeError:
        pass
    finally:
        os.close(files_w)


def run_job(job, drivers, zygote):
    """Run one job to its end; returns (the reply, its pid, whether the zygote's report on it is
    still due). What is left of it is for ``finish_job``."""
    started = time.monotonic()
    if job["driver"] not in drivers:
        raise KeyError("no driver named %r" % job["driver"])
    pipes = {name: os.pipe() for name in ("channel", "stdout", "stderr", "files")}
    try:
        pid = spawn_job(zygote, job, pipes)
    finally:
        for name, (read_end, write_end) in pipes.items():
            os.close(read_end if name == "files" else write_end)
    write_files(pipes["files"][1], job["files"])
    streams = {read_end: name for name, (read_end, _) in pipes.items() if name != "files"}
    try:
        kept, status, reason = collect(zygote, pid, streams, job)
    finally:
        for read_end in streams:
            os.close(read_end)
    if status is None:  # killed before it exited: finish_job ends it
        exit_code, signal_number = 128 + signal.SIGKILL, signal.SIGKILL
    elif os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        if signal_number == signal.SIGKILL:  # nothing here sent it and its namespace cannot: the CPU limit
            signal_number = signal.SIGXCPU
        exit_code = 128 + signal_number
    else:
        exit_code, signal_number = os.WEXITSTATUS(status), None
    if exit_code == 126 and kept["stderr"].startswith(FILES_NOT_WRITTEN):
        reason = kept["stderr"].decode(errors="replace")[len("rlvr-pool: ") :]
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


def main():
    if _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("cannot become a child subreaper")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    hello = read_frame(stdin)
    drivers = {name: compile(source, name + "_driver.py", "exec") for name, source in hello["drivers"].items()}
    zygote, zygote_pid = start_zygote(
        drivers, base64.b64decode(hello["job_filter"]), hello["world"], hello["zygote_sockets"]
    )
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
