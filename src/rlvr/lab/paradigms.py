"""The lab's "paradigms compared" data: what `rlvr compare` wrote, and the memory estimator per algorithm.

The table rows are eval/compare.py's own (`table_rows`, the rows of compare.md); the figure is the
compare.png it drew; estimates come from diagnostics/memory_estimate.estimate. Nothing is recomputed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rlvr.diagnostics.memory_estimate import TrainingSetup, estimate
from rlvr.diagnostics.memory_model import load_model_spec
from rlvr.diagnostics.memory_setup import default_group
from rlvr.eval.compare import NOT_MEASURED, table_rows
from rlvr.lab.files import find_files, read_report

COMPARE_COMMAND = "rlvr compare --seeds 0,1 --steps 8 --out runs/compare"
"""The command the view suggests when no comparison exists yet."""

ESTIMATED_ALGORITHMS = ("grpo", "ppo", "dpo")
"""The paradigms set side by side: critic-free online, actor-critic online, offline preference."""

MIB = 2**20
GIB = 2**30


def find_compares(root: str | Path) -> list[Path]:
    """Every compare.json under root (any depth), sorted by path."""
    return find_files(root, "compare.json")


def read_compare(path: str | Path) -> dict[str, Any] | None:
    """The report in a compare.json, or None if it is unreadable or not an `rlvr compare` report."""
    return read_report(path, {"algorithms", "k", "steps", "seeds"})


def compare_frame(report: dict[str, Any]) -> pd.DataFrame:
    """compare.md's table (mean ± std over seeds): one row per quantity, one column per algorithm."""
    header = ["quantity", *report["algorithms"], *(["base model"] if report.get("base") else [])]
    return pd.DataFrame([[label, *cells] for label, cells in table_rows(report)], columns=header)


def measured_memory_frame(report: dict[str, Any]) -> pd.DataFrame:
    """Peak `memory/*` per algorithm in the compare runs (MiB, mean ± std over seeds; tiny model, CPU or GPU)."""
    rows = []
    for name, algo in report["algorithms"].items():
        memory = algo["memory"]
        if memory == NOT_MEASURED:
            rows.append({"algorithm": name, "metric": NOT_MEASURED, "MiB (mean)": None, "MiB (std over seeds)": None})
            continue
        for key, stat in sorted(memory.items()):
            rows.append(
                {
                    "algorithm": name,
                    "metric": key,
                    "MiB (mean)": None if stat["mean"] is None else round(stat["mean"] / MIB, 2),
                    "MiB (std over seeds)": None if stat["std"] is None else round(stat["std"] / MIB, 2),
                }
            )
    return pd.DataFrame(rows, columns=["algorithm", "metric", "MiB (mean)", "MiB (std over seeds)"])


def estimate_setup(algorithm: str) -> TrainingSetup:
    """`rlvr memory`'s defaults for one algorithm, G included (the registry's `memory_group_size`)."""
    return TrainingSetup(algorithm=algorithm, group=default_group(algorithm))


def estimate_frame(model: str, algorithms: tuple[str, ...] = ESTIMATED_ALGORITHMS) -> pd.DataFrame:
    """Estimated GiB per GPU by component (rows) for each algorithm (columns); 0 where it has no such part."""
    spec = load_model_spec(model)
    results = {a: estimate(spec, estimate_setup(a)).components for a in algorithms}
    names = list(dict.fromkeys(name for components in results.values() for name in components))
    names.remove("peak_total")
    names.append("peak_total")  # the total last, as `rlvr memory` prints it
    return pd.DataFrame(
        [
            {
                "component (GiB per GPU)": name,
                **{a: round(results[a][name].bytes / GIB, 2) if name in results[a] else 0.0 for a in algorithms},
            }
            for name in names
        ]
    )


def compare_summary(path: str | Path, report: dict[str, Any]) -> str:
    """One paragraph naming what the comparison trained, on what budget."""
    budget = report.get("prompt_budget") or {}
    return (
        f"`{path}`: {', '.join(report['algorithms'])} on task {report.get('task')} from {report.get('model')}, "
        f"{report['steps']} steps x seeds {report['seeds']}, {budget.get('batch_queries')} queries x "
        f"G={budget.get('group_size')} per step; held-out pass@k from n={report.get('n')} samples on "
        f"{report.get('num_queries')} queries. Cells: mean ± std over seeds."
    )
