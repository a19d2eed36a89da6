"""The lab's "compression or new capability?" data: the eval.json files `rlvr eval` wrote.

pass@k and CoT-pass@k come from eval.json as `rlvr eval` estimated them (docs/evaluation.md);
this module only finds the files and reshapes the curves for a chart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CURVE_NAMES = {"pass@k": "pass@k", "cot_pass@k": "CoT-pass@k"}


def find_evals(root: str | Path) -> list[Path]:
    """Every eval.json under root (any depth), sorted by path."""
    root = Path(root)
    return sorted(root.rglob("eval.json")) if root.is_dir() else []


def read_eval(path: str | Path) -> dict[str, Any] | None:
    """The report in an eval.json, or None if it is unreadable or not an `rlvr eval` report."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return report if isinstance(report, dict) and {"k", "models"} <= report.keys() else None


def passk_rows(report: dict[str, Any], prefix: str = "") -> list[dict[str, Any]]:
    """Long-form rows {k, series, value}; series is '<prefix><model> <curve>', e.g. 'base CoT-pass@k'."""
    rows = []
    for label, model in report["models"].items():
        for key, name in CURVE_NAMES.items():
            for k, value in zip(report["k"], model.get(key) or [], strict=False):
                rows.append({"k": k, "series": f"{prefix}{label} {name}", "value": value})
    return rows


def short_names(paths: list[Path]) -> list[str]:
    """Labels that tell several eval.json apart: the shortest tails of their folders that differ."""
    folders = [path.parent.parts for path in paths]
    for depth in range(1, max((len(parts) for parts in folders), default=1) + 1):
        names = ["/".join(parts[-depth:]) for parts in folders]
        if len(set(names)) == len(names):
            return names
    return [str(path) for path in paths]


def crossing_text(report: dict[str, Any]) -> str:
    """Where the base curve catches up with the trained one, as `rlvr eval` found it."""
    if "base" not in report["models"]:
        return "No base model in this report (run `rlvr eval --base ...` to compare)."
    parts = []
    for key, name in CURVE_NAMES.items():
        k = (report.get("crossing") or {}).get(key)
        if report["models"]["base"].get(key) is None:
            parts.append(f"{name}: unavailable for task '{report.get('task')}'")
        elif k is None:
            parts.append(f"{name}: the curves do not cross at these k (base never catches up from below)")
        else:
            parts.append(f"{name}: base catches up with the trained model at k={k}")
    return "; ".join(parts) + "."
