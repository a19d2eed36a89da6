"""What a job can read about its world, and what a noisy job changes in it: the two halves of the
differential isolation test (test_differential.py).

``OBSERVER`` is Python source defining ``observe()``, which returns everything a job can read about
the kernel state around it: its pids and /proc, every file of its network namespace's /proc/net,
new files' inode numbers in each tmpfs, directory listings with their stat fields, mounts, rlimits,
uname, namespace-local sysctls, IPC and key tables, the free space of its file systems, and what
each kernel interface it is refused answers. Left out are the values the docs list as host-wide
(docs/verifiers.md, "Threat model"): clocks, the job's own random uid, device numbers and mount ids,
namespace ids, inode numbers of pipes, sockets and other anonymous files, and the link count of
/proc (the number of processes on the machine). Those come from counters that every process on the
machine moves; everything else must come out byte for byte
the same whatever ran before or beside the observer.

``PUBLISHER`` is Python source that moves every such value it can: thousands of files, processes,
daemons, sockets of every family, IPC objects, keys, ptys, locks, inotify watches, big tmpfs files,
hostname and sysctl writes. It records what it could do (``moved``), so that a test can see the
publisher really ran.
"""

OBSERVER = r"""
import ctypes, errno, json, os, re, resource, socket, stat

_libc = ctypes.CDLL(None, use_errno=True)
HIDDEN_STATUS = ("Uid", "Gid", "Vm", "Rss", "Hugetlb", "voluntary_ctxt", "nonvoluntary_ctxt")


def _try(action):
    try:
        return action()
    except OSError as error:
        return "error: %s" % errno.errorcode.get(error.errno, error.errno)


def _read(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def _stat(path):
    info = os.lstat(path)  # no times (clocks), no st_dev (host-wide): the rest is the job's own
    links = None if path == "/proc" else info.st_nlink  # /proc's link count is the machine's process count
    return [stat.filemode(info.st_mode), info.st_ino, links, info.st_size, info.st_uid == 0]


def _listing(path):
    return {name: _try(lambda: _stat(os.path.join(path, name))) for name in sorted(os.listdir(path))}


HOST_WIDE_NET = ("softnet_stat",)  # per-CPU packet counts of the whole machine


def _net_file(name, text):
    if name in HOST_WIDE_NET:
        return "host-wide"
    if name == "sockstat":  # TCP/UDP memory and orphan pools are counted machine-wide
        text = re.sub(r"\b(mem|alloc|orphan) \d+", r"\1 -", text)
    if name in ("netlink", "packet", "unix"):  # kernel addresses and socket inode numbers: machine-wide
        text = "\n".join(" ".join(["-"] + line.split()[1:-1] + ["-"]) for line in text.splitlines())
    if name == "protocols":  # the 'memory' column is machine-wide
        text = "\n".join(" ".join(line.split()[:3] + line.split()[4:]) for line in text.splitlines())
    return text


def _new_inode(directory):
    path = os.path.join(directory, ".observer-probe")
    with open(path, "w"):
        pass
    inode = os.stat(path).st_ino
    os.unlink(path)
    return inode


def _mounts():
    lines = []
    for line in _read("/proc/self/mountinfo").splitlines():
        fields = line.split()
        lines.append(" ".join(fields[3:]))  # from the root on: no mount ids, no device numbers
    return lines


def _child_pid():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def _syscall_errno(name, *args):
    result = getattr(_libc, name)(*args)
    return "ok" if result >= 0 else "error: %s" % errno.errorcode.get(ctypes.get_errno(), "?")


def _sockets():
    out = {}
    for family in ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET", "AF_UNIX"):
        def make(family=family):
            with socket.socket(getattr(socket, family), socket.SOCK_DGRAM if family != "AF_PACKET" else socket.SOCK_RAW):
                return "ok"
        out[family] = _try(make)
    return out


def observe():
    cwd = os.getcwd()
    status = [line for line in _read("/proc/self/status").splitlines() if not line.startswith(HIDDEN_STATUS)]
    net = {}
    if os.path.isdir("/proc/self/net"):
        for name in sorted(os.listdir("/proc/self/net")):
            path = "/proc/self/net/" + name
            if os.path.isfile(path):
                net[name] = _try(lambda: _net_file(name, _read(path)))
    world = {
        "pid": [os.getpid(), os.getppid(), os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid()],
        "next_pid": _child_pid(),
        "proc": sorted(os.listdir("/proc")),
        "status": status,
        "net": net,
        "sockets": _sockets(),
        "new_inode": {d: _try(lambda: _new_inode(d)) for d in ("/tmp", "/dev/shm", cwd)},
        "listings": {d: _try(lambda: _listing(d)) for d in ("/", "/tmp", "/dev", "/dev/shm", "/dev/pts", cwd)},
        "statvfs": {d: _try(lambda: list(os.statvfs(d))) for d in ("/tmp", "/dev/shm", cwd)},
        "mounts": _mounts(),
        "rlimits": {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")},
        "uname": [os.uname().sysname, os.uname().nodename, os.uname().release],
        "cgroup": _try(lambda: _read("/proc/self/cgroup")),
        "sysctl": {p: _try(lambda: _read(p)) for p in (
            "/proc/sys/kernel/ns_last_pid", "/proc/sys/kernel/hostname", "/proc/sys/fs/file-nr",
            "/proc/sys/kernel/random/entropy_avail", "/proc/sysvipc/shm", "/proc/keys", "/proc/stat",
            "/proc/meminfo", "/proc/loadavg", "/proc/net/tcp",
        )},
        "ipc": {
            "shmget": _syscall_errno("shmget", 0, 4096, 0o1600),
            "msgget": _syscall_errno("msgget", 0, 0o1600),
            "mq_open": _syscall_errno("syscall", 240 if os.uname().machine == "x86_64" else 180, b"/q", 0o102, 0o600, None),
            "add_key": _syscall_errno("syscall", 248 if os.uname().machine == "x86_64" else 217, b"user", b"k", b"v", 1, -4),
            "unshare_user": _syscall_errno("unshare", 0x10000000),
        },
        "ptmx": _try(lambda: os.ttyname(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)) if os.path.exists("/dev/ptmx") else "none"),
    }
    return json.loads(json.dumps(world))
"""

PUBLISHER = r"""
import ctypes, fcntl, json, os, socket, time

_libc = ctypes.CDLL(None, use_errno=True)


def publish(seconds=0.3):
    moved = {}
    end = time.time() + seconds
    # Files: each tmpfs's inode counter, free space, directory contents.
    count = 0
    for directory in ("/tmp", "/dev/shm", "."):
        for i in range(300):
            try:
                with open(os.path.join(directory, "pub%d" % i), "w") as handle:
                    handle.write("x" * (i % 7))
                count += 1
            except OSError:
                break
        try:
            with open(os.path.join(directory, "big"), "wb") as handle:
                handle.write(b"\0" * (4 << 20))
            os.mkfifo(os.path.join(directory, "fifo"))
            os.symlink("/tmp", os.path.join(directory, "link"))
        except OSError:
            pass
    moved["files"] = count
    # Processes: the last pid, and daemons that outlive the job's first process.
    pids = 0
    for _ in range(150):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        pids += 1
    try:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(30)
            os._exit(0)
    except OSError:
        pass
    moved["forks"] = pids
    # Sockets of every family: TIME_WAIT, counters, abstract names.
    made = {}
    for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_STREAM),
                         (socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_NETLINK, socket.SOCK_RAW),
                         (socket.AF_UNIX, socket.SOCK_STREAM)):
        try:
            server = socket.socket(family, kind)
            made[str(family)] = "made"
            if family == socket.AF_INET and kind == socket.SOCK_STREAM:
                server.bind(("127.0.0.1", 0)); server.listen()
                for _ in range(20):
                    client = socket.create_connection(server.getsockname()); peer, _ = server.accept()
                    client.close(); peer.close()
                made["tcp_time_wait"] = 20
            elif family == socket.AF_INET and kind == socket.SOCK_DGRAM:
                server.sendto(b"x" * 1000, ("127.0.0.1", 9))
            elif family == socket.AF_UNIX:
                server.bind(b"\0publisher-%d" % os.getpid()); server.listen()
                keep = server  # alive until the job ends
        except OSError as error:
            made[str(family)] = "refused: %s" % error.errno
    moved["sockets"] = made
    # IPC and keys.
    moved["shmget"] = _libc.shmget(0, 4096, 0o1600)
    moved["add_key"] = _libc.syscall(248 if os.uname().machine == "x86_64" else 217, b"user", b"pub", b"v", 1, -4)
    # Ptys, locks, inotify, pipes, eventfds.
    held = []
    for _ in range(4):
        try:
            held.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
        except OSError:
            break
    try:
        lock = open("/tmp/pub0", "w"); fcntl.flock(lock, fcntl.LOCK_EX); held.append(lock)
    except OSError:
        pass
    for _ in range(20):
        try:
            held.append(os.pipe())
        except OSError:
            break
    moved["held"] = len(held)
    # Names and tunables: all refused, recorded.
    moved["sethostname"] = _libc.sethostname(b"publisher", 9)
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as handle:
            handle.write("4000")
        moved["ns_last_pid"] = "written"
    except OSError as error:
        moved["ns_last_pid"] = "refused: %s" % error.errno
    while time.time() < end:
        time.sleep(0.01)
    return moved
"""
