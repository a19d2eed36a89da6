"""The lab's data: read run directories, group them by their knobs, pick one, read its curves.

Nothing here computes a new quantity. Every number comes from a run directory that `rlvr train`,
`rlvr sweep` or `rlvr compare` wrote (config.yaml, metrics.jsonl, summary.json; docs/metrics.md),
through the readers those commands use.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.eval.compare import last_value, peak_memory
from rlvr.rundir import is_finished, is_run_dir, metrics_path, read_config, read_metrics, read_summary, run_dirs

KNOBS: dict[str, str] = {
    "task": "task.name",
    "algorithm": "algo.algorithm",
    "G": "rollout.group_size",
    "beta": "algo.beta",
    "fidelity": "reward.fidelity",
    "lr": "optim.lr",
    "steps": "train.steps",
    "seed": "train.seed",
}
"""Knob name shown in the lab -> the config field (`section.key`) it reads and sets."""

CURVES: tuple[str, ...] = ("reward", "accuracy", "kl")
"""Per-step metrics the knobs view draws (docs/metrics.md)."""


@dataclass
class Run:
    """One run directory and the knob values its config.yaml holds (as strings, as a user types them)."""

    path: Path
    knobs: dict[str, str]
    summary: dict[str, Any] | None = field(default=None, repr=False)
    tools: str = "none"
    """rollout.tools: the tool its completions could call ("none": plain completions)."""

    @property
    def finished(self) -> bool:
        return self.summary is not None

    @property
    def label(self) -> str:
        settings = " ".join(f"{k}={v}" for k, v in self.knobs.items() if k != "seed")
        tools = "" if self.tools == "none" else f" tools={self.tools}"
        return f"{settings} seed={self.knobs.get('seed', '?')}{tools} ({self.path.name})"


def _config_value(config: dict[str, Any], dotted: str) -> str:
    section, key = dotted.split(".", 1)
    value = (config.get(section) or {}).get(key)
    return "" if value is None else str(value)


def read_run(path: Path) -> Run | None:
    """A Run for a directory holding config.yaml and metrics.jsonl or summary.json; None otherwise."""
    path = Path(path)
    if not is_run_dir(path):
        return None
    if not (metrics_path(path).is_file() or is_finished(path)):
        return None
    try:
        config = read_config(path)
        summary = read_summary(path)
    except (OSError, yaml.YAMLError, json.JSONDecodeError):
        return None  # a run being written this instant, or a foreign file; the next scan sees it
    if not isinstance(config, dict):
        return None
    knobs = {name: _config_value(config, dotted) for name, dotted in KNOBS.items()}
    return Run(path, knobs, summary, _config_value(config, "rollout.tools") or "none")


def scan_runs(root: str | Path) -> list[Run]:
    """Every run directory under root (any depth: sweeps nest runs one level down), sorted by path."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = (read_run(run_dir) for run_dir in run_dirs(root))
    return [run for run in runs if run is not None]


def _sort_key(value: str) -> tuple[int, float | str]:
    try:
        return (0, float(value))
    except ValueError:
        return (1, value)


def knob_values(runs: list[Run]) -> dict[str, list[str]]:
    """Each knob's distinct values over the runs, numbers in numeric order."""
    return {name: sorted({run.knobs[name] for run in runs}, key=_sort_key) for name in KNOBS}


def pick_runs(runs: list[Run], choice: dict[str, str]) -> list[Run]:
    """The runs whose knobs equal every chosen value (finished ones first, then by path)."""
    matches = [run for run in runs if all(run.knobs.get(k) == str(v) for k, v in choice.items())]
    return sorted(matches, key=lambda run: (not run.finished, str(run.path)))


def read_curves(path: str | Path, metrics: tuple[str, ...] = CURVES) -> list[dict[str, Any]]:
    """Long-form rows {step, metric, value} from metrics.jsonl; a half-written last line is skipped."""
    rows = []
    for record in read_metrics(path):  # without the line the trainer is writing right now
        for name in metrics:
            value = record.get(name)
            if isinstance(value, (int, float)) and math.isfinite(value) and "step" in record:
                rows.append({"step": record["step"], "metric": name, "value": float(value)})
    return rows


SELF_CHECK_CURVES = ("selfcheck/rate", "selfcheck/accuracy_checked", "selfcheck/accuracy_unchecked")
"""Self-verification beside accuracy (arith with a base that checks steps; docs/metrics.md)."""


TOOL_CURVES = ("tools/use_rate",)
"""Tool use beside accuracy (rollout.tools): the share of a step's completions that ran a call."""


def uses_tools(path: str | Path) -> bool:
    """Whether the run logged tool use (`tools/use_rate`: a run with rollout.tools set)."""
    return bool(read_curves(path, TOOL_CURVES))


def accuracy_metrics(path: str | Path) -> tuple[str, ...]:
    """reward and accuracy; the tool-use rate when the run used a tool; and the self-check curves
    when the run's completions ever checked a step."""
    checked = any(row["value"] > 0 for row in read_curves(path, ("selfcheck/rate",)))
    tools = TOOL_CURVES if uses_tools(path) else ()
    return ("reward", "accuracy", *tools, *(SELF_CHECK_CURVES if checked else ()))


def live_metrics(path: str | Path) -> tuple[str, ...]:
    """What a live run's chart draws: reward and accuracy, and the tool-use rate when it uses a tool."""
    return ("reward", "accuracy", *(TOOL_CURVES if uses_tools(path) else ()))


def _last_eval(rows: list[dict[str, Any]], key: str) -> tuple[int, float] | None:
    """(step, value) of the last held-out evaluation line that logged `key`; None if none did."""
    found = [(row["step"], row[key]) for row in rows if row.get(key) is not None and "step" in row]
    return found[-1] if found else None


def measured(run: Run) -> dict[str, Any]:
    """The numbers the knobs view shows for one run, each straight from its files (None: not logged)."""
    rows = read_metrics(run.path)
    summary = run.summary or {}
    base, final = summary.get("base", {}), summary.get("final", {})
    return {
        "pass@1": (base.get("pass@1"), final.get("pass@1")),
        "gold_pass@1": (base.get("gold_pass@1"), final.get("gold_pass@1")),
        "hacking_rate": (base.get("hacking_rate"), final.get("hacking_rate")),
        "tool_use_rate": (base.get("tool_use_rate"), final.get("tool_use_rate")),
        "tools/use_rate": last_value(rows, "tools/use_rate"),
        "eval/tool_use_rate": _last_eval(rows, "eval/tool_use_rate"),
        "memory/peak_total": peak_memory(rows).get("memory/peak_total"),
        "grad/noise_scale": last_value(rows, "grad/noise_scale"),
        "wall_s": summary.get("wall_s"),
        "steps_logged": len({row["step"] for row in rows if "reward" in row and "step" in row}),
        "last_step": max((row["step"] for row in rows if "reward" in row and "step" in row), default=0),
        "eval/pass@1": _last_eval(rows, "eval/pass@1"),
    }


def progress(run: Run, last_step: int) -> str:
    """How far an unfinished run got, as the first page says it too."""
    return f"running/interrupted at step {last_step} of {run.knobs.get('steps') or '?'}"


def sweep_command(choice: dict[str, str], root: str | Path, config: str = "configs/smoke.yaml") -> str:
    """The `rlvr sweep` command that makes the run a knob setting asks for."""
    grid = [f"--grid {shlex.quote(f'{KNOBS[k]}={v}')}" for k, v in choice.items() if k != "seed" and v != ""]
    seed = choice.get("seed") or "0"
    out = Path(root) / "lab-sweep"
    return " ".join(
        ["rlvr sweep --config", shlex.quote(config), *grid, f"--seeds {seed}", f"--out {shlex.quote(str(out))}"]
    )
