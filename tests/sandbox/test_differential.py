"""Every job starts from nothing: what a job can read about its world (observe.py ``OBSERVER``) is
the same, byte for byte, in a brand-new sandbox, right after noisy jobs that moved every value they
could (``PUBLISHER``), and while such jobs run at the same time in another slot. In both sandbox
modes and in the tool pool.

A difference means some kernel state survived one job into the next: a way for a correct answer
to hand its results to a later wrong one (docs/verifiers.md, "Threat model"). Values that every
process on the machine moves are left out of the observation and listed in the docs.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import threading
from importlib import resources

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.sandbox.bwrap import run_untrusted, sandbox_python
from rlvr.sandbox.pool import PoolJob, SandboxPool
from rlvr.sandbox.tool import PythonTool, tool_limits

from . import leaks
from .observe import OBSERVER, PUBLISHER

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

LIMITS = SandboxLimits(wall_s=10.0, cpu_s=5, memory_mb=512, processes=32, output_bytes=1 << 20)
DRIVER = resources.files("rlvr.sandbox").joinpath("python_driver.py").read_bytes()
PUBLISHERS = 3


def _differences(reference: dict, other: dict, prefix: str = "") -> dict:
    """The observed values that differ, by key path ("net/snmp"), for a readable assertion message."""
    found = {}
    for key in sorted(set(reference) | set(other)):
        mine, theirs = reference.get(key), other.get(key)
        if isinstance(mine, dict) and isinstance(theirs, dict):
            found.update(_differences(mine, theirs, f"{prefix}{key}/"))
        elif mine != theirs:
            found[prefix + key] = (mine, theirs)
    return found


def _assert_same(reference: dict, others: list[dict]) -> None:
    for other in others:
        assert _differences(reference, other) == {}


def _assert_published(moved: list[dict]) -> None:
    """The publishers ran and moved what they could: files, processes, sockets, ptys."""
    assert len(moved) == PUBLISHERS
    for record in moved:
        assert record["files"] >= 600 and record["forks"] >= 10 and record["held"] >= 5, record
        assert record["sockets"][str(1)] == "made", record  # AF_UNIX


# --- the pool, with the python driver (the python verifier's path) --------------------------------


def _pool_job(source: str, function: str) -> PoolJob:
    solution = f"{source}\ndef f():\n    return {function}()\n"
    spec = {"nonce": "n", "entry_point": "f", "args": ["[]"]}
    return PoolJob("python", {"solution.py": solution, "job.json": json.dumps(spec)}, LIMITS)


def _pool_value(run) -> dict:
    frame = json.loads(run.channel)
    assert frame["status"] == "ok", (frame, run.stderr[-2000:])
    return frame["results"][0]["value"]


def test_a_pool_job_sees_the_same_world_after_and_beside_noisy_jobs() -> None:
    observer, publisher = _pool_job(OBSERVER, "observe"), _pool_job(PUBLISHER, "publish")
    first = SandboxPool({"python": DRIVER}, slots=1)
    try:
        brand_new = _pool_value(first.run_batch([observer])[0])
        runs = first.run_batch([publisher] * PUBLISHERS + [observer])
        _assert_published([_pool_value(run) for run in runs[:PUBLISHERS]])
        after = _pool_value(runs[-1])
    finally:
        first.close()
    two = SandboxPool({"python": DRIVER}, slots=2)
    try:
        another_new = _pool_value(two.run_batch([observer])[0])
        # Job i goes to slot i: the observers run in slot 1 while publishers run in slot 0.
        beside = two.run_batch([publisher, observer, publisher, observer])
        assert beside[0].info["slot"] != beside[1].info["slot"]
        during = [_pool_value(beside[1]), _pool_value(beside[3])]
    finally:
        two.close()
    _assert_same(brand_new, [after, another_new, *during])
    assert leaks.sandbox_kernel_objects() == []


# --- the tool pool ---------------------------------------------------------------------------------


def _tool_value(result) -> dict:
    assert result.error == "", result
    return json.loads(result.output)


def test_a_tool_call_sees_the_same_world_after_and_beside_noisy_calls() -> None:
    observe = OBSERVER + "\nprint(json.dumps(observe()))\n"
    publish = PUBLISHER + "\nimport json\nprint(json.dumps(publish()))\n"
    tool = PythonTool(tool_limits(10.0, 1 << 20), slots=1)
    try:
        brand_new = _tool_value(tool.run([observe])[0])
        results = tool.run([publish] * PUBLISHERS + [observe])
        _assert_published([_tool_value(r) for r in results[:PUBLISHERS]])
        after = _tool_value(results[-1])
    finally:
        tool.close()
    two = PythonTool(tool_limits(10.0, 1 << 20), slots=2)
    try:
        beside = two.run([publish, observe, publish, observe])
        during = [_tool_value(beside[1]), _tool_value(beside[3])]
    finally:
        two.close()
    _assert_same(brand_new, [after, *during])


# --- a fresh sandbox per run -----------------------------------------------------------------------


def _fresh(source: str) -> dict:
    run = run_untrusted([sandbox_python(), "-c", source], limits=LIMITS)
    assert run.exit_code == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_a_fresh_sandbox_sees_the_same_world_after_and_beside_noisy_runs() -> None:
    observe = OBSERVER + "\nprint(json.dumps(observe()))\n"
    publish = PUBLISHER + "\nimport json\nprint(json.dumps(publish()))\n"
    brand_new = _fresh(observe)
    _assert_published([_fresh(publish) for _ in range(PUBLISHERS)])
    after = _fresh(observe)
    moved: list[dict] = []
    beside = threading.Thread(target=lambda: moved.extend(_fresh(publish) for _ in range(PUBLISHERS)))
    beside.start()
    try:
        during = [_fresh(observe) for _ in range(2)]
    finally:
        beside.join()
    _assert_published(moved)
    _assert_same(brand_new, [after, *during])


def test_the_observer_sees_what_it_claims_to() -> None:
    """The observation is not empty or constant: it holds the job's pids, its /proc/net files, its
    tmpfs inode numbers, and it changes when the world does (a file left in the working directory)."""
    observe = OBSERVER + "\nprint(json.dumps(observe()))\n"
    world = _fresh(observe)
    assert world["pid"][0] > 1 and world["next_pid"] > world["pid"][0]
    assert {"tcp", "unix", "dev", "snmp", "netstat"} <= set(world["net"])
    assert all(isinstance(inode, int) for inode in world["new_inode"].values()), world["new_inode"]
    changed = _fresh(
        textwrap.dedent("""
        open('left-behind', 'w').close()
    """)
        + observe
    )
    changed_keys = {key.split("/")[0] for key in _differences(world, changed)}
    assert {"listings", "new_inode"} <= changed_keys <= {"listings", "new_inode", "statvfs"}
