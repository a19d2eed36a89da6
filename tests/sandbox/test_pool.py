"""The pre-forked sandbox pool, run for real: each job fenced like a fresh sandbox, nothing of one
job visible to the next, broken slots replaced, failures reported as infrastructure, never verdicts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import textwrap
from importlib import resources

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.sandbox.pool import PoolJob, SandboxPool
from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.python import PythonVerifier

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

DRIVER = resources.files("rlvr.sandbox").joinpath("python_driver.py").read_bytes()
LIMITS = SandboxLimits(wall_s=3.0, cpu_s=2, memory_mb=256, processes=16, output_bytes=64 * 1024)


def job(code: str, driver: str = "python") -> PoolJob:
    spec = {"nonce": "n", "entry_point": "f", "args": ["[]"]}
    return PoolJob(driver, {"solution.py": textwrap.dedent(code), "job.json": json.dumps(spec)}, LIMITS)


def _uid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            return int(next(line for line in status if line.startswith("Uid:")).split()[1])
    except (OSError, StopIteration):
        return None


def value(run) -> object:
    frame = json.loads(run.channel)
    assert frame["status"] == "ok", frame
    return frame["results"][0]["value"]


@pytest.fixture
def pool():
    pool = SandboxPool({"python": DRIVER}, slots=2)
    yield pool
    pool.close()


def test_results_in_job_order_each_job_its_own_uid(pool: SandboxPool) -> None:
    runs = pool.run_batch([job(f"import os\ndef f():\n    return [{i}, os.getuid()]") for i in range(12)])
    assert [value(run)[0] for run in runs] == list(range(12))
    uids = [value(run)[1] for run in runs]
    assert len(set(uids)) == 12 and all(uid in bwrap.SANDBOX_UIDS for uid in uids)
    assert {run.info["slot"] for run in runs} == {0, 1}  # both slots worked


def test_job_has_no_capabilities_and_no_new_privs(pool: SandboxPool) -> None:
    run = pool.run_batch(
        [
            job("""
        import os
        def f():
            status = open('/proc/self/status').read()
            fields = ('CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'CapInh', 'NoNewPrivs')
            return [os.getgroups(), [l.split()[1] for l in status.splitlines() if l.startswith(fields)]]
    """)
        ]
    )[0]
    zero = "0000000000000000"
    assert value(run) == [[], [zero] * 5 + ["1"]]


def test_nothing_of_one_job_reaches_the_next() -> None:
    pool = SandboxPool({"python": DRIVER}, slots=1)  # one slot: the second job runs where the first did
    try:
        leave = pool.run_batch(
            [
                job("""
            import os, time
            def f():
                open('mine', 'w').write('x')
                open('/tmp/left', 'w').write('x')
                open('/dev/shm/left', 'w').write('x')
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        time.sleep(60)
                    os._exit(0)
                return os.getuid()
        """)
            ]
        )[0]
        first_uid = value(leave)
        look = pool.run_batch(
            [
                job("""
            import os
            def f():
                pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
                shm = os.listdir('/dev/shm') if os.path.isdir('/dev/shm') else []
                return [os.listdir('.'), os.listdir('/tmp'), shm, pids]
        """)
            ]
        )[0]
        cwd, tmp, shm, pids = value(look)
        assert cwd == ["solution.py"] and tmp == [] and shm == []  # its own file only (the driver deleted job.json)
        assert pids == [1]  # the init of a pid namespace of its own: nothing of the slot's or the first job's
        daemons = [pid for pid in os.listdir("/proc") if pid.isdigit() and _uid(pid) == first_uid]
        assert daemons == []  # the first job's setsid daemon died with its namespace
    finally:
        pool.close()


def test_a_killed_supervisor_is_replaced_and_the_job_retried(pool: SandboxPool) -> None:
    pool.run_batch([job("def f():\n    return 1")])
    for slot in pool._slots:
        if slot is not None:
            os.killpg(slot.proc.pid, signal.SIGKILL)  # the slot's bwrap and everything in it
    runs = pool.run_batch([job("def f():\n    return 2"), job("def f():\n    return 3")])
    assert [value(run) for run in runs] == [2, 3]


def test_a_slot_that_fails_twice_is_an_infrastructure_error_not_a_verdict(pool: SandboxPool) -> None:
    runs = pool.run_batch([job("def f():\n    return 1", driver="no-such-driver"), job("def f():\n    return 5")])
    assert runs[0].infrastructure_error and runs[0].exit_code is None
    assert value(runs[1]) == 5


def test_verifier_maps_a_failed_sandbox_to_error_and_close_stops_every_slot() -> None:
    verifier = PythonVerifier(limits=LIMITS, slots=2)
    query = Query("q", "", {"type": "python", "entry_point": "f", "tests": [{"args": [], "expected": 1}]})
    assert verifier.verify(query, "def f():\n    return 1").verdict is Verdict.PASS
    procs = [slot.proc for slot in verifier._pool._slots if slot is not None]
    assert procs
    verifier._pool.close()
    verifier._pool.drivers = {}  # slots started from now on cannot run a python job: the supervisor fails
    result = verifier.verify(query, "def f():\n    return 1")
    assert result.verdict is Verdict.ERROR and result.error_class is ErrorClass.INFRASTRUCTURE, result
    assert not result.scorable  # kept out of rewards and baselines, never a silent 0
    verifier.close()
    assert all(proc.poll() is not None for proc in procs)


def test_a_job_at_its_cpu_limit_is_reported_as_such(pool: SandboxPool) -> None:
    """A job is its namespace's init, which the kernel shields from SIGXCPU: its soft and hard CPU
    limits are equal, the kernel ends it with SIGKILL there, and the run says SIGXCPU, as in a
    fresh sandbox (the verifiers read that as a timeout, not a crash)."""
    limits = SandboxLimits(wall_s=5.0, cpu_s=1, memory_mb=256, processes=16, output_bytes=64 * 1024)
    busy = PoolJob("python", {**job("def f():\n    while True: pass").files}, limits)
    run = pool.run_batch([busy])[0]
    assert run.signal == signal.SIGXCPU and not run.timed_out and run.elapsed_s < 3.0, run


def test_slots_killed_while_idle_cost_no_job_a_try(pool: SandboxPool) -> None:
    # every slot dies between two batches (a kill -9 from outside, the host's OOM killer): the next
    # batch gets fresh slots, and no job is reported as an infrastructure failure
    pool.run_batch([job("def f():\n    return 1") for _ in range(4)])
    for slot in pool._slots:
        if slot is not None:
            os.killpg(slot.proc.pid, signal.SIGKILL)
            slot.proc.wait()
    runs = pool.run_batch([job(f"def f():\n    return {k}") for k in range(6)])
    assert [value(run) for run in runs] == list(range(6))
    assert not any(run.infrastructure_error for run in runs)
