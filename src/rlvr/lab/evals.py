"""The lab's "compression or new capability?" data: the eval.json files `rlvr eval` wrote, and the
two regimes `rlvr reproduce` measured (sharpening and expansion).

pass@k and CoT-pass@k come from eval.json as `rlvr eval` estimated them (docs/evaluation.md), and
from the passk.json a pass@k study of `rlvr reproduce` writes (mean over seeds); this module only
finds the files and reshapes the curves for a chart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.lab.files import find_files, read_report

CURVE_NAMES = {"pass@k": "pass@k", "cot_pass@k": "CoT-pass@k"}

REGIMES = Path(__file__).with_name("atlas") / "regimes"
"""The passk.json of `rlvr reproduce sharpening` and `rlvr reproduce expansion` the package ships."""
REGIME_ORDER = ("sharpening", "expansion")


def load_regimes(root: str | Path | None = None) -> list[dict[str, Any]]:
    """The pass@k studies to show: the shipped ones, each replaced by the newest passk.json of the
    same study under `root` (a study the user ran with `rlvr reproduce`), in REGIME_ORDER."""
    found: dict[str, tuple[float, dict[str, Any]]] = {}
    shipped = sorted(REGIMES.glob("*.json")) if REGIMES.is_dir() else []
    mine = sorted(Path(root).rglob("passk.json")) if root and Path(root).is_dir() else []
    for rank, path in [(0.0, p) for p in shipped] + [(1.0 + p.stat().st_mtime, p) for p in mine]:
        try:
            curves = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(curves, dict) or curves.get("schema") != "rlvr.passk/1" or not curves.get("arms"):
            continue
        curves = curves | {"source": str(path) if rank else "shipped with rlvr"}
        if rank >= found.get(curves["study"], (-1.0, None))[0]:
            found[curves["study"]] = (rank, curves)
    order = {name: i for i, name in enumerate(REGIME_ORDER)}
    return [found[name][1] for name in sorted(found, key=lambda n: (order.get(n, len(order)), n))]


def regime_rows(curves: dict[str, Any]) -> list[dict[str, Any]]:
    """Long-form rows {k, series, value} of a study's mean curves, e.g. series 'trained CoT-pass@k'."""
    rows = []
    for arm, models in curves["arms"].items():
        prefix = f"{arm}: " if len(curves["arms"]) > 1 else ""
        for model in ("base", "trained"):
            for key, name in CURVE_NAMES.items():
                for k, value in zip(curves["k"], models[model].get(key) or [], strict=False):
                    rows.append({"k": k, "series": f"{prefix}{model} {name}", "value": value})
    return rows


def regime_text(curves: dict[str, Any]) -> str:
    """A study's title, the claims it tests and the lines it measured, with where it came from."""
    made = curves.get("made") or {}
    claims = "\n".join(f"- claimed, {c['source']}: {c['text']}" for c in curves.get("claims") or [])
    measured = "\n".join(f"- {line}" for line in curves.get("measured") or [] if "pass@k" in line or "reading" in line)
    return (
        f"**{curves.get('title')}** (`{curves.get('command') or 'rlvr reproduce ' + curves['study']}`; seeds "
        f"{', '.join(map(str, curves.get('seeds') or []))}, {curves.get('steps')} steps; {curves['source']}"
        f"{', made ' + made['date'] + ' on ' + made['machine'] if made.get('date') and made.get('machine') else ''})"
        f"\n\n{claims}\n\nMeasured (mean over seeds):\n{measured}"
    )


def find_evals(root: str | Path) -> list[Path]:
    """Every eval.json under root (any depth), sorted by path."""
    return find_files(root, "eval.json")


def read_eval(path: str | Path) -> dict[str, Any] | None:
    """The report in an eval.json, or None if it is unreadable or not an `rlvr eval` report."""
    return read_report(path, {"k", "models"})


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
