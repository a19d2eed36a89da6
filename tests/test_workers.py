"""WorkerPool: real worker processes that time out, crash and raise, and a pool that survives them.

Jobs are standard-library functions (picklable by name), so every outcome here really happens in a
worker: ``time.sleep(30)`` overruns, ``os._exit(3)`` kills the worker, ``math.sqrt(-1)`` raises.
"""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from rlvr.workers import WorkerPool


def test_pool_starts_lazily_and_runs_jobs() -> None:
    with WorkerPool("math:sqrt", size=2, timeout_s=5) as pool:
        assert not pool.started and pool.pids() == []
        outcomes = pool.run_batch([(4,), (9,), (-1,)])
        assert len(pool.pids()) == 2
    assert [o.status for o in outcomes] == ["ok", "ok", "raised"]
    assert [o.value for o in outcomes[:2]] == [2.0, 3.0]
    assert outcomes[2].exception == "ValueError"  # sqrt(-1): math domain error
    assert "ValueError" in outcomes[2].detail
    assert pool.pids() == []  # closed


def test_timeout_kills_only_the_stuck_worker_and_others_keep_going() -> None:
    with WorkerPool(time.sleep, size=2, timeout_s=0.5) as pool:
        pool.start()
        pids_before = set(pool.pids())
        # One job sleeps 30 s, past the 0.5 s limit; the other worker serves the three 0 s jobs.
        outcomes = pool.run_batch([(30,), (0,), (0,), (0,)])
        assert [o.status for o in outcomes] == ["timeout", "ok", "ok", "ok"]
        assert "0.5 s" in outcomes[0].detail
        assert len(pids_before & set(pool.pids())) == 1  # exactly one worker was replaced
        assert pool.run(0).status == "ok"  # the pool is still usable


def test_worker_that_dies_mid_job_is_reported_as_died_and_replaced() -> None:
    with WorkerPool(os._exit, size=1, timeout_s=5, memory_limit_mb=None) as pool:
        outcome = pool.run(3)  # os._exit(3): the worker process ends without answering
        assert (outcome.status, outcome.exitcode) == ("died", 3)
        assert "exit code 3" in outcome.detail
        assert pool.run(3).status == "died"  # a fresh worker took its place and died again


def test_worker_whose_job_raised_is_replaced_before_the_next_job() -> None:
    with WorkerPool("math:sqrt", size=1, timeout_s=5) as pool:
        pool.start()
        (first,) = pool.pids()
        assert pool.run(-1).status == "raised"
        (second,) = pool.pids()
        assert second != first  # retired: whatever the job left half-done died with it
        assert pool.run(4).value == 2.0


def test_state_left_by_a_raising_job_does_not_reach_the_next_job() -> None:
    # eval of fixed test strings, in a worker: the first sets a process-global marker, then raises.
    poison = "setattr(__import__('sys'), 'poisoned_by_last_job', True) or 1 / 0"
    probe = "hasattr(__import__('sys'), 'poisoned_by_last_job')"
    with WorkerPool("builtins:eval", size=1, timeout_s=5) as pool:
        raised, after = pool.run_batch([(poison,), (probe,)])
    assert (raised.status, raised.exception) == ("raised", "ZeroDivisionError")
    assert (after.status, after.value) == ("ok", False)


def test_externally_killed_idle_worker_is_reported_as_crashed() -> None:
    with WorkerPool("math:sqrt", size=1, timeout_s=5) as pool:
        pool.start()
        (pid,) = pool.pids()
        os.kill(pid, 9)  # e.g. the OOM killer
        time.sleep(0.2)
        crashed = pool.run(4)
        assert crashed.status == "crashed" and "SIGKILL" in crashed.detail
        assert pool.run(4).value == 2.0


def test_worker_that_cannot_start_fails_jobs_instead_of_hanging() -> None:
    with WorkerPool("no_such_module_xyz:job", size=1, timeout_s=1) as pool:
        outcome = pool.run(1)
        assert outcome.status == "crashed"
        assert "fail to start" in outcome.detail and "no_such_module_xyz" in outcome.detail
        with pytest.raises(RuntimeError, match="no_such_module_xyz"):
            pool.start()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


def test_workers_do_not_outlive_the_interpreter() -> None:
    script = textwrap.dedent(
        """
        from rlvr.workers import WorkerPool
        pool = WorkerPool("math:sqrt", size=2)
        pool.start()
        print(*pool.pids())
        """
    )  # no close(): the atexit hook must do it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def test_worker_modules_do_not_import_torch() -> None:
    """Every worker imports these; torch would add seconds and hundreds of MB to each."""
    script = (
        "import sys, rlvr.workers, rlvr.verifiers._math_worker;"
        "print([m for m in ('torch', 'rlvr.types') if m in sys.modules])"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
