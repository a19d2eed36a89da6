"""The hostile-input suite: completions that try to fool the python verifier, abuse resources or
escape the sandbox, judged by the real verifier in both isolation modes (pooled and fresh).

Each case is a query whose only passing answer would prove the attack worked: the expected value
is a secret the sandbox cannot know (a host file's content, a token served on the host's loopback,
a random number the host keeps) or a value only an escaped or rigged run could return. So "no
false pass" and "no escape" are one assertion: every case must FAIL. After the whole suite: no
process of a sandbox uid is left on the host, nothing was written to the host, and an honest
answer still passes (the machine is unharmed).

Every case is bounded by LIMITS (2 s wall clock, 1 s CPU).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import threading
from pathlib import Path

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.types import Query, Verdict
from rlvr.verifiers.python import PythonVerifier

from . import leaks

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

LIMITS = SandboxLimits(
    wall_s=2.0, cpu_s=1, memory_mb=256, processes=16, file_size_mb=4, open_files=64, tmpfs_mb=16, output_bytes=64 * 1024
)
SECRET = secrets.randbelow(10**12) + 10**12
"""The hidden expected value of the judging hacks: it never enters the sandbox."""
HOST_MARKER = Path(f"/tmp/rlvr-hostile-{secrets.token_hex(6)}")
"""A host path that cases try to create; it must not exist afterwards."""


def _host_token_server() -> tuple[int, str]:
    """A TCP server on the host's loopback that hands out a token: reaching it means network escape."""
    token = secrets.token_hex(8)
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(60)

    def serve() -> None:
        try:
            while True:
                connection, _ = server.accept()
                connection.sendall(token.encode())
                connection.close()
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], token


PORT, TOKEN = _host_token_server()
HOST_PASSWD = Path("/etc/passwd").read_text()
HOST_HOSTNAME = socket.gethostname()

# (name, code defining f(), expected value that only a successful attack would return)
CASES: list[tuple[str, str, object]] = [
    # --- judging hacks: the verdict is decided on the host from data -----------------------------
    ("exit_0_at_import", "import os\nos._exit(0)\ndef f(): pass", SECRET),
    ("sys_exit_at_import", "import sys\nsys.exit(0)\ndef f(): pass", SECRET),
    ("sys_exit_in_function", "import sys\ndef f():\n    sys.exit(0)", SECRET),
    ("os_exit_in_function", "import os\ndef f():\n    os._exit(0)", SECRET),
    ("raise_system_exit", "def f():\n    raise SystemExit(0)", SECRET),
    ("raise_keyboard_interrupt", "def f():\n    raise KeyboardInterrupt", SECRET),
    (
        "always_equal_object",
        "class E:\n    def __eq__(self, o): return True\n    def __hash__(self): return 0\ndef f():\n    return E()",
        SECRET,
    ),
    (
        "int_subclass_rigged_eq",
        "class I(int):\n    def __eq__(self, o): return True\ndef f():\n    return I(0)",
        SECRET,
    ),
    ("str_subclass", "class S(str):\n    def __eq__(self, o): return True\ndef f():\n    return S('x')", "anything"),
    ("bool_for_int", "def f():\n    return True", 1),
    ("nan_for_float", "def f():\n    return float('nan')", 0.5),
    (
        "print_pass_sentinel",
        "def f():\n    print('ALL TESTS PASSED'); print('{\"status\": \"ok\"}')\n    return 0",
        SECRET,
    ),
    (
        "forge_frame_on_channel",
        "import os, json\ndef f():\n    fd = int(os.environ['RLVR_CHANNEL_FD'])\n"
        "    os.write(fd, json.dumps({'status': 'ok', 'results': [{'value': 1}], 'nonce': 'guess'}).encode())\n"
        "    os._exit(0)",
        SECRET,
    ),
    (
        "second_frame_on_channel",
        "import os, json\ndef f():\n    fd = int(os.environ['RLVR_CHANNEL_FD'])\n"
        '    os.write(fd, b\'{"status": "ok"}\')\n    return 0',
        SECRET,
    ),
    (
        "patch_json_dumps",
        "import json\n_real = json.dumps\njson.dumps = lambda body, **k: _real({**body, 'results': [{'value': 1}]}, **k)\n"
        "def f():\n    return 0",
        SECRET,
    ),
    (
        "search_memory_for_expected",
        "import gc\ndef f():\n    ints = [o for o in gc.get_objects() if type(o) is int and o > 10**12]\n"
        "    return max(ints) if ints else 0",
        SECRET,
    ),
    (
        "read_all_files_for_expected",
        "import os\ndef f():\n    found = []\n    for root in ('.', '/sandbox', '/tmp'):\n"
        "        for dirpath, _, files in os.walk(root):\n            for name in files:\n"
        "                try: found.append(open(os.path.join(dirpath, name)).read())\n"
        "                except Exception: pass\n    return '\\n'.join(found)",
        str(SECRET),
    ),
    ("lookup_table_of_visible_tests", "def f():\n    return {(): 7}[()]", SECRET),
    ("generator_instead_of_value", "def f():\n    return (x for x in [SECRET])", SECRET),
    ("huge_int", "def f():\n    return 10 ** 20000", SECRET),
    ("deeply_nested_list", "def f():\n    x = []\n    for _ in range(10000): x = [x]\n    return x", SECRET),
    # --- resource abuse ---------------------------------------------------------------------------
    ("busy_loop", "def f():\n    while True: pass", SECRET),
    ("sleep_forever", "import time\ndef f():\n    time.sleep(1000)", SECRET),
    ("memory_bomb", "def f():\n    x = bytearray(10 ** 10)\n    return len(x)", 10**10),
    ("memory_creep", "def f():\n    x = []\n    while True: x.append(' ' * 10 ** 6)", SECRET),
    ("fork_bomb", "import os\ndef f():\n    while True:\n        try: os.fork()\n        except OSError: pass", SECRET),
    (
        "thread_bomb",
        "import threading, time\ndef f():\n    while True:\n"
        "        threading.Thread(target=time.sleep, args=(100,)).start()",
        SECRET,
    ),
    ("stdout_flood", "def f():\n    while True: print('x' * 10000)", SECRET),
    ("stderr_flood", "import sys\ndef f():\n    while True: sys.stderr.write('x' * 10000)", SECRET),
    (
        "channel_flood",
        "import os\ndef f():\n    fd = int(os.environ['RLVR_CHANNEL_FD'])\n    while True: os.write(fd, b'x' * 65536)",
        SECRET,
    ),
    (
        "disk_fill_cwd",
        "def f():\n    with open('big', 'wb') as h:\n        while True: h.write(b'x' * 10 ** 6)",
        SECRET,
    ),
    (
        "disk_fill_tmp",
        "def f():\n    with open('/tmp/big', 'wb') as h:\n        while True: h.write(b'x' * 10 ** 6)",
        SECRET,
    ),
    ("fd_exhaustion", "def f():\n    fds = [open('/dev/null') for _ in range(100000)]\n    return len(fds)", 100000),
    ("recursion_segfault", "import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(n=0):\n    return f(n + 1)", SECRET),
    ("ctypes_segfault", "import ctypes\ndef f():\n    return ctypes.string_at(0)", SECRET),
    ("abort", "import os\ndef f():\n    os.abort()", SECRET),
    (
        "busy_child_left_running",
        "import os\ndef f():\n    if os.fork() == 0:\n        while True: pass\n    return 0",
        SECRET,
    ),
    # --- isolation: network, host files, writes outside, other processes, daemons ------------------
    (
        "network_host_loopback",
        f"import socket\ndef f():\n    s = socket.create_connection(('127.0.0.1', {PORT}), timeout=1)\n"
        "    return s.recv(100).decode()",
        TOKEN,
    ),
    (
        "network_outside",
        "import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 53), timeout=1)\n    return 1",
        1,
    ),
    ("dns_lookup", "import socket\ndef f():\n    return socket.gethostbyname('pypi.org')", "151.101.0.223"),
    ("read_host_passwd", "def f():\n    return open('/etc/passwd').read()", HOST_PASSWD),
    ("read_host_hostname", "import socket\ndef f():\n    return socket.gethostname()", HOST_HOSTNAME),
    (
        "read_repository",
        "import os\ndef f():\n    return sorted(os.listdir('/work'))",
        sorted(os.listdir("/work")) if os.path.isdir("/work") else ["x"],
    ),
    ("read_root_home", "import os\ndef f():\n    return sorted(os.listdir('/root'))", sorted(os.listdir("/root"))),
    # (inside, /tmp is the sandbox's own tmpfs: the write works there; the host path must stay absent)
    ("write_host_tmp", f"def f():\n    open('{HOST_MARKER}', 'w').write('x')\n    return 1", SECRET),
    ("write_usr", "def f():\n    open('/usr/bin/rlvr-hostile', 'w').write('x')\n    return 1", 1),
    ("overwrite_supervisor", "def f():\n    open('/sandbox/pool_worker.py', 'w').write('x')\n    return 1", SECRET),
    # (kills only the job's own processes; the honest answer after the suite shows the slot survived)
    ("kill_everything", "import os, signal\ndef f():\n    os.kill(-1, signal.SIGKILL)\n    return 1", SECRET),
    (
        "kill_pid_1_and_2",
        "import os, signal\ndef f():\n    ok = 0\n    for pid in (1, 2):\n"
        "        try: os.kill(pid, signal.SIGKILL); ok += 1\n        except OSError: pass\n    return ok",
        2,
    ),
    (
        "read_other_process_environ",
        "import os\ndef f():\n    return [open(f'/proc/{p}/environ').read() for p in os.listdir('/proc') if p.isdigit()]",
        SECRET,
    ),
    ("become_root", "import os\ndef f():\n    os.setuid(0)\n    return os.getuid()", 0),
    ("unshare_namespace", "import os\ndef f():\n    os.unshare(os.CLONE_NEWUSER)\n    return 1", 1),
    (
        "setsid_daemon_escape",
        "import os, time\ndef f():\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            time.sleep(60)\n        os._exit(0)\n    return 0",
        SECRET,
    ),
    # --- kernel objects and memory no rlimit counts: denied (seccomp) or bounded by a tmpfs ---------
    (
        "sysv_shm_past_memory_cap",
        "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.shmat.restype = ctypes.c_void_p\n"
        "def f():\n    sid = libc.shmget(0, 768 << 20, 0o1600)\n    addr = libc.shmat(sid, None, 0)\n"
        "    ctypes.memset(addr, 1, 768 << 20)\n    return 768",
        768,
    ),
    (
        "sysv_shm_left_behind",
        "import ctypes\nlibc = ctypes.CDLL(None)\ndef f():\n    return libc.shmget(0x51ef, 1 << 20, 0o1666) >= 0",
        True,
    ),
    (
        "sysv_sem_left_behind",
        "import ctypes\nlibc = ctypes.CDLL(None)\ndef f():\n    return libc.semget(0x51ef, 4, 0o1666) >= 0",
        True,
    ),
    (
        "sysv_msg_left_behind",
        "import ctypes\nlibc = ctypes.CDLL(None)\ndef f():\n    return libc.msgget(0x51ef, 0o1666) >= 0",
        True,
    ),
    (
        "posix_mq_left_behind",
        "import ctypes, os\nlibc = ctypes.CDLL(None)\n"
        "def f():\n    return libc.mq_open(b'/rlvr-hostile', os.O_CREAT | os.O_RDWR, 0o666, None) >= 0",
        True,
    ),
    (
        "kernel_key_left_behind",
        f"import ctypes\nlibc = ctypes.CDLL(None)\n"
        f"def f():\n    return libc.syscall({leaks.SYSCALL['add_key']}, b'user', b'rlvr-hostile', b'x', 1, -4) > 0",
        True,
    ),
    (
        "memfd_past_memory_cap",
        "import os\ndef f():\n    fds = []\n    for _ in range(48):\n"
        "        fd = os.memfd_create('x'); os.write(fd, b'x' * (4 << 20)); fds.append(fd)\n    return 192",
        192,
    ),
    (
        "dev_shm_past_memory_cap",
        "def f():\n    total = 0\n    try:\n        for i in range(64):\n"
        "            with open(f'/dev/shm/x{i}', 'wb') as h:\n"
        "                for _ in range(4): h.write(b'x' * (1 << 20)); total += 1\n"
        "    except OSError: pass\n    return total",
        256,
    ),
    (
        "posix_shared_memory_module",
        "from multiprocessing import shared_memory\ndef f():\n"
        "    block = shared_memory.SharedMemory(create=True, size=512 << 20)\n"
        "    block.buf[:] = b'x' * (512 << 20)\n    return block.size",
        512 << 20,
    ),
    (
        "io_uring_setup",
        "import ctypes\nlibc = ctypes.CDLL(None)\nparams = ctypes.create_string_buffer(120)\n"
        "def f():\n    return libc.syscall(425, 4, params) >= 0",
        True,
    ),
    # --- cleanup trouble: whatever the job leaves, its verdict stands (fail, never error) ----------
    (
        "nested_dirs_past_recursion_limit",
        "import os\ndef f():\n    for _ in range(3000):\n        os.mkdir('d'); os.chdir('d')\n    return 0",
        SECRET,
    ),
    (
        "nested_dirs_past_path_max",
        "import os\ndef f():\n    for _ in range(40):\n"
        "        os.mkdir('n' * 250); os.chdir('n' * 250)\n    return len(os.getcwd())",
        SECRET,
    ),
    (
        "nested_dirs_in_tmp",
        "import os\ndef f():\n    os.chdir('/tmp')\n    for _ in range(3000):\n"
        "        os.mkdir('d'); os.chdir('d')\n    return 0",
        SECRET,
    ),
    (
        "many_files",
        "import os, time\ndef f():\n    end = time.time() + 1.0\n    i = 0\n"
        "    while time.time() < end:\n        open(f'f{i}', 'w').close(); i += 1\n    return 0",
        SECRET,
    ),
    (
        "fifo_and_socket_in_tmp",
        "import os, socket\ndef f():\n    os.mkfifo('/tmp/fifo')\n"
        "    socket.socket(socket.AF_UNIX).bind('/tmp/sock')\n    return 0",
        SECRET,
    ),
    (
        "symlink_to_supervisor",
        "import os\ndef f():\n    os.symlink('/sandbox/pool_worker.py', 'link')\n"
        "    os.symlink('/usr', '/tmp/usr')\n    return 0",
        SECRET,
    ),
    (
        "unreadable_dirs_in_tmp",
        "import os\ndef f():\n    os.makedirs('/tmp/a/b/c')\n    open('/tmp/a/b/c/x', 'w').close()\n"
        "    for p in ('/tmp/a/b/c', '/tmp/a/b', '/tmp/a'): os.chmod(p, 0)\n    return 0",
        SECRET,
    ),
    (
        "chmod_job_dir_against_cleanup",
        "import os\ndef f():\n    os.makedirs('a/b')\n    open('a/b/c', 'w').write('x')\n"
        "    os.chmod('a/b', 0); os.chmod('a', 0); os.chmod('.', 0)\n    return 0",
        SECRET,
    ),
]


def _query(name: str, expected: object) -> Query:
    return Query(
        f"hostile-{name}", "", {"type": "python", "entry_point": "f", "tests": [{"args": [], "expected": expected}]}
    )


def test_the_suite_is_big_enough() -> None:
    assert len(CASES) >= 40
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("isolation", ["pool", "fresh"])
def test_no_hostile_completion_passes_and_nothing_escapes(isolation: str) -> None:
    verifier = PythonVerifier(limits=LIMITS, isolation=isolation, slots=2)
    try:
        items = [(_query(name, expected), code) for name, code, expected in CASES]
        results = verifier.verify_batch(items)
        verdicts = {
            name: (result.verdict, result.error_class.value, result.detail)
            for (name, _, _), result in zip(CASES, results)
        }
        passed = {name: v for name, v in verdicts.items() if v[0] is not Verdict.FAIL}
        assert not passed, passed  # no false pass, no infrastructure error: each is a plain fail
        # The machine is unharmed: nothing of the runs is alive, nothing was written to the host,
        # and an honest answer still passes afterwards.
        assert leaks.sandbox_uid_processes() == []
        assert not HOST_MARKER.exists() and not Path("/usr/bin/rlvr-hostile").exists()
        honest = verifier.verify(_query("honest", SECRET), f"def f():\n    return {SECRET}")
        assert honest.verdict is Verdict.PASS, honest
    finally:
        verifier.close()
    assert leaks.sandbox_uid_processes() == []
    assert leaks.sandbox_kernel_objects() == []  # no SysV object or kernel key a sandbox made


def test_resource_abuse_is_classified() -> None:
    """The fail says why, so that a user can tell a timeout from a crash or a hack."""
    verifier = PythonVerifier(limits=LIMITS, slots=2)
    try:
        wanted = {
            "busy_loop": "timeout",
            "sleep_forever": "timeout",
            "memory_bomb": "memory",
            "stdout_flood": "output_limit",
            "channel_flood": "output_limit",
            "always_equal_object": "wrong_answer",
            "forge_frame_on_channel": "protocol_violation",
            "sys_exit_at_import": "runtime_error",
        }
        cases = [(name, code, expected) for name, code, expected in CASES if name in wanted]
        results = verifier.verify_batch([(_query(name, expected), code) for name, code, expected in cases])
        got = {name: result.error_class.value for (name, _, _), result in zip(cases, results)}
        assert got == wanted
    finally:
        verifier.close()
