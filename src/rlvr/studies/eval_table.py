"""The table `rlvr eval` prints from its report (eval.json): pass@k and CoT-pass@k per k with
intervals, the paired difference, the crossings, the support classes and the queries left out."""

from __future__ import annotations

from collections.abc import Callable

from rlvr.eval.curves import CURVES


def format_eval_table(report: dict) -> str:
    """The printed table: one row per k, pass@k and CoT-pass@k in percent for each model with their
    95% bootstrap intervals (and model − base in points, paired), then the crossings and the
    queries left out of a k for having fewer than k scorable samples."""
    models = report["models"]
    difference = report.get("difference")
    header = "   k" + "".join(f"  {label + ' pass@k':>20}  {label + ' CoT-pass@k':>20}" for label in models)
    if difference:
        header += f"  {'model-base pass@k':>22}  {'model-base CoT-pass@k':>22}"
    rows = [header]
    for i, k in enumerate(report["k"]):
        cells = [_cell(m, curve, i, _pct) for m in models.values() for curve in CURVES]
        row = f"{k:>4}" + "".join(f"  {cell:>20}" for cell in cells)
        if difference:
            row += "".join(f"  {_cell(difference, curve, i, _points):>22}" for curve in CURVES)
        rows.append(row)
    if "base" in models:
        rows.extend(_crossing_lines(report))
    for curve, classes in (report.get("support") or {}).items():
        rows.append(f"support at k={report['support_k']} ({'CoT-' if curve.startswith('cot') else ''}pass@k), queries: "
                    + ", ".join(f"{name} {count}" for name, count in classes.items()))  # fmt: skip
    unscorable = {label: m["unscorable"] for label, m in models.items() if m["unscorable"]}
    if unscorable:
        rows.append(f"unscorable samples (kept out of n): {unscorable}")
    rows.extend(_too_few_lines(report))
    boot = report["bootstrap"]
    rows.append(
        f"[intervals]: {100 * boot['confidence']:.0f}% percentile bootstrap over queries, {boot['resamples']} "
        f"resamples, seed {boot['seed']}{'; model-base paired (the same queries for both)' if difference else ''}"
    )
    return "\n".join(rows)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _cell(result: dict, curve: str, i: int, show: Callable[[float], str]) -> str:
    """'52.3% [47.1, 57.6]' (or '+3.1 [-1.0, 7.2]' for a difference in points); 'n/a' where there is
    no value (no reasoning checker, or no query with k scorable samples)."""
    values = result.get(curve)
    if values is None or values[i] is None:
        return "n/a"
    unit = "%" if show is _pct else ""
    interval = (result.get(f"{curve}_ci") or [None] * len(values))[i]
    if interval is None:
        return f"{show(values[i])}{unit}"
    return f"{show(values[i])}{unit} [{show(interval[0])}, {show(interval[1])}]"


def _crossing_lines(report: dict) -> list[str]:
    rows = []
    for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")):
        k = report["crossing"][key]
        if report["models"]["base"][key] is None:
            rows.append(f"{name}: unavailable for task '{report['task']}' (no reasoning checker)")
        elif k is None:
            rows.append(f"{name}: the curves do not cross (base never catches up from below at these k)")
        else:
            rows.append(f"{name}: base catches up with the trained model at k={k}")
    return rows


def _too_few_lines(report: dict, shown: int = 10) -> list[str]:
    """One line per k at which some query has fewer than k scorable samples, naming them (the first
    `shown` per model; eval.json lists all under too_few_scorable)."""
    rows = []
    for i, k in enumerate(report["k"]):
        named = {label: m.get("too_few_scorable", [[]] * len(report["k"]))[i] for label, m in report["models"].items()}
        if not any(named.values()):
            continue
        parts = [
            f"{label} {len(ids)}: {', '.join(ids[:shown])}{f' (+{len(ids) - shown} more)' if len(ids) > shown else ''}"
            for label, ids in named.items()
            if ids
        ]
        rows.append(
            f"k={k}: queries with fewer than {k} scorable samples, left out of that k's mean "
            f"(of {report['num_queries']}): {'; '.join(parts)}"
        )
    return rows
