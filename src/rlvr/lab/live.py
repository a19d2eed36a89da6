"""Runs started from the lab page: real training processes, each in its own run directory.

Each click starts a run of the preset with the chosen knobs (`--set KEY=VALUE` as `rlvr train` takes
them) in a child of the runner (studies/runner.py `start`), in a new session (its own process
group), so stopping a run also stops anything it spawned (verifier sandboxes). Directory names
carry the time, the seed and a random suffix, so two clicks in the same second never share a
directory. Every child is killed when the lab exits (atexit), so no
training process outlives the page that started it.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from rlvr.errors import UserError
from rlvr.lab.runs import KNOBS
from rlvr.studies.runner import RunSpec, start

LIVE_PRESET = "configs/smoke.yaml"
"""The short preset a live run starts from (seconds on a CPU)."""


@dataclass
class LiveRun:
    path: Path
    process: subprocess.Popen
    log: Path

    @property
    def running(self) -> bool:
        return self.process.poll() is None


class LiveRuns:
    """Starts, tracks and stops the lab's training processes."""

    def __init__(self, root: str | Path, preset: str | Path = LIVE_PRESET) -> None:
        self.root, self.preset = Path(root), Path(preset)
        self._runs: dict[str, LiveRun] = {}
        self._lock = threading.Lock()
        atexit.register(self.stop_all)

    def start(self, knobs: dict[str, str]) -> LiveRun:
        """Start training the preset with the chosen knob values; returns at once."""
        if not self.preset.is_file():
            raise UserError(f"live-run preset {self.preset} not found; run `rlvr lab` from the repository root")
        unknown = sorted(set(knobs) - set(KNOBS))
        if unknown:
            raise UserError(f"unknown knob(s) {', '.join(unknown)}; known: {', '.join(KNOBS)}")
        seed = knobs.get("seed") or "0"
        path = self.root / f"lab-{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}-{uuid.uuid4().hex[:6]}"
        path.mkdir(parents=True)  # fails if it exists: no two clicks share a directory
        sets = tuple(f"{KNOBS[k]}={v}" for k, v in knobs.items() if v != "")
        log = path / "lab.log"
        process = start(RunSpec(out=str(path), config=str(self.preset), overrides=sets, resume=False), log)
        run = LiveRun(path, process, log)
        with self._lock:
            self._runs[str(path)] = run
        return run

    def get(self, path: str | Path) -> LiveRun | None:
        with self._lock:
            return self._runs.get(str(path))

    def stop(self, path: str | Path, grace_s: float = 5.0) -> bool:
        """SIGTERM the run's process group, SIGKILL it after grace_s; False if it had already ended."""
        run = self.get(path)
        if run is None or not run.running:
            return False
        _kill_group(run.process, grace_s)
        return True

    def stop_all(self) -> None:
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            if run.running:
                _kill_group(run.process, grace_s=2.0)


def _kill_group(process: subprocess.Popen, grace_s: float) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)  # pgid == pid: start_new_session made it a leader
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
