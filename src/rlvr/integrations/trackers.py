"""Experiment trackers next to the always-on JSONL log: TensorBoard and Weights & Biases.

``train.trackers`` names them; each tracker receives the same per-step metrics dict that goes to
``metrics.jsonl`` (only finite numbers: trackers have no null). A tracker whose package is missing
is a config error, raised by ``RunConfig.validate`` before any model loads, with the install command.

W&B runs offline by default (``train.wandb_mode``): the run is written under ``<out>/wandb/`` and
nothing touches the network; ``wandb sync <out>/wandb/offline-run-*`` uploads it later.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from rlvr.config import tracker_problem
from rlvr.errors import UserError


class Tracker(Protocol):
    def log(self, step: int, metrics: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of a metrics dict (null/NaN means 'undefined this step': not plotted)."""
    return {
        key: float(value)
        for key, value in metrics.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


class TensorBoardTracker:
    """Scalars under ``<out>/tensorboard`` (``tensorboard --logdir <out>``)."""

    def __init__(self, out_dir: Path, run_config: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(out_dir / "tensorboard"))

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        for key, value in scalars(metrics).items():
            self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    """A W&B run under ``<out>/wandb``; the resolved config is the run's config."""

    def __init__(self, out_dir: Path, run_config: dict[str, Any]) -> None:
        import wandb

        train = run_config.get("train", {})
        settings = wandb.Settings(silent=True, console="off", x_disable_stats=True, save_code=False)
        self.run = wandb.init(
            project=train.get("wandb_project") or "rlvr",
            dir=str(out_dir),
            mode=train.get("wandb_mode", "offline"),
            name=out_dir.name,
            config=run_config,
            settings=settings,
            reinit="create_new",
        )

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        self.run.log(scalars(metrics), step=step)

    def close(self) -> None:
        self.run.finish()


TRACKERS: dict[str, Callable[[Path, dict[str, Any]], Tracker] | None] = {
    "jsonl": None,  # MetricsLog always writes metrics.jsonl itself
    "tensorboard": TensorBoardTracker,
    "wandb": WandbTracker,
}
"""How each name of train.trackers is built; config.TRACKER_PACKAGES says what each needs."""


def build_trackers(names: Iterable[str], out_dir: Path, run_config: dict[str, Any]) -> list[Tracker]:
    """One tracker per name (duplicates and 'jsonl' add nothing), in order."""
    names = list(dict.fromkeys(names))
    problem = tracker_problem(names)
    if problem:
        raise UserError(problem)
    return [TRACKERS[name](out_dir, run_config) for name in names if TRACKERS[name] is not None]
