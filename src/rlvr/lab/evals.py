"""The lab's "compression or new capability?" data: the eval.json files `rlvr eval` wrote, and the
two regimes `rlvr reproduce` measured (sharpening and expansion).

pass@k and CoT-pass@k come from eval.json as `rlvr eval` estimated them (docs/evaluation.md), for
any task, with their 95% bootstrap intervals and the paired model - base difference when the file
has them (an eval.json written before intervals has none, and shows without), and from the
passk.json a pass@k study of `rlvr reproduce` writes (mean over seeds); this module only finds the
files and reshapes the curves and intervals for a chart, a table and text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.lab.files import find_files, read_report
from rlvr.studies.study_data import RESULTS

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
    """Long-form rows {k, series, value} of a study's mean curves, e.g. series 'trained CoT-pass@k',
    and of the base alone at a lower temperature where the study sampled it ('base, T = 0.3 pass@k')."""
    rows = []
    for arm, models in curves["arms"].items():
        prefix = f"{arm}: " if len(curves["arms"]) > 1 else ""
        for model in ("base", "trained"):
            for key, name in CURVE_NAMES.items():
                for k, value in zip(curves["k"], models[model].get(key) or [], strict=False):
                    rows.append({"k": k, "series": f"{prefix}{model} {name}", "value": value})
    for t, cooled in temperature_curves(curves).items():
        for key, name in CURVE_NAMES.items():
            for k, value in zip(cooled["k"], cooled[key] or [], strict=False):
                rows.append({"k": k, "series": f"base, T = {t} {name}", "value": value})
    return rows


def temperature_curves(curves: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{temperature: k, pass@k and CoT-pass@k of the base alone, mean over seeds}: free sharpening,
    from the study's raw data (`<study>.json` beside its passk.json, or the shipped one: studies/
    results/); {} where the study did not sample the base at a lower temperature."""
    shipped = curves.get("source", "shipped with rlvr") == "shipped with rlvr"
    path = (
        RESULTS / f"{curves['study']}.json" if shipped else Path(curves["source"]).with_name(f"{curves['study']}.json")
    )
    try:
        arms = json.loads(path.read_text())["arms"]
        seeds = next(iter(arms.values()))["seeds"]  # one base draw per seed, kept with the first arm
        temperatures = seeds[0].get("base_at_temperature") or {}
    except (OSError, ValueError, KeyError, TypeError, StopIteration, IndexError):
        return {}
    return {
        t: {"k": first["k"], **{key: _mean([s["base_at_temperature"][t][key] for s in seeds]) for key in CURVE_NAMES}}
        for t, first in sorted(temperatures.items(), key=lambda item: -float(item[0]))
    }


def _mean(curves: list[list[float] | None]) -> list[float] | None:
    if any(c is None for c in curves):
        return None
    return [sum(values) / len(values) for values in zip(*curves, strict=True)]


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


TABLE_COLUMNS = ["eval", "model", "curve", "k", "value", "95% low", "95% high"]
"""The pass@k tab's table: one row per eval.json, model (or "model - base"), curve and k. Values in
percent of queries solved (a difference in points), with the 95% interval eval.json holds (blank
where the file has none)."""

DIFFERENCE = "model - base"


def eval_label(path: str | Path, report: dict[str, Any]) -> str:
    """The dropdown's name for an eval.json: its path, task, n and number of queries."""
    return f"{path} ({report.get('task')}, n={report.get('n')}, {report.get('num_queries')} queries)"


def eval_choices(root: str | Path) -> list[tuple[str, str]]:
    """(label, path) of every `rlvr eval` report under root, whatever its task; other eval.json left out."""
    found = [(path, read_eval(path)) for path in find_evals(root)]
    return [(eval_label(path, report), str(path)) for path, report in found if report is not None]


def _percent(value: float | None) -> float | str | None:
    return "n/a" if value is None else round(100 * value, 1)


def _curve_rows(result: dict[str, Any], ks: list[int], eval_name: str, model: str) -> list[dict[str, Any]]:
    """TABLE_COLUMNS rows of one model's curves (or of the difference), with the intervals it holds
    (blank where it holds none); "n/a" at a k no query reaches and at every k of a curve the task
    has no checker for."""
    rows = []
    for key, name in CURVE_NAMES.items():
        values = result.get(key) or [None] * len(ks)
        intervals = result.get(f"{key}_ci") or [None] * len(values)
        for k, value, interval in zip(ks, values, intervals, strict=False):
            bounds = ["", ""] if interval is None else [round(100 * bound, 1) for bound in interval]
            cells = [eval_name, model, name, k, _percent(value), *bounds]
            rows.append(dict(zip(TABLE_COLUMNS, cells, strict=True)))
    return rows


def interval_rows(report: dict[str, Any], eval_name: str = "") -> list[dict[str, Any]]:
    """The table's rows for one eval.json: each model's pass@k and CoT-pass@k per k with its 95%
    bootstrap interval, then model - base with its paired interval (when the report has them).
    A curve the task has no checker for (CoT-pass@k: null) shows "n/a"."""
    rows = []
    for label, model in report["models"].items():
        rows += _curve_rows(model, report["k"], eval_name, label)
    if "difference" in report:
        rows += _curve_rows(report["difference"], report["k"], eval_name, DIFFERENCE)
    return rows


def _points(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f}"


def _shown(value: float | None, interval: list[float] | None, show: Any, unit: str = "") -> str:
    """'41.2% [32.5, 50.0]' or '+4.0 [+1.5, +6.5]'; without the brackets where there is no interval."""
    if value is None:
        return "n/a"
    bracket = "" if interval is None else f" [{show(interval[0])}, {show(interval[1])}]"
    return f"{show(value)}{unit}{bracket}"


def difference_text(report: dict[str, Any]) -> str:
    """model - base per k for both curves with their paired 95% intervals, in points; what is missing
    and why (no base, no reasoning checker, a file written before intervals)."""
    if "base" not in report["models"]:
        return ""
    difference = report.get("difference")
    if difference is None:
        return (
            "model - base: not in this eval.json (written by `rlvr eval` before it gave intervals and "
            "paired differences; run it again to get them)."
        )
    parts = []
    for key, name in CURVE_NAMES.items():
        values = difference.get(key)
        if values is None:
            parts.append(f"{name}: n/a (task '{report.get('task')}' has no reasoning checker)")
            continue
        intervals = difference.get(f"{key}_ci") or [None] * len(values)
        cells = [f"k={k} {_shown(v, ci, _points)}" for k, v, ci in zip(report["k"], values, intervals, strict=False)]
        parts.append(f"{name} " + ", ".join(cells))
    return "model - base in points [paired 95% interval]: " + "; ".join(parts) + "."


def interval_note(report: dict[str, Any]) -> str:
    """How the report's intervals were drawn, or that it has none."""
    boot = report.get("bootstrap")
    if not boot:
        return "No intervals: this eval.json was written by `rlvr eval` before it gave them."
    return (
        f"Intervals: {100 * boot['confidence']:.0f}% percentile bootstrap over {boot['over']}, "
        f"{boot['resamples']} resamples, seed {boot['seed']}."
    )


def scorable_text(report: dict[str, Any]) -> str:
    """The samples the verifier could not score and, per k, how many queries had fewer than k
    scorable samples (left out of that k's mean); "" when every sample was scored."""
    parts = [f"{label} {m['unscorable']}" for label, m in report["models"].items() if m.get("unscorable")]
    lines = [f"Unscorable samples (kept out of n): {', '.join(parts)}."] if parts else []
    for i, k in enumerate(report["k"]):
        short = {
            label: len((m.get("too_few_scorable") or [[]] * len(report["k"]))[i])
            for label, m in report["models"].items()
        }
        if any(short.values()):
            counts = ", ".join(f"{label} {count}" for label, count in short.items() if count)
            lines.append(f"k={k}: queries with fewer than {k} scorable samples, left out of that k's mean: {counts}.")
    return " ".join(lines)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def pass_at_1_text(report: dict[str, Any]) -> str | None:
    """pass@1 of each model with its 95% interval, and model - base with its paired one, as the
    report holds them; None when the report has no k = 1."""
    if 1 not in report["k"]:
        return None
    i = report["k"].index(1)

    def at_1(result: dict[str, Any], show: Any, unit: str = "") -> str:
        values = result.get("pass@k") or [None] * len(report["k"])
        return _shown(values[i], (result.get("pass@k_ci") or [None] * len(values))[i], show, unit)

    parts = [f"{label} {at_1(model, _pct, '%')}" for label, model in report["models"].items()]
    if report.get("difference"):
        parts.append(f"{DIFFERENCE} {at_1(report['difference'], _points)} points")
    return ", ".join(parts)


def run_evals(run_dir: str | Path) -> list[tuple[Path, dict[str, Any]]]:
    """The `rlvr eval` reports inside a run directory (e.g. RUN/eval/eval.json), sorted by path."""
    found = [(path, read_eval(path)) for path in find_evals(run_dir)]
    return [(path, report) for path, report in found if report is not None]


def run_eval_lines(run_dir: str | Path) -> list[str]:
    """Markdown list items: pass@1 with its 95% interval from each `rlvr eval` report inside the run
    directory (e.g. RUN/eval/eval.json); none when it has none. Training's own held-out pass@1
    (summary.json) carries no interval, so none is made up for it."""
    lines = []
    for path, report in run_evals(run_dir):
        shown = pass_at_1_text(report)
        if shown is not None:
            lines.append(
                f"- `rlvr eval` pass@1 [95% interval] (`{path.relative_to(run_dir)}`: {report.get('num_queries')} "
                f"held-out {report.get('task')} queries, n={report.get('n')}): **{shown}**"
            )
    return lines


def eval_text(path: Path, report: dict[str, Any], name: str = "") -> str:
    """Markdown of one eval.json: what was evaluated (task, queries, n, models), where the curves
    cross, model - base per k with its paired interval, unscorable samples, how intervals were drawn."""
    models = ", ".join(f"{label} `{model.get('path')}`" for label, model in report["models"].items())
    tools = "" if report.get("tools", "none") == "none" else f", tool rollouts with `{report['tools']}`"
    lines = [
        f"{f'**{name}**: ' if name else ''}`{path}`: {report.get('num_queries')} held-out {report.get('task')} "
        f"queries, n={report.get('n')} samples each at T={report.get('temperature')}{tools} ({models}). "
        f"{crossing_text(report)}",
        difference_text(report),
        scorable_text(report),
        interval_note(report),
    ]
    return "\n\n".join(line for line in lines if line)
