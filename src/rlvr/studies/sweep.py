"""`rlvr sweep`: a grid of real training runs, one ordinary run directory per (grid point, seed).

    rlvr sweep --config configs/funcsynth-visible.yaml --grid reward.fidelity=gold,visible_only \
        --seeds 0 --out runs/sweep-fidelity

Each run is trained in this process by the runner (studies/runner.py) with the preset, the `--set`
overrides, the grid point and the seed, written to `<out>/<label>` where the label names the point
and the seed (`reward.fidelity=gold-seed0`). The sweep then collects every run's summary.json
into `<out>/sweep.json` and `<out>/sweep.png` and prints the table: gold pass@1 and
training-verifier pass@1 before and after, held-out hacking rate, wall time. A run that already
finished (summary.json present) is read, not run again, so an interrupted sweep continues where it
stopped.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import yaml

from rlvr.config import RunConfig, load_config, parse_override
from rlvr.errors import UserError
from rlvr.rundir import is_finished, is_run_dir, read_config, read_summary
from rlvr.studies.runner import RunSpec, run


class SweepError(UserError):
    """A malformed --grid or --seeds, or an output folder that holds an unfinished run."""


def parse_grid(specs: list[str]) -> list[tuple[str, list[str]]]:
    """["reward.fidelity=gold,visible_only"] -> [("reward.fidelity", ["gold", "visible_only"])]."""
    grid = []
    for spec in specs:
        if "=" not in spec:
            raise SweepError(f"--grid {spec!r}: expected section.key=v1,v2 (e.g. reward.fidelity=gold,visible_only)")
        key, raw = spec.split("=", 1)
        values = [part.strip() for part in raw.split(",") if part.strip()]
        if not values:
            raise SweepError(f"--grid {spec!r}: no values after '='; list them comma-separated")
        if key in (k for k, _ in grid):
            raise SweepError(f"--grid {key} is given twice; list all its values in one --grid")
        parse_override(f"{key}={values[0]}")  # the key must look like section.key
        grid.append((key, values))
    return grid


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(f"--seeds {text!r}: expected comma-separated integers, e.g. --seeds 0,1,2") from None
    if not seeds:
        raise SweepError("--seeds is empty; give at least one seed, e.g. --seeds 0")
    return seeds


def label(point: dict[str, Any], seed: int) -> str:
    return "-".join([*(f"{k}={v}" for k, v in point.items()), f"seed{seed}"])


def _sets(overrides: list[str], point: dict[str, Any], seed: int) -> list[str]:
    """A run's overrides: the sweep's, then the grid point's, then its seed."""
    return [*overrides, *(f"{k}={v}" for k, v in point.items()), f"train.seed={seed}"]


def plan(
    config: str | None, grid: list[tuple[str, list[str]]], seeds: list[int], overrides: list[str]
) -> list[tuple[str, dict[str, str], int, RunConfig]]:
    """Every (label, point, seed, config), validated before the first run starts."""
    runs = []
    for values in itertools.product(*(vals for _, vals in grid)):
        point = dict(zip((k for k, _ in grid), values, strict=True))
        for seed in seeds:
            runs.append((label(point, seed), point, seed, load_config(config, _sets(overrides, point, seed))))
    return runs


def run_sweep(
    config: str | None,
    grid: list[tuple[str, list[str]]],
    seeds: list[int],
    out: str | Path,
    *,
    overrides: list[str] = (),
    progress: bool = True,
) -> dict:
    """Run (or read back) every grid point and seed; write and return the sweep report."""
    out = Path(out)
    runs = plan(config, grid, seeds, list(overrides))
    rows = []
    for index, (name, point, seed, cfg) in enumerate(runs, start=1):
        run_dir = out / name
        if is_finished(run_dir):
            _check_same_config(run_dir, cfg)
            summary = read_summary(run_dir)
        elif is_run_dir(run_dir):
            raise SweepError(
                f"{run_dir} holds an unfinished run; finish it with rlvr train --resume {run_dir} "
                "or remove it, then run the sweep again"
            )
        else:
            if progress:
                print(f"sweep run {index}/{len(runs)}: {name}")
            sets = tuple(_sets(list(overrides), point, seed))
            summary = run(RunSpec(out=str(run_dir), config=config, overrides=sets, resume=False, progress=progress))
        rows.append(row_of(name, point, seed, run_dir, summary))
    report = {
        "config": config,
        "grid": {k: v for k, v in grid},
        "seeds": seeds,
        "overrides": list(overrides),
        "runs": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(report, indent=2) + "\n")
    plot_sweep(report, out / "sweep.png")
    return report


def _check_same_config(run_dir: Path, cfg: RunConfig) -> None:
    """A finished run is reused only if it was run with exactly the config this point asks for."""
    saved = read_config(run_dir)
    if saved != yaml.safe_load(yaml.safe_dump(cfg.to_dict(), sort_keys=False)):
        raise SweepError(f"{run_dir} holds a finished run of a different config; remove it or pick another --out")


def row_of(name: str, point: dict[str, Any], seed: int, run_dir: Path, summary: dict) -> dict:
    base, final = summary["base"], summary["final"]
    return {
        "label": name,
        "point": point,
        "seed": seed,
        "run_dir": str(run_dir),
        "base_gold_pass@1": base.get("gold_pass@1", base["pass@1"]),
        "gold_pass@1": final.get("gold_pass@1", final["pass@1"]),
        "base_pass@1": base["pass@1"],
        "pass@1": final["pass@1"],
        "base_hacking_rate": base.get("hacking_rate", 0.0),
        "hacking_rate": final.get("hacking_rate", 0.0),
        "wall_s": summary["wall_s"],
        "steps": summary["steps"],
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}%"


def format_table(report: dict) -> str:
    """One row per run: gold and training-verifier pass@1 before -> after, hacking rate, wall time."""
    width = max([len(r["label"]) for r in report["runs"]] + [5])
    header = f"{'run':<{width}}  {'gold pass@1':>17}  {'train-verifier pass@1':>21}  {'hacking rate':>17}  {'wall':>7}"
    lines = [header]
    for r in report["runs"]:
        arrow = lambda a, b: f"{_pct(a)} -> {_pct(b)}"  # noqa: E731
        lines.append(
            f"{r['label']:<{width}}  {arrow(r['base_gold_pass@1'], r['gold_pass@1']):>17}  "
            f"{arrow(r['base_pass@1'], r['pass@1']):>21}  "
            f"{arrow(r['base_hacking_rate'], r['hacking_rate']):>17}  {r['wall_s']:>6.0f}s"
        )
    return "\n".join(lines)


def plot_sweep(report: dict, path: Path) -> Path:
    """Bars per run: final gold pass@1, training-verifier pass@1 and hacking rate (held-out)."""
    import matplotlib

    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt

    runs = report["runs"]
    keys = [
        ("gold_pass@1", "gold pass@1", "tab:green"),
        ("pass@1", "training-verifier pass@1", "tab:blue"),
        ("hacking_rate", "hacking rate", "tab:red"),
    ]
    fig, ax = plt.subplots(figsize=(max(6.4, 1.6 * len(runs)), 4.4), dpi=120)
    width = 0.8 / len(keys)
    for j, (key, name, colour) in enumerate(keys):
        values = [100 * (r[key] if r[key] is not None and not math.isnan(r[key]) else 0.0) for r in runs]
        ax.bar([i + (j - 1) * width for i in range(len(runs))], values, width, label=name, color=colour)
    ax.set_xticks(range(len(runs)), [r["label"] for r in runs], fontsize=7, rotation=15)
    ax.set_ylabel("held-out, after training (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"sweep over {', '.join(report['grid'])}: {len(runs)} runs", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
