"""Reader/writer attacks between checks, shared by the hostile suites.

A *writer* is a correct answer that also leaves its results somewhere; a *reader* is an answer that
does not know the function and returns whatever it finds there. Alone, a reader fails; if it
passes after a writer, something of one check reached another. The table of expected values is
drawn at random per test session, so only a leak can produce it.

Each channel is one an attacker tried (issue: "a second wave of verifier attacks"):

- ``frames``/``heap``: the memory the job inherited from the process that forked it (the pool's
  supervisor held earlier jobs' frames and replies);
- ``sysv_shm``, ``sysv_msg``, ``sysv_sem``, ``posix_mq``: kernel IPC objects, which outlive the job
  in its IPC namespace;
- ``keyring``: kernel keys, which are not namespaced at all and outlive every sandbox;
- ``dev_shm``, ``tmp``: files in the scratch directories;
- ``inflight_socket``: an abstract unix socket whose name holds the results, kept alive after the
  job by putting its own descriptor in flight (SCM_RIGHTS), in the slot's network namespace.
"""

from __future__ import annotations

import platform
import secrets
from pathlib import Path

from rlvr.sandbox import bwrap
from rlvr.types import Query

TABLE = [secrets.randbelow(30000) + 1000 for _ in range(8)]
"""f(i) for i in 0..7: tests 0-3 are visible, 4-7 hidden. Values fit a SysV semaphore (< 32768)."""

_SYSCALLS = {"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219}}
SYSCALL = _SYSCALLS.get(platform.machine(), _SYSCALLS["x86_64"])

_LIBC = (
    "import ctypes, json, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "def _value(x):\n    return x['value'] if type(x) is dict else x\n"
)

# What a writer does with its table (``DATA`` is its JSON text, bytes); each must not raise.
STASH = {
    "sysv_shm": "libc.shmat.restype = ctypes.c_void_p\n"
    "sid = libc.shmget(0x5151, 4096, 0o1666)\n"
    "addr = libc.shmat(sid, None, 0) if sid >= 0 else None\n"
    "if addr not in (None, ctypes.c_void_p(-1).value): ctypes.memmove(addr, DATA, len(DATA))\n",
    "sysv_msg": "qid = libc.msgget(0x5152, 0o1666)\n"
    "buf = ctypes.create_string_buffer(bytes([1, 0, 0, 0, 0, 0, 0, 0]) + DATA)\n"
    "qid >= 0 and libc.msgsnd(qid, buf, len(DATA), 0o4000)\n",
    "sysv_sem": "sid = libc.semget(0x5153, 8, 0o1666)\n"
    "for i, v in enumerate(TABLE):\n    sid >= 0 and libc.semctl(sid, i, 16, v)\n",
    "posix_mq": "mqd = libc.mq_open(b'/rlvr-leak', os.O_CREAT | os.O_RDWR, 0o666, None)\n"
    "mqd >= 0 and libc.mq_send(mqd, DATA, len(DATA), 0)\n",
    "keyring": f"key = libc.syscall({SYSCALL['add_key']}, b'user', b'rlvr-leak', DATA, len(DATA), -4)\n"
    f"key > 0 and libc.syscall({SYSCALL['keyctl']}, 5, key, 0x3f3f3f3f)\n",
    "dev_shm": "try: open('/dev/shm/rlvr-leak', 'wb').write(DATA)\nexcept OSError: pass\n",
    "tmp": "try: open('/tmp/rlvr-leak', 'wb').write(DATA)\nexcept OSError: pass\n",
    "inflight_socket": "import array, socket\n"
    "keep = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
    "keep.bind(b'\\0rlvr-leak:' + DATA)\n"
    "a, b = socket.socketpair()\n"
    "fds = array.array('i', [keep.fileno(), a.fileno(), b.fileno()])\n"
    "for end in (a, b):\n"
    "    try: end.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])\n"
    "    except OSError: pass\n",
}

# What a reader does to find a table: sets ``FOUND`` to the JSON text, or leaves it None.
FIND = {
    "frames": "import base64, sys\n"
    "frame = sys._getframe()\n"
    "while frame is not None:\n"
    "    for value in list(frame.f_locals.values()):\n"
    "        if type(value) is dict and type(value.get('channel')) is str:\n"
    "            try: FOUND = json.dumps(json.loads(base64.b64decode(value['channel']))['results'])\n"
    "            except Exception: pass\n"
    "    frame = frame.f_back\n",
    "heap": 'marker = b\'{"status": "ok", "results": \'\n'
    "for line in open('/proc/self/maps'):\n"
    "    span, perms = line.split()[:2]\n"
    "    start, end = (int(x, 16) for x in span.split('-'))\n"
    "    if not perms.startswith('r') or end - start > 1 << 28 or '[v' in line: continue\n"
    "    data = ctypes.string_at(start, end - start)\n"
    "    at = data.find(marker)\n"
    "    while at >= 0 and FOUND is None:\n"
    "        try: results = json.JSONDecoder().raw_decode(data[at:at + 65536].decode('latin-1'))[0]['results']\n"
    "        except Exception: results = []\n"
    "        if len(results) == 8: FOUND = json.dumps(results)\n"
    "        at = data.find(marker, at + 1)\n",
    "sysv_shm": "libc.shmat.restype = ctypes.c_void_p\n"
    "sid = libc.shmget(0x5151, 0, 0)\n"
    "addr = libc.shmat(sid, None, 0) if sid >= 0 else None\n"
    "if addr not in (None, ctypes.c_void_p(-1).value): FOUND = ctypes.string_at(addr).decode()\n",
    "sysv_msg": "qid = libc.msgget(0x5152, 0)\n"
    "buf = ctypes.create_string_buffer(4096)\n"
    "n = libc.msgrcv(qid, buf, 4000, 0, 0o4000) if qid >= 0 else -1\n"
    "if n > 0: FOUND = buf.raw[8:8 + n].decode()\n",
    "sysv_sem": "sid = libc.semget(0x5153, 0, 0)\n"
    "if sid >= 0: FOUND = json.dumps([libc.semctl(sid, i, 12) for i in range(8)])\n",
    "posix_mq": "mqd = libc.mq_open(b'/rlvr-leak', os.O_RDONLY | os.O_NONBLOCK)\n"
    "buf = ctypes.create_string_buffer(1 << 16)\n"
    "n = libc.mq_receive(mqd, buf, 1 << 16, None) if mqd >= 0 else -1\n"
    "if n > 0: FOUND = buf.raw[:n].decode()\n",
    "keyring": "try: lines = open('/proc/keys').read().splitlines()\nexcept OSError: lines = []\n"
    "for line in lines:\n"
    "    if 'rlvr-leak' in line:\n"
    "        buf = ctypes.create_string_buffer(4096)\n"
    f"        n = libc.syscall({SYSCALL['keyctl']}, 11, int(line.split()[0], 16), buf, 4096)\n"
    "        if n > 0: FOUND = buf.raw[:n].decode()\n",
    "dev_shm": "try: FOUND = open('/dev/shm/rlvr-leak').read()\nexcept OSError: pass\n",
    "tmp": "try: FOUND = open('/tmp/rlvr-leak').read()\nexcept OSError: pass\n",
    "inflight_socket": "for line in open('/proc/net/unix').read().splitlines():\n"
    "    at = line.find('@rlvr-leak:')\n"
    "    if at >= 0: FOUND = line[at + len('@rlvr-leak:'):].strip()\n",
}
STASH["frames"] = STASH["heap"] = ""  # the writer's results frame is what these readers look for

CHANNELS = sorted(FIND)


def python_query(name: str) -> Query:
    """f(i) = TABLE[i]; the second half of the tests are hidden."""
    tests = [{"args": [i], "expected": value} for i, value in enumerate(TABLE)]
    return Query(
        f"leak-{name}", "", {"type": "python", "entry_point": "f", "tests": tests[:4], "hidden_tests": tests[4:]}
    )


def python_writer(channel: str) -> str:
    return f"{_LIBC}TABLE = {TABLE!r}\nDATA = json.dumps(TABLE).encode()\n{STASH[channel]}\ndef f(i):\n    return TABLE[i]\n"


def python_reader(channel: str) -> str:
    return (
        f"{_LIBC}FOUND = None\n{FIND[channel]}\ndef f(i):\n    return _value(json.loads(FOUND)[i]) if FOUND else -1\n"
    )


def stdio_query(name: str) -> Query:
    tests = [{"stdin": f"{i}\n", "stdout": f"{value}\n"} for i, value in enumerate(TABLE)]
    return Query(f"leak-stdio-{name}", "", {"type": "stdio", "tests": tests[:4], "hidden_tests": tests[4:]})


def stdio_writer(channel: str) -> str:
    return (
        f"{_LIBC}TABLE = {TABLE!r}\nDATA = json.dumps(TABLE).encode()\n{STASH[channel]}\nprint(TABLE[int(input())])\n"
    )


def stdio_reader(channel: str) -> str:
    return f"{_LIBC}FOUND = None\n{FIND[channel]}\nprint(_value(json.loads(FOUND)[int(input())]) if FOUND else -1)\n"


def sandbox_uid_processes() -> list[int]:
    """Host pids owned by a sandbox uid (read from the host's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
            if uid in bwrap.SANDBOX_UIDS:
                found.append(int(entry.name))
    return found


def sandbox_kernel_objects() -> list[str]:
    """SysV IPC objects in the host's IPC namespace and kernel key users owned by a sandbox uid.

    A key user outlives every process of its uid (its user keyring is kept until reboot), so key
    users a run of older code left behind are not counted: only those since this module loaded.
    """
    found = []
    for kind in ("shm", "msg", "sem"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        uid_column = lines[0].split().index("uid")
        found += [f"{kind}: {line}" for line in lines[1:] if int(line.split()[uid_column]) in bwrap.SANDBOX_UIDS]
    for line in Path("/proc/key-users").read_text().splitlines():
        uid = int(line.split(":")[0])
        if uid in bwrap.SANDBOX_UIDS and uid not in _KEY_USERS_BEFORE:
            found.append(f"key user: {line.strip()}")
    return found


_KEY_USERS_BEFORE = {int(line.split(":")[0]) for line in Path("/proc/key-users").read_text().splitlines()}


# --- counters: kernel state that outlives a job though nothing the job made does -------------------
#
# Third wave: a slot's jobs shared the state the kernel keeps per namespace and per mount. A correct
# "publisher" moves a counter until it reads the answer; a later "copier" reads the counter. Each
# channel carries SECRET (10 bits: enough to pass a query whose answer is one small number), drawn
# from [200, 1000), where no counter of a new sandbox starts (pids, inode numbers and packet counts
# there are all small), so a copier can pass only through a leak.

SECRET = 200 + secrets.randbelow(800)

_NET = (
    "def _net(name):\n    for path in ('/proc/self/net/' + name, '/proc/net/' + name):\n"
    "        try: return open(path).read()\n        except OSError: pass\n    return ''\n"
    "def _udp_out():\n    rows = [l.split() for l in _net('snmp').splitlines() if l.startswith('Udp:')]\n"
    "    return int(dict(zip(rows[0], rows[1]))['OutDatagrams'])\n"
    "def _lo_bytes():\n    line = [l for l in _net('dev').splitlines() if l.strip().startswith('lo:')][0]\n"
    "    return int(line.split(':')[1].split()[0])\n"
)
_UDP = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
COUNTER_STASH = {
    # The last pid of the pid namespace: fork until the copier's own pid (the next one, when the
    # zygote's fork of the copier is the next fork in the slot) or its child's is SECRET (mod 1024).
    **{
        name: "for _ in range(1100):\n"
        "    pid = os.fork()\n    if pid == 0: os._exit(0)\n    os.waitpid(pid, 0)\n"
        f"    if (pid + {ahead}) % 1024 == SECRET: break\n"
        for name, ahead in (("last_pid", 1), ("last_pid_child", 2))
    },
    # The next inode number of each tmpfs: create files until it is SECRET (mod 1024).
    **{
        f"inode_{name}": f"for i in range(1100):\n"
        f"    path = {directory!r} + '/c%d' % i\n"
        "    open(path, 'w').close()\n"
        "    if (os.stat(path).st_ino + 1) % 1024 == SECRET: break\n"
        for name, directory in (("tmp", "/tmp"), ("dev_shm", "/dev/shm"), ("workdir", "."))
    },
    # TCP: a connection closed from the client side stays in TIME_WAIT for 60 s, its local port
    # (20000 + SECRET) listed in /proc/net/tcp after the job is gone.
    "tcp_time_wait": "import socket\nserver = socket.create_server(('127.0.0.1', 0))\n"
    "client = socket.socket()\nclient.bind(('127.0.0.1', 20000 + SECRET))\n"
    "client.connect(server.getsockname())\npeer, _ = server.accept()\nclient.close()\npeer.close()\n",
    # The UDP counters of /proc/net/snmp: datagrams sent on the loopback until the count is SECRET (mod 1024).
    "udp_counters": f"{_NET}{_UDP}for _ in range((SECRET - _udp_out()) % 1024): s.sendto(b'x', ('127.0.0.1', 9))\n",
    # The loopback's byte counter (/proc/net/dev): one empty datagram measures the headers, then one
    # datagram brings the count to SECRET (mod 1024).
    "loopback_bytes": f"{_NET}{_UDP}before = _lo_bytes()\ns.sendto(b'', ('127.0.0.1', 9))\n"
    "headers = _lo_bytes() - before\n"
    "s.sendto(b'x' * ((SECRET - _lo_bytes() - headers) % 1024), ('127.0.0.1', 9))\n",
}

COUNTER_FIND = {
    "last_pid": "FOUND = os.getpid() % 1024\n",
    "last_pid_child": "pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)\nFOUND = pid % 1024\n",
    **{
        f"inode_{name}": f"path = {directory!r} + '/r'\nopen(path, 'w').close()\nFOUND = os.stat(path).st_ino % 1024\n"
        for name, directory in (("tmp", "/tmp"), ("dev_shm", "/dev/shm"), ("workdir", "."))
    },
    "tcp_time_wait": f"{_NET}for line in _net('tcp').splitlines()[1:]:\n"
    "    local, state = line.split()[1], line.split()[3]\n"
    "    if state == '06': FOUND = int(local.split(':')[1], 16) - 20000\n",
    "udp_counters": f"{_NET}FOUND = _udp_out() % 1024\n",
    "loopback_bytes": f"{_NET}FOUND = _lo_bytes() % 1024\n",
}
COUNTERS = sorted(COUNTER_FIND)


def _guarded(code: str) -> str:
    """A writer's stash that cannot raise: in a sandbox that refuses a step, the answer still passes."""
    return "try:\n" + "".join(f"    {line}\n" for line in code.splitlines()) + "except OSError:\n    pass\n"


def counter_query(name: str) -> Query:
    return Query(
        f"counter-{name}", "", {"type": "python", "entry_point": "f", "tests": [{"args": [], "expected": SECRET}]}
    )


def counter_writer(name: str) -> str:
    return f"import os\nSECRET = {SECRET}\n{_guarded(COUNTER_STASH[name])}def f():\n    return SECRET\n"


def counter_reader(name: str) -> str:
    return f"import os\nFOUND = -1\n{_guarded(COUNTER_FIND[name])}def f():\n    return FOUND\n"
