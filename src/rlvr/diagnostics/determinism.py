"""The determinism gate: two synchronous runs of one config and seed log the same numbers.

``rlvr train --determinism`` trains the config twice, into ``<out>/a`` and ``<out>/b``, and compares
their metrics.jsonl, summary.json and health.jsonl, key by key and step by step, apart from what a
clock or the machine measures (``MEASURED``): times, throughput, memory and wall-clock fields. On the
CPU the synchronous loop is exactly reproducible (torch's CPU kernels with a fixed thread count,
seeded sampling: rollout/draws.py), so any other difference is a bug. Asynchronous rollouts
(rollout.max_staleness >= 1) are not bit-reproducible (docs/async.md) and are refused.
"""

from __future__ import annotations

import math
from pathlib import Path

from rlvr import rundir
from rlvr.config import RunConfig
from rlvr.errors import UserError

MEASURED_CHECKS = ("verifier_latency",)
"""Health checks whose value is a measured time: their health.jsonl lines are left out too."""
MEASURED = ("time/", "perf/", "memory/", "rollout/samples_per_s", "wall_s", "segments",
            *(f"health/{check}" for check in MEASURED_CHECKS))  # fmt: skip
"""Keys (or prefixes) a clock or the machine measures: left out of the comparison."""


def _measured(key: str) -> bool:
    return any(key == m or key.startswith(m) for m in MEASURED)


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    if isinstance(x, dict) and isinstance(y, dict):
        keys = {k for k in x.keys() | y.keys() if not _measured(k)}
        return all(_same(x.get(k), y.get(k)) for k in keys)
    return x == y


def differences(a: str | Path, b: str | Path) -> list[str]:
    """Every difference between two run directories' logged numbers, measured ones aside."""
    out = []
    rows_a, rows_b = rundir.read_metrics(a), rundir.read_metrics(b)
    if len(rows_a) != len(rows_b):
        out.append(f"metrics.jsonl: {len(rows_a)} rows against {len(rows_b)}")
    for row_a, row_b in zip(rows_a, rows_b, strict=False):
        for key in sorted(row_a.keys() | row_b.keys()):
            if not _measured(key) and not _same(row_a.get(key), row_b.get(key)):
                out.append(f"step {row_a.get('step')}: {key} {row_a.get(key)!r} != {row_b.get(key)!r}")
    if not _same(rundir.read_summary(a), rundir.read_summary(b)):
        out.append("summary.json differs")
    health_a, health_b = ([h for h in rundir.read_health(d) if h.get("check") not in MEASURED_CHECKS] for d in (a, b))
    if health_a != health_b:
        out.append("health.jsonl differs")
    return out


def check_determinism(cfg: RunConfig, out: str | Path, *, progress: bool = False) -> list[str]:
    """Train `cfg` twice into <out>/a and <out>/b; the differences (empty: deterministic)."""
    from rlvr.engine.loop import train

    if cfg.rollout.max_staleness:
        raise UserError("--determinism: asynchronous rollouts (rollout.max_staleness >= 1) are not bit-reproducible")
    out = Path(out)
    for name in ("a", "b"):
        if rundir.is_run_dir(out / name):
            raise UserError(f"--determinism: {out / name} already holds a run; pick another --out")
    for name in ("a", "b"):
        train(cfg, out / name, progress=progress)
    return differences(out / "a", out / "b")
