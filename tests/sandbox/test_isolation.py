"""Nothing of one check reaches another: reader/writer pairs through every channel an attacker
tried (tests/sandbox/leaks.py), in both sandbox modes, and nothing a job made outlives it.

Each writer is a correct answer and must pass (the pair is a real attack); the reader that runs
right after it in the same slot must fail. Afterwards no SysV object, kernel key or process of a
sandbox uid is left on the host.
"""

from __future__ import annotations

import shutil

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.types import Query
from rlvr.verifiers.python import PythonVerifier
from rlvr.verifiers.stdio import StdioVerifier

from . import leaks

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

LIMITS = SandboxLimits(
    wall_s=5.0, cpu_s=3, memory_mb=512, processes=16, file_size_mb=4, open_files=64, tmpfs_mb=16, output_bytes=64 * 1024
)


def _verdicts(results, names):
    return {name: (r.verdict.value, r.error_class.value, r.detail[:80]) for name, r in zip(names, results)}


@pytest.mark.parametrize("isolation", ["pool", "fresh"])
def test_a_reader_after_a_writer_finds_nothing(isolation: str) -> None:
    # One slot, so that each reader runs in the slot its writer just used.
    verifier = PythonVerifier(limits=LIMITS, isolation=isolation, slots=1)
    try:
        items, names = [], []
        for channel in leaks.CHANNELS:
            items += [
                (leaks.python_query(channel), leaks.python_writer(channel)),
                (leaks.python_query(channel), leaks.python_reader(channel)),
            ]
            names += [f"{channel} writer", f"{channel} reader"]
        got = _verdicts(verifier.verify_batch(items), names)
    finally:
        verifier.close()
    writers = {name: v for name, v in got.items() if name.endswith("writer") and v[0] != "pass"}
    assert not writers, writers  # each writer is a correct answer: the pairs are real attacks
    readers = {name: v for name, v in got.items() if name.endswith("reader") and v[0] != "fail"}
    assert not readers, readers
    assert leaks.sandbox_kernel_objects() == []
    assert leaks.sandbox_uid_processes() == []


@pytest.mark.parametrize("isolation", ["pool", "fresh"])
def test_a_copier_after_a_publisher_reads_no_counter(isolation: str) -> None:
    """Kernel state that outlives a job though nothing it made does (leaks.COUNTERS): the last pid,
    each tmpfs's next inode number, TCP TIME_WAIT entries, UDP and loopback counters. Each
    publisher is a correct answer; the copier right after it in the same slot must fail."""
    verifier = PythonVerifier(limits=LIMITS, isolation=isolation, slots=1)
    try:
        items, names = [], []
        for channel in leaks.COUNTERS:
            query = leaks.counter_query(channel)
            items += [(query, leaks.counter_writer(channel)), (query, leaks.counter_reader(channel))]
            names += [f"{channel} writer", f"{channel} reader"]
        got = _verdicts(verifier.verify_batch(items), names)
    finally:
        verifier.close()
    writers = {name: v for name, v in got.items() if name.endswith("writer") and v[0] != "pass"}
    assert not writers, writers
    readers = {name: v for name, v in got.items() if name.endswith("reader") and v[0] != "fail"}
    assert not readers, readers


def test_a_stdio_reader_after_a_writer_finds_nothing() -> None:
    verifier = StdioVerifier(limits=LIMITS)
    channels = ["keyring", "sysv_shm", "posix_mq", "dev_shm", "tmp"]
    items, names = [], []
    for channel in channels:
        items += [
            (leaks.stdio_query(channel), leaks.stdio_writer(channel)),
            (leaks.stdio_query(channel), leaks.stdio_reader(channel)),
        ]
        names += [f"{channel} writer", f"{channel} reader"]
    got = _verdicts(verifier.verify_batch(items), names)
    writers = {name: v for name, v in got.items() if name.endswith("writer") and v[0] != "pass"}
    assert not writers, writers
    readers = {name: v for name, v in got.items() if name.endswith("reader") and v[0] != "fail"}
    assert not readers, readers
    assert leaks.sandbox_kernel_objects() == []


REFUSED_PROBES = """
import ctypes, errno, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def probe(action):
    try:
        action()
        return 'ok'
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
def cachestat():
    fd = os.open('/usr/bin/env', os.O_RDONLY)
    if libc.syscall(451, fd, ctypes.create_string_buffer(16), ctypes.create_string_buffer(64), 0) < 0:
        raise OSError(ctypes.get_errno(), 'cachestat')
def nowait():
    fd = os.open('/usr/bin/env', os.O_RDONLY)
    os.preadv(fd, [bytearray(64)], 0, os.RWF_NOWAIT)
OUT = {
    'cookie': probe(lambda: socket.socket(socket.AF_UNIX).getsockopt(socket.SOL_SOCKET, 57, 8)),
    'socket type': probe(lambda: socket.socket(socket.AF_UNIX).getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)),
    'cachestat': probe(cachestat),
    'preadv2 nowait': probe(nowait),
    'preadv': probe(lambda: os.preadv(os.open('/usr/bin/env', os.O_RDONLY), [bytearray(64)], 0)),
    'thread': probe(lambda: __import__('threading').Thread(target=int).start()),
}
"""


@pytest.mark.parametrize("isolation", ["pool", "fresh"])
def test_machine_wide_counters_are_refused_and_their_plain_forms_work(isolation: str) -> None:
    """Socket cookies and page-cache probes read state every process on the machine shares
    (seccomp.py); the calls around them still work: other socket options, plain preadv, threads
    (clone3 refused, libc falls back to clone)."""
    verifier = PythonVerifier(limits=LIMITS, isolation=isolation, slots=1)
    want = {"cookie": "EPERM", "socket type": "ok", "cachestat": "EPERM", "preadv": "ok", "thread": "ok"}
    query = Query("q", "", {"type": "python", "entry_point": "f", "tests": [{"args": [], "expected": want}]})
    code = REFUSED_PROBES + "def f():\n    return {k: v for k, v in OUT.items() if k != 'preadv2 nowait'}\n"
    # preadv2 is refused with ENOSYS; with flags libc cannot fall back, and says ENOTSUP
    nowait = REFUSED_PROBES + "def f():\n    return OUT['preadv2 nowait'] in ('ENOSYS', 'ENOTSUP', 'EOPNOTSUPP')\n"
    nowait_query = Query("n", "", {"type": "python", "entry_point": "f", "tests": [{"args": [], "expected": True}]})
    try:
        results = verifier.verify_batch([(query, code), (nowait_query, nowait)])
    finally:
        verifier.close()
    assert [r.verdict.value for r in results] == ["pass", "pass"], results
