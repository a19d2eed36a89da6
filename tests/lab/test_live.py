"""Live runs: real `rlvr train` processes in their own directories, stoppable, never orphaned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rlvr.errors import UserError
from rlvr.lab.live import LiveRuns
from rlvr.lab.runs import read_run

from .conftest import REPO

pytestmark = pytest.mark.slow


def _wait(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return predicate()


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_live_runs_finish_in_separate_directories_and_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    live = LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml")
    short = live.start({"steps": "2", "beta": "0.0"})
    long = live.start({"steps": "500"})
    assert short.path != long.path and short.path.parent == long.path.parent == tmp_path
    assert _wait(lambda: not short.running, 180), "a 2-step smoke run should finish within 3 minutes"
    assert short.process.returncode == 0, short.log.read_text()[-2000:]
    run = read_run(short.path)
    assert run.finished and run.knobs["steps"] == "2" and run.knobs["beta"] == "0.0"
    assert live.stop(long.path) is True
    assert long.process.returncode is not None and not _group_alive(long.process.pid)
    assert live.stop(long.path) is False  # already ended


def test_stop_all_kills_every_child(tmp_path: Path) -> None:
    live = LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml")
    runs = [live.start({"steps": "500"}) for _ in range(2)]
    live.stop_all()
    assert all(not r.running and not _group_alive(r.process.pid) for r in runs)


def test_unknown_knob_and_missing_preset(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown knob"):
        LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml").start({"temperature": "2"})
    with pytest.raises(UserError, match="preset"):
        LiveRuns(tmp_path, tmp_path / "absent.yaml").start({})
