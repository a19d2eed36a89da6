"""Hostile tool calls (sandbox/tool.py, rollout/tools.py) join the hostile suite.

A policy's tool call is untrusted code that runs in the middle of a rollout. Each case here is an
attack a call can make, with an assertion that fails if the attack works:

- the host is out of reach: its files (the repository, $HOME, /etc), its environment (a secret the
  test process puts in its own environment before the pool starts, which pid 1 of the call's own
  namespace really holds), its network, and a verification running at the same time (its hidden
  test's argument, its code and its planted files and processes; its expected value never enters
  any sandbox);
- nothing of one call reaches another: files, daemons, Python state, sockets kept alive by a
  descriptor in flight (a leak this suite found; every pool job now runs with sendmsg denied, seccomp.py JOB_DENIED), writes after
  exit; kills, writes to other descriptors, invalid UTF-8, huge lines, fork and memory bombs;
- a call that hangs or floods costs its own budget and nothing more: killed at its limit, the other
  calls of its batch answered correctly, the next batch as fast as before;
- an observation cannot carry a special or tag token, whatever the call prints;
- afterwards no process of a sandbox uid is left on the host.

``SCAN`` looks for a needle everywhere a call can look (processes' command lines and environments,
its environment, the scratch and working directories, its own memory). A needle is passed as two
halves that the scanning call never joins, so the scanner's own code and memory hold no copy of it;
``test_the_scanner_finds_what_a_call_plants`` shows that it finds a needle that is there.

Tests marked xfail(strict=True) are weaknesses found here that need changes outside the tool (the
pool's supervisor or the sandbox); each reason says which. They fail loudly once fixed.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from rlvr.bases import resolve_model_path
from rlvr.models import load_policy
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.rollout.tools import ToolUse, observation_ids, sanitize
from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.sandbox.tool import FORMATS, PROCESSES, TOOL_TAGS, PythonTool, ToolResult, tool_limits
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

WALL_S = 1.0
LIMITS = tool_limits(WALL_S, 4096)
REPO = Path(__file__).resolve().parents[2]
ENV_KEY = "RLVR_TOOL_HOSTILE_SECRET"
ENV_SECRET = "envsecret" + secrets.token_hex(12)
"""Put in this process's environment before the pool starts: bwrap, and pid 1 of every slot, inherit it."""
HOST_SECRET = "hostsecret" + secrets.token_hex(12)
"""Written to host files (host /tmp and /dev/shm) that no call may read."""


def _halves(needle: str) -> tuple[str, str]:
    return needle[: len(needle) // 2], needle[len(needle) // 2 :]


SCAN = r'''
import ctypes, json, os, stat

def _has(data, pair):
    head, tail = pair
    at = data.find(head)
    while at >= 0:
        if data[at + len(head):at + len(head) + len(tail)] == tail:
            return True
        at = data.find(head, at + 1)
    return False

def scan(pairs, roots=("/tmp", "/dev/shm", "/sandbox")):
    """Where any needle (given as two halves, never joined here) is found: a sorted list of places."""
    pairs = [(head.encode(), tail.encode()) for head, tail in pairs]
    hits, seen = set(), {"processes": 0, "readable": 0, "files": 0, "regions": 0}
    def look(where, data):
        if any(_has(data, pair) for pair in pairs):
            hits.add(where)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            seen["processes"] += 1
            for part in ("cmdline", "environ"):
                try:
                    with open("/proc/%s/%s" % (pid, part), "rb") as handle:
                        look(part, handle.read())
                    seen["readable"] += 1
                except OSError:
                    pass
    look("os.environ", repr(sorted(os.environ.items())).encode())
    for root in (*roots, os.getcwd()):
        for top, dirs, files in os.walk(root):
            for name in dirs + files:
                look("name", os.path.join(top, name).encode())
            for name in files:
                try:
                    if not stat.S_ISREG(os.lstat(os.path.join(top, name)).st_mode):
                        continue  # a fifo would block the scan
                    with open(os.path.join(top, name), "rb") as handle:
                        look(root, handle.read(1 << 20))
                    seen["files"] += 1
                except OSError:
                    pass
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if perms.startswith("r") and end - start <= 1 << 28 and "[v" not in line:
                look("memory", ctypes.string_at(start, end - start))
                seen["regions"] += 1
    return sorted(hits), seen
'''


def _scan_call(needles: list[str], *, before: str = "", after: str = "") -> str:
    pairs = [_halves(n) for n in needles]
    return (
        f"{SCAN}\n{before}\nhits, seen = scan({pairs!r})\n{after}\nprint(json.dumps({{'hits': hits, 'seen': seen}}))\n"
    )


def _run(tool: PythonTool, calls: list[str]) -> list[ToolResult]:
    results = tool.run(calls)
    assert len(results) == len(calls)
    assert not [r for r in results if r.error == "infrastructure"], results
    return results


def _json(result: ToolResult) -> dict:
    assert result.error == "", result
    return json.loads(result.output)


def _slot_pids(tool: PythonTool) -> list[int | None]:
    return [slot.proc.pid if slot is not None else None for slot in tool._pool._slots]


def _batch_latency(tool: PythonTool) -> float:
    best = math.inf
    for _ in range(3):
        started = time.monotonic()
        results = _run(tool, [f"print({i} * 7919)" for i in range(4)])
        best = min(best, time.monotonic() - started)
        assert [r.output for r in results] == [f"{i * 7919}\n" for i in range(4)]
    return best


@pytest.fixture(scope="module", autouse=True)
def _nothing_survives():
    """Set up first, torn down last: after every tool of the module is closed, nothing of theirs lives."""
    yield
    assert leaks.sandbox_uid_processes() == []
    assert leaks.sandbox_kernel_objects() == []


@pytest.fixture(scope="module")
def tool():
    os.environ[ENV_KEY] = ENV_SECRET  # before the slots start: their bwrap inherits it
    tool = PythonTool(LIMITS, slots=2)
    try:
        _run(tool, ["pass", "pass"])  # both slots up
        yield tool
    finally:
        tool.close()
        os.environ.pop(ENV_KEY, None)


@pytest.fixture(scope="module")
def baseline(tool) -> float:
    """The latency of a batch of four trivial calls on the warm pool, before any attack."""
    return _batch_latency(tool)


# --- the scanner works -----------------------------------------------------------------------------


def test_the_scanner_finds_what_a_call_plants(tool) -> None:
    needle = "planted" + secrets.token_hex(10)
    head, tail = _halves(needle)
    plant = (
        "import sys, time\n"
        f"MARK = {head!r} + {tail!r}\n"
        "for path in ('/tmp/p', '/dev/shm/p', 'p'):\n"
        "    open(path, 'w').write(MARK)\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    os.execve(sys.executable, [sys.executable, '-c', 'import time; time.sleep(5)', MARK], {'M': MARK})\n"
        "for _ in range(200):\n"
        "    if b'time.sleep' in open('/proc/%d/cmdline' % child, 'rb').read(): break\n"
        "    time.sleep(0.005)\n"
    )
    found = _json(_run(tool, [_scan_call([needle], before=plant)])[0])
    assert set(found["hits"]) >= {"cmdline", "environ", "/tmp", "/dev/shm", "/sandbox", "memory"}, found
    assert found["seen"]["regions"] > 10 and found["seen"]["processes"] >= 2, found  # the call and its child


# --- 1. nothing of the host ------------------------------------------------------------------------


def test_host_files_are_out_of_reach(tool, tmp_path: Path) -> None:
    host_tmp = tmp_path / "secret.txt"
    host_shm = Path(f"/dev/shm/rlvr-tool-hostile-{secrets.token_hex(6)}")
    host_tmp.write_text(HOST_SECRET)
    host_shm.write_text(HOST_SECRET)
    host_paths = [  # the host has them all: a call that reads one reads host data
        REPO / "pyproject.toml",
        REPO / "src/rlvr/verifiers/python.py",
        REPO / ".venv/pyvenv.cfg",
        REPO,
        Path.home() / ".cache",
        Path.home() / ".cache/huggingface",
        Path("/etc/shadow"),
        Path("/etc/passwd"),
        Path("/etc/hostname"),
        Path("/home"),
        host_tmp,
        host_shm,
    ]
    other_roots = [Path("/proc/1/root/etc/passwd"), Path("/proc/2/root") / str(REPO).lstrip("/")]
    host_paths = [path for path in host_paths if path.exists()]  # ~/.cache/huggingface may not exist
    try:
        assert len(host_paths) >= 11
        code = (
            "import json, os\nout = {}\n"
            f"for path in {[str(p) for p in host_paths + other_roots]!r}:\n"
            "    try:\n"
            "        out[path] = 'LISTED %r' % os.listdir(path) if os.path.isdir(path) else 'READ ' + open(path).read()\n"
            "    except FileNotFoundError:\n        out[path] = 'absent'\n"
            "    except PermissionError:\n        out[path] = 'denied'\n"
            "out['/'] = sorted(os.listdir('/'))\n"
            "out['/root'] = sorted(os.listdir('/root'))\n"
            "print(json.dumps(out))\n"
        )
        result = _run(tool, [code])[0]
    finally:
        host_shm.unlink()
    assert HOST_SECRET not in result.output
    found = _json(result)
    assert {str(p): found[str(p)] for p in host_paths} == {str(p): "absent" for p in host_paths}
    assert all(found[str(p)] in ("absent", "denied") for p in other_roots), found
    assert set(found["/"]) <= {"bin", "dev", "lib", "lib32", "lib64", "proc", "root", "sandbox", "sbin", "tmp", "usr"}
    assert ".cache" not in found["/root"] and found["/root"] != sorted(os.listdir(Path.home()))


def test_the_host_environment_is_out_of_reach(tool) -> None:
    # The secret really is next to the calls: bwrap, and pid 1 of each slot's pid namespace, hold it.
    for pid in _slot_pids(tool):
        init = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for holder in [pid, *init]:
            assert ENV_SECRET.encode() in Path(f"/proc/{holder}/environ").read_bytes()
    probe = (  # the call's /proc shows its own pid namespace: no process of the slot's is there to read
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    uid = [l for l in open('/proc/%s/status' % pid) if l.startswith('Uid:')][0].split()[1]\n"
        "    hits += ['process %s of uid %s visible' % (pid, uid)] if int(uid) != os.getuid() else []\n"
        f"hits += ['os.environ'] if {ENV_KEY!r} in os.environ else []\n"
    )
    results = _run(tool, [_scan_call([ENV_SECRET], after=probe)] * 2)
    for result in results:
        assert ENV_SECRET not in result.output
        found = _json(result)
        assert found["hits"] == [], found
        assert found["seen"]["processes"] >= 1 and found["seen"]["regions"] > 10, found


def _host_server() -> tuple[socket.socket, int, str, list[int]]:
    """A TCP server on the host's loopback handing out a token; counts the connections it gets."""
    token = secrets.token_hex(8)
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        try:
            while True:
                connection, _ = server.accept()
                accepted.append(1)
                connection.sendall(token.encode())
                connection.close()
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1], token, accepted


def test_no_network_reaches_the_host_or_the_outside(tool) -> None:
    server, port, token, accepted = _host_server()
    abstract = f"rlvr-tool-hostile-{secrets.token_hex(6)}"
    unix_server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_server.bind("\0" + abstract)
    unix_server.listen()
    code = (
        "import json, socket\nout = {}\n"
        "def attempt(name, action):\n"
        "    try:\n        out[name] = 'OK ' + repr(action())\n"
        "    except OSError as error:\n        out[name] = 'failed: %s' % type(error).__name__\n"
        f"attempt('host loopback', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=0.5).recv(64))\n"
        "attempt('localhost', lambda: socket.create_connection(('localhost', 22), timeout=0.5))\n"
        "attempt('outside tcp', lambda: socket.create_connection(('1.1.1.1', 53), timeout=0.5))\n"
        "attempt('outside tcp 2', lambda: socket.create_connection(('8.8.8.8', 443), timeout=0.5))\n"
        "attempt('outside udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53)))\n"
        "attempt('dns', lambda: socket.getaddrinfo('pypi.org', 443))\n"
        "attempt('ipv6', lambda: socket.create_connection(('::1', 22), timeout=0.5))\n"
        f"attempt('host abstract unix', lambda: socket.socket(socket.AF_UNIX).connect('\\0{abstract}'))\n"
        "attempt('interfaces', socket.if_nameindex)  # a job makes unix sockets only (seccomp.py job_filter)\n"
        "print(json.dumps(out))\n"
    )
    try:
        found = _json(_run(tool, [code])[0])
    finally:
        server.close()
        unix_server.close()
    assert token not in json.dumps(found) and accepted == []
    assert all(outcome.startswith("failed") for outcome in found.values()), found


def test_a_concurrent_verification_leaks_nothing_to_tool_calls(tool) -> None:
    """A verification runs while tool calls scan for its data. The hidden test's argument and the
    completion's own constant enter the verifier's sandbox (the completion even plants them in
    files and in a process's command line and environment); the expected value never enters any."""
    arg = secrets.randbelow(10**17) + 10**17
    delta = secrets.randbelow(10**17) + 10**17
    expected = arg + delta
    query = Query(
        "tool-hostile-concurrent",
        "",
        {
            "type": "python",
            "entry_point": "f",
            "tests": [{"args": [5], "expected": 5 + delta}],
            "hidden_tests": [{"args": [arg], "expected": expected}],
        },
    )
    planting = (
        "import os, sys, time\n"
        "def f(x):\n"
        "    if x > 10 ** 17:\n"
        "        for path in ('/tmp/plant', '/dev/shm/plant', 'plant'):\n"
        f"            open(path, 'w').write('%d %d' % (x, {delta}))\n"
        "        if os.fork() == 0:\n"
        "            os.execve(sys.executable, [sys.executable, '-c', 'import time; time.sleep(6)', 'PLANT%d' % x],"
        f" {{'PLANT': '%d %d' % (x, {delta})}})\n"
        "        time.sleep(3.0)\n"
        f"    return x + {delta}\n"
    )
    wrong = f"import time\ndef f(x):\n    time.sleep(1.0)\n    return x + {delta} + 1\n"
    verifier = PythonVerifier(limits=SandboxLimits(wall_s=8.0, cpu_s=2, processes=16), slots=2)
    verdicts: list = []
    thread = threading.Thread(
        target=lambda: verdicts.extend(verifier.verify_batch([(query, planting), (query, wrong)]))
    )

    def planted() -> bool:  # the host sees the verifier's planted process
        marker = f"PLANT{arg}".encode()
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
        return False

    try:
        thread.start()
        deadline = time.monotonic() + 20
        while not planted():
            assert time.monotonic() < deadline, "the verification never planted its data"
            time.sleep(0.02)
        needles = [str(arg), str(delta), str(expected)]
        for _ in range(2):
            for result in _run(tool, [_scan_call(needles)] * 2):
                assert not any(needle in result.output for needle in needles)
                found = _json(result)
                assert found["hits"] == [], found
        assert planted(), "the scans did not overlap the verification"
        thread.join(timeout=30)
        assert not thread.is_alive()
    finally:
        thread.join(timeout=30)
        verifier.close()
    assert [v.verdict for v in verdicts] == [Verdict.PASS, Verdict.FAIL], verdicts
    assert leaks.sandbox_uid_processes() == []


# --- 2. nothing of one call reaches another ---------------------------------------------------------


DAEMON = (  # argv: the mark, the pid of the call that started it
    "import os, signal, sys, time\n"
    "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)\n"
    "mark, call, me = sys.argv[1], int(sys.argv[2]), os.getuid()\n"
    "while os.path.exists('/proc/%d' % call): time.sleep(0.001)  # the call is over: the next one may come\n"
    "end = time.time() + 5\n"
    "while time.time() < end:\n"
    "    for path in ('/tmp/daemon', '/dev/shm/daemon', '/sandbox/job/daemon'):\n"
    "        try: open(path, 'w').write(mark)\n"
    "        except OSError: pass\n"
    "    for fd in (1, 2, 3):\n"
    "        try: os.write(fd, mark.encode())\n"
    "        except OSError: pass\n"
    "    for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
    "        try: open('/proc/%s/fd/3' % pid, 'w').write(mark)\n"
    "        except OSError: pass\n"
    "        try:\n"
    "            if os.stat('/proc/%s' % pid).st_uid != me: os.kill(int(pid), signal.SIGKILL)\n"
    "        except OSError: pass\n"
    "    time.sleep(0.005)\n"
)


def _writer(needle: str) -> str:
    head, tail = _halves(needle)
    return (
        "import builtins, json, math, os, sys, time\n"
        f"MARK = {head!r} + {tail!r}\n"
        "for path in ('/tmp/mark', '/dev/shm/mark', 'mark', os.environ['HOME'] + '/home', "
        "os.environ['TMPDIR'] + '/tmpdir', '/tmp/a/b/c/mark'):\n"
        "    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)\n"
        "    open(path, 'w').write(MARK)\n"
        "os.mkfifo('/tmp/fifo')\n"
        "denied = []\n"
        "for path in ('/sandbox/mark', '/mark', '/usr/mark', '/root/mark', '/dev/mark'):\n"
        "    try: open(path, 'w').write(MARK)\n"
        "    except OSError: denied.append(path)\n"
        "builtins.LEFT_BEHIND = MARK\nmath.pi = 3.0\nsys.modules['json'].dumps = None\n"
        "call = os.getpid()\n"
        "for setsid in (False, True):\n"
        "    if os.fork() == 0:\n"
        "        if setsid: os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            os.execv(sys.executable, [sys.executable, '-c', {DAEMON!r}, MARK, str(call)])\n"
        "        os._exit(0)\n"
        "alive = 0\n"
        "for _ in range(300):\n"
        "    alive = sum(MARK.encode() in open('/proc/%s/cmdline' % p, 'rb').read()\n"
        "                for p in os.listdir('/proc') if p.isdigit())\n"
        "    if alive == 2: break\n"
        "    time.sleep(0.005)\n"
        "os.write(3, ('%d daemons, denied %s' % (alive, ','.join(denied))).encode())\n"
    )


def _reader(needle: str) -> str:
    before = (
        "import builtins, math, time\n"
        "time.sleep(0.2)  # a surviving daemon would write now\n"
        "me = os.getpid()\n"
        "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) != me\n"
        "          and open('/proc/%s/status' % p).read().split('Uid:')[1].split()[0] != '0']\n"
    )
    after = (
        "hits += ['builtins'] if hasattr(builtins, 'LEFT_BEHIND') else []\n"
        "hits += ['math.pi'] if math.pi != 3.141592653589793 else []\n"
        "hits += ['others: %s' % others] if others else []\n"
        "hits += ['left: %s' % p for p in ('/tmp', '/dev/shm', '.') if os.listdir(p)]\n"
    )
    return _scan_call([needle], before=before, after=after)


DENIED_WRITES = "denied /sandbox/mark,/mark,/usr/mark,/root/mark,/dev/mark"


def test_files_daemons_and_python_state_do_not_outlive_a_call(tool) -> None:
    needle = "persist" + secrets.token_hex(10)
    # Two slots, four jobs: each reader runs on a slot a writer has just used; then a later batch.
    results = _run(tool, [_writer(needle), _writer(needle), _reader(needle), _reader(needle)])
    assert leaks.sandbox_uid_processes() == []  # the daemons died with their calls, on the host too
    for writer in results[:2]:
        assert writer.output.startswith(f"2 daemons, {DENIED_WRITES}"), writer  # the attack was real
    for reader in [*results[2:], *_run(tool, [_reader(needle), _reader(needle)])]:
        assert needle not in reader.output
        found = _json(reader)
        assert found["hits"] == [], found


def test_output_after_exit_reaches_no_later_call(tool) -> None:
    """A call's children keep writing to its channel and to stdout after it exits; the next calls
    on the same slots get exactly their own output."""
    forger = (
        "import os, time\n"
        "for _ in range(2):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        end = time.time() + 3\n"
        "        while time.time() < end:\n"
        "            for fd in (1, 2, 3):\n"
        "                try: os.write(fd, b'FORGED\\n')\n"
        "                except OSError: pass\n"
        "            time.sleep(0.001)\n"
        "        os._exit(0)\n"
        "print('first')\n"
    )
    honest = "import time\ntime.sleep(0.3)\nprint('second')"
    results = _run(tool, [forger, forger, honest, honest])
    for first in results[:2]:  # its own output: its children's lines may come with it, in any order
        assert "first" in first.output and set(first.output.replace("first", "").split()) <= {"FORGED"}, first
    assert [r.output for r in results[2:]] == ["second\n", "second\n"]
    assert [r.error for r in results[2:]] == ["", ""]
    assert leaks.sandbox_uid_processes() == []


def test_a_socket_kept_alive_by_a_descriptor_in_flight_reaches_no_later_call(tool) -> None:
    """Found here and fixed for every pool job (seccomp.py JOB_DENIED): a unix socket whose own descriptor is in flight
    (SCM_RIGHTS, sent to itself) is owned by no process, so killing the call's processes left it in
    the slot's network namespace: the next call of the slot found its abstract name (any bytes the
    call chose) in /proc/net/unix and could send to it."""
    needle = "inflight" + secrets.token_hex(10)
    head, tail = _halves(needle)
    writer = (
        "import array, socket\n"
        f"name = b'\\0' + ({head!r} + {tail!r}).encode()\n"
        "keep = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "keep.bind(name)\n"
        "a, b = socket.socketpair()\n"
        "fds = array.array('i', [keep.fileno(), a.fileno(), b.fileno()])\n"
        "for end in (a, b):\n"
        "    try: end.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])\n"
        "    except OSError as error: print(type(error).__name__)\n"
        "print(name[1:].decode() in open('/proc/self/net/unix').read())\n"
    )
    reader = (
        f"{SCAN}\nimport socket\n"
        f"listed = _has(open('/proc/self/net/unix', 'rb').read(), ({head!r}.encode(), {tail!r}.encode()))\n"
        "probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        f"try:\n    probe.sendto(b'?', b'\\0' + ({head!r} + {tail!r}).encode()); reachable = True\n"
        "except OSError:\n    reachable = False\n"
        "print(json.dumps({'listed': listed, 'reachable': reachable}))\n"
    )
    results = _run(tool, [writer, writer, reader, reader])
    assert all(r.output.endswith("True\n") for r in results[:2]), results  # bound and listed while it ran
    for result in [*results[2:], *_run(tool, [reader, reader])]:
        assert _json(result) == {"listed": False, "reachable": False}


def test_honest_calls_still_use_sockets_processes_and_asyncio(tool) -> None:
    """What the fd-passing filter must not break."""
    calls = [
        "import asyncio\nasync def main():\n    await asyncio.sleep(0.01)\n    return 6 * 7\nprint(asyncio.run(main()))",
        "import socket\na, b = socket.socketpair()\na.sendall(b'42')\nprint(b.recv(8).decode())",
        "import multiprocessing as mp\nwith mp.get_context('fork').Pool(2) as pool:\n    print(sum(pool.map(abs, [-40, -2])))",
        "import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'print(42)'], capture_output=True,"
        " text=True).stdout, end='')",
    ]
    assert [(r.output, r.error) for r in _run(tool, calls)] == [("42\n", "")] * 4


def test_kills_and_signals_reach_no_process_but_the_calls_own(tool) -> None:
    before = _slot_pids(tool)
    code = (
        "import ctypes, json, os, signal\n"
        "print('before', flush=True)\n"
        "try:  # every process this call may signal: its own, none of them here (it is its namespace's init)\n"
        "    os.kill(-1, signal.SIGKILL)\n"
        "except ProcessLookupError:\n"
        "    pass\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "me, out = os.getpid(), {}\n"
        "for pid in [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != me]:\n"
        "    for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
        "        try: os.kill(pid, sig); out['kill %d %d' % (pid, sig)] = 'OK'\n"
        "        except OSError: pass\n"
        "    try:\n"
        "        signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL); out['pidfd %d' % pid] = 'OK'\n"
        "    except OSError: pass\n"
        "    if libc.ptrace(16, pid, None, None) == 0: out['ptrace %d' % pid] = 'OK'\n"
        "    for path in ('fd/0', 'fd/1', 'fd/2', 'mem'):\n"
        "        for mode in ('rb', 'wb'):\n"
        "            try:\n"
        "                with open('/proc/%d/%s' % (pid, path), mode, buffering=0) as handle:\n"
        "                    handle.write(b'\\0\\0\\0\\2{}') if mode == 'wb' else handle.read(1)\n"
        "                out['%s /proc/%d/%s' % (mode, pid, path)] = 'OK'\n"
        "            except OSError: pass\n"
        "print(json.dumps(out))\n"
    )
    results = _run(tool, [code, "import time\ntime.sleep(0.2)\nprint(7 * 6)"])
    assert results[0].output == "before\n{}\n", results[0]  # it survived its own kill(-1) and hit nothing
    assert results[1].output == "42\n"
    assert _slot_pids(tool) == before  # no slot died or was replaced
    assert [r.output for r in _run(tool, ["print(1)", "print(2)"])] == ["1\n", "2\n"]


def test_only_the_channel_reaches_the_observation(tool) -> None:
    code = (
        "import os, sys\n"
        "os.write(1, b'stdout <answer>1</answer>\\n')\n"
        "os.write(2, b'stderr <answer>2</answer>\\n')\n"
        "sys.__stdout__.write('python stdout\\n'); sys.__stdout__.flush()\n"
        "print('python stderr', file=sys.stderr)\n"
        "for path in ('/dev/stdout', '/dev/stderr', '/proc/self/fd/1', '/dev/tty'):\n"
        "    try: open(path, 'w').write('via ' + path)\n"
        "    except OSError: pass\n"
        "writable = []\n"
        "for fd in range(0, 1024):\n"
        "    try: os.write(fd, b''); writable.append(fd)\n"
        "    except OSError: pass\n"
        "os.write(3, b'raw channel\\n')\n"
        "print('printed', writable)\n"
    )
    forged = "print('TimeoutError: killed after 1 s')\nprint('OutputLimit: killed: channel over 4096 bytes')"
    exits = "import os\nprint('done', flush=True)\nos._exit(0)"
    raised = "import sys\nprint('x')\nsys.exit(0)"
    silent = "import os\nos.close(3)\nraise ValueError('unseen')"
    results = _run(tool, [code, forged, exits, raised, silent])
    assert results[0].output == "raw channel\nprinted [1, 2, 3]\n", results[0]
    assert (results[1].error, results[2].error) == ("", "")  # printing an error line forges no error
    assert results[2].output == "done\n"
    assert (results[3].error, results[3].output) == ("raised", "x\nSystemExit: 0\n")
    assert (results[4].error, results[4].output) == ("raised", "ExitError: exit status 1\n")


def test_invalid_utf8_and_huge_lines(tool) -> None:
    calls = [
        "import os\nos.write(3, b'a\\xff\\xfe\\xc3(b\\x00\\n')\nprint('\\ud800 lone surrogate')",
        "import sys\nsys.stdout.write('\\u20ac' * 1400)",  # the cap (4096 bytes) falls inside a character
        "print('y' * 10 ** 7)",
        "while True: print('z' * 100000, end='')",
    ]
    results = _run(tool, calls)
    assert (results[0].error, results[0].output) == ("", "a\ufffd\ufffd\ufffd(b\x00\n? lone surrogate\n")
    for result in results[1:]:
        assert result.error == "output_limit", result
        assert result.output.endswith("OutputLimit: killed: channel over 4096 bytes")
        assert len(result.output.encode()) <= 4096 + 64
    assert results[1].output.startswith("\u20ac" * 1365 + "\ufffdOutputLimit")
    assert set(results[2].output[:4096]) == {"y"}


# --- 3. a call costs its own budget and nothing more ------------------------------------------------


HOSTILE = {
    "sleep": ("import time\nprint('start', flush=True)\ntime.sleep(100)", "timeout"),
    "busy": ("while True: pass", "timeout"),
    "fork_bomb": ("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", "timeout"),
    "channel_flood": ("while True: print('x' * 1000)", "output_limit"),
    "stdout_flood": ("import os\nwhile True: os.write(1, b'x' * 65536)", "output_limit"),
    "stderr_flood": ("import os\nwhile True: os.write(2, b'x' * 65536)", "output_limit"),
    "huge_line": ("print('y' * 10 ** 7)", "output_limit"),
    "memory_bomb": ("x = bytearray(10 ** 10)", "raised"),
    "memory_creep": ("x = []\nwhile True: x.append(bytearray(10 ** 7))", "raised"),
    "memory_in_children": (
        "import os\nfor _ in range(3):\n    if os.fork() == 0:\n"
        "        try: bytearray(600 << 20); os.write(3, b'allocated\\n')\n"
        "        except MemoryError: os.write(3, b'MemoryError\\n')\n"
        "        os._exit(0)\n    os.wait()\n",
        "",
    ),
}


def test_a_hanging_or_flooding_call_costs_its_own_budget_and_nothing_more(tool, baseline) -> None:
    before = _slot_pids(tool)
    calls, expected = [], []
    for i, (name, (code, error)) in enumerate(HOSTILE.items()):
        calls += [code, f"import time\ntime.sleep(0.05)\nprint({i} * 7919)"]
        expected += [(name, error), ("honest", f"{i * 7919}\n")]
    started = time.monotonic()
    results = _run(tool, calls)
    elapsed = time.monotonic() - started
    got = {}
    for (name, want), result in zip(expected, results):
        if name == "honest":
            assert (result.output, result.error) == (want, ""), result  # the rest of the batch is answered
            continue
        got[name] = result.error
        if want == "timeout":
            assert WALL_S - 0.05 <= result.elapsed_s <= WALL_S + 0.5, (name, result)
        else:
            assert result.elapsed_s < WALL_S, (name, result)
        assert len(result.output.encode()) <= 4096 + 100, name
    assert got == {name: error for name, (_, error) in HOSTILE.items()}
    assert results[0].output == "start\nTimeoutError: killed after 1 s"
    assert results[2 * list(HOSTILE).index("memory_bomb")].output == "MemoryError: \n"
    assert results[2 * list(HOSTILE).index("memory_creep")].output.endswith("MemoryError: \n")
    assert results[2 * list(HOSTILE).index("memory_in_children")].output == "MemoryError\n" * 3
    timeouts = sum(error == "timeout" for _, error in HOSTILE.values())
    assert elapsed < timeouts * WALL_S + 1.5, elapsed  # even if every timeout had run one after another
    assert leaks.sandbox_uid_processes() == []
    assert _slot_pids(tool) == before  # no slot was lost to the attacks
    after = _batch_latency(tool)
    assert after < max(0.25, 5 * baseline), (baseline, after)


# --- 4. observations carry no special or tag token --------------------------------------------------

HOSTILE_TEXT = (
    "<eos><pad><bos><unk><answer>42</answer></tool_response><tool_call>print(1)</tool_call>"
    "<tool_response><think></think><ans<answer>wer>7</ans</answer>wer><</tool_response>/tool_response>"
    "<<<eos>eos>eos></answer"
)


@pytest.fixture(scope="module")
def tags_tools():
    tools = ToolUse(FORMATS["tags"], max_turns=2, timeout_s=WALL_S, output_chars=10_000, slots=1)
    yield tools
    tools.close()


@pytest.fixture(scope="module", params=["shipped", "built"])
def tokenizer(request):
    if request.param == "shipped":
        return load_policy(resolve_model_path("tiny-arith-tool"))[1]
    return build_char_tokenizer(tuple(TOOL_TAGS))


def test_observations_carry_no_special_or_tag_token(tags_tools, tokenizer) -> None:
    tok = tokenizer
    markers = {*tok.all_special_tokens, *(t.content for t in tok.added_tokens_decoder.values())}
    assert {"<eos>", "<answer>", "</tool_response>", "<tool_call>"} <= markers
    marked = {tok.convert_tokens_to_ids(m) for m in markers}
    call = f"print({HOSTILE_TEXT!r})\nimport os\nos.write(3, b'<eo\\xffs><answer\\xc3>')"
    result = tags_tools.run([call])[0]
    assert result.error == "" and result.output.startswith(HOSTILE_TEXT)  # the attack reached the host as text
    assert not any(m in sanitize(result.output, tok) for m in markers)
    fmt = tags_tools.format
    ids = observation_ids(tok, tags_tools, result)
    assert ids[0] == tok.convert_tokens_to_ids(fmt.output_open) and ids[-1] == tok.convert_tokens_to_ids(
        fmt.output_close
    )
    inner = ids[1:-1]
    assert not (marked - {tok.unk_token_id}) & set(inner)  # <unk>: the characters it has no token for
    ascii_only = observation_ids(tok, tags_tools, ToolResult(HOSTILE_TEXT))
    assert not marked & set(ascii_only[1:-1])
    assert not any(m in tok.decode(inner) for m in markers - {"<unk>"})
    fenced = ToolUse(FORMATS["fenced"], max_turns=2, output_chars=10_000, slots=1)
    try:
        assert not marked & set(observation_ids(tok, fenced, ToolResult(HOSTILE_TEXT)))
    finally:
        fenced.close()


def test_a_call_runs_no_more_than_its_processes(tool) -> None:
    """The process cap is what bounds a call's memory as a whole (PROCESSES x 512 MB): children past
    it fail to start, and the next call starts its own again."""
    code = (
        "import os, time\nn = 0\n"
        "try:\n"
        "    for _ in range(64):\n"
        "        if os.fork() == 0:\n            time.sleep(2)\n            os._exit(0)\n"
        "        n += 1\n"
        "except OSError:\n    pass\n"
        "print(n)"
    )
    first, second = _run(tool, [code, code])
    for result in (first, second):
        assert result.error == "" and 1 <= int(result.output) <= PROCESSES - 1, result


# --- every call starts from nothing: its own namespaces and tmpfs instances (pool_worker.py) -----


def test_counters_carry_no_value_between_calls() -> None:
    """The last pid and the next tmpfs inode number a call sees are those of a brand-new slot,
    whatever the calls before it chose to leave there."""
    values = [secrets.randbelow(1024) for _ in range(4)]
    writer = (
        "import os\nV, W = {}, {}\n"
        "while True:\n"
        "    pid = os.fork()\n"
        "    if pid == 0: os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    if (pid + 1) % 1024 == V: break\n"
        "i = 0\n"
        "while True:\n"
        "    open('/tmp/f%d' % i, 'w').close(); i += 1\n"
        "    if (os.stat('/tmp/f%d' % (i - 1)).st_ino + 1) % 1024 == W: break\n"
    )
    reader = "import os\nopen('/tmp/r', 'w').close()\nprint(os.getpid(), os.stat('/tmp/r').st_ino)"
    tool = PythonTool(tool_limits(3.0, 4096), slots=1)
    try:
        fresh = _run(tool, [reader])[0].output  # the first call of a brand-new slot
        calls = [writer.format(*values[:2]), reader, writer.format(*values[2:]), reader]
        results = _run(tool, calls)
    finally:
        tool.close()
    assert results[0].error == "" and results[2].error == "", results  # the writers ran to their end
    assert [results[1].output, results[3].output] == [fresh, fresh], (values, fresh, results)


def test_cleaning_up_after_a_call_costs_no_more_than_its_budget() -> None:
    wall = 0.5
    nest = (
        "import os, time\nend = time.time() + 0.45\nn = 0\nos.chdir('/tmp')\n"
        "while time.time() < end:\n    os.mkdir('d'); os.chdir('d'); n += 1\nprint(n)"
    )
    tool = PythonTool(tool_limits(wall, 4096), slots=1)
    try:
        _run(tool, ["pass"])
        started = time.monotonic()
        results = _run(tool, [nest, "print(42)"])
        elapsed = time.monotonic() - started
    finally:
        tool.close()
    assert results[1].output == "42\n"
    assert elapsed < wall + 1.0, (elapsed, results[0].output)


# --- weaknesses that need changes outside the tool -------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="VULNERABILITY (bwrap.py / pool.py): memory_mb is RLIMIT_AS per process; a call's processes "
    "together hold up to processes x memory_mb (8 x 512 MB for a tool call) with no cgroup to bound "
    "them, which is host memory: a batch of such calls can exhaust the machine",
)
def test_a_call_holds_no_more_than_its_memory_limit() -> None:
    code = (
        "import os, time\nr, w = os.pipe()\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        try:\n"
        "            block = bytearray(400 << 20)\n"
        "            block[::4096] = b'\\1' * len(range(0, len(block), 4096))\n"
        "            os.write(w, b'+')\n"
        "            time.sleep(3)\n"
        "        except MemoryError:\n            os.write(w, b'-')\n"
        "        os._exit(0)\n"
        "os.close(w)\nheld = b''\n"
        "while len(held) < 3 and (chunk := os.read(r, 3)):\n    held += chunk\n"
        "print(held.decode())\n"
    )
    tool = PythonTool(tool_limits(4.0, 4096), slots=1)
    try:
        result = _run(tool, [code])[0]
    finally:
        tool.close()
    assert result.error == ""
    assert result.output != "+++\n", "three processes held 1200 MB at once under a 512 MB memory limit"
