"""Metric sinks: JSONL always (one object per step; rlvr/rundir.py reads it back); TensorBoard and
W&B when asked (train.trackers)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rlvr.integrations.trackers import Tracker, build_trackers
from rlvr.rundir import metrics_path


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; absent-by-definition values are null
    return value


class MetricsLog:
    def __init__(
        self,
        out_dir: Path,
        *,
        tensorboard: bool = False,
        keep_until_step: int | None = None,
        trackers: list[str] = (),
        run_config: dict[str, Any] | None = None,
    ):
        """``trackers`` as in train.trackers; ``tensorboard=True`` adds TensorBoard (train.tensorboard)."""
        self.path = metrics_path(out_dir)
        if keep_until_step is not None and self.path.exists():
            self._truncate(keep_until_step)
        self._file = open(self.path, "a")
        names = [*trackers, *(["tensorboard"] if tensorboard else [])]
        self._trackers: list[Tracker] = build_trackers(names, out_dir, run_config or {})

    def _truncate(self, step: int) -> None:
        """On resume, drop lines of steps after the checkpoint: they will be logged again."""
        kept = [
            line
            for line in self.path.read_text().splitlines()
            if line.strip() and json.loads(line).get("step", 0) <= step
        ]
        self.path.write_text("".join(line + "\n" for line in kept))

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        record = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        for tracker in self._trackers:
            tracker.log(step, metrics)

    def close(self) -> None:
        self._file.close()
        for tracker in self._trackers:
            tracker.close()
