"""`rlvr train --supervise` (engine/supervisor.py): a training process killed with -9 mid-run is
restarted from its checkpoint, and the run finishes with the numbers of an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlvr import rundir
from rlvr.config import load_config
from rlvr.diagnostics.determinism import differences
from rlvr.engine.loop import train

SETS = ["train.steps=24", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=8", "train.eval_every=8",
        "train.threads=1"]  # fmt: skip


def _log(out: Path) -> list[dict]:
    path = out / "supervisor.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _supervise_and_kill(out: Path, *extra: str) -> subprocess.CompletedProcess:
    """Start `rlvr train --supervise`, kill its first training process with -9 after step 5."""
    sets = [f"--set={s}" for s in [*SETS, *extra]]
    command = [sys.executable, "-m", "rlvr.cli", "train", "--supervise", "--quiet", "--out", str(out), *sets]
    supervisor = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        steps = [row["step"] for row in rundir.read_metrics(out) if "reward" in row] if out.is_dir() else []
        if steps and steps[-1] >= 5:
            os.kill(_log(out)[0]["pid"], signal.SIGKILL)
            break
        time.sleep(0.05)
    else:
        supervisor.kill()
        pytest.fail("the supervised run did not reach step 5 in 120 s")
    stdout, stderr = supervisor.communicate(timeout=300)
    return subprocess.CompletedProcess(command, supervisor.returncode, stdout, stderr)


@pytest.mark.slow
def test_a_training_process_killed_mid_run_is_restarted_and_the_run_equals_an_uninterrupted_one(tmp_path):
    train(load_config(None, SETS), tmp_path / "straight", progress=False)
    done = _supervise_and_kill(tmp_path / "supervised")
    assert done.returncode == 0, done.stderr
    assert "restart 1 of 3 from its last checkpoint" in done.stderr
    log = _log(tmp_path / "supervised")
    assert [(e["event"], e.get("resume"), e.get("exit_code")) for e in log] == [
        ("start", False, None), ("exit", None, -signal.SIGKILL), ("start", True, None), ("exit", None, 0)
    ]  # fmt: skip
    summary = rundir.read_summary(tmp_path / "supervised")
    assert len(summary["segments"]) == 2  # it really resumed
    assert differences(tmp_path / "straight", tmp_path / "supervised") == []


@pytest.mark.slow
def test_without_restarts_left_the_supervisor_stops_and_says_so(tmp_path):
    done = _supervise_and_kill(tmp_path / "run", "train.max_restarts=0")
    assert done.returncode == 1 and "after 0 restart(s), train.max_restarts=0" in done.stderr
    assert [e["event"] for e in _log(tmp_path / "run")] == ["start", "exit"]


def test_an_alarm_that_stopped_the_run_is_not_restarted(tmp_path, cli):
    sets = ["task.name=funcsynth", "task.num_train=64", "rollout.max_new_tokens=16", "train.on_alarm=stop",
            "health.no_signal_steps=2", "train.steps=5", "train.batch_queries=4", "task.num_eval=4"]  # fmt: skip
    done = cli("train", "--supervise", "--quiet", "--out", str(tmp_path), *(f"--set={s}" for s in sets))
    assert done.returncode == 3, done.stderr
    assert [e["event"] for e in _log(tmp_path)] == ["start", "exit"] and "restart" not in done.stderr
