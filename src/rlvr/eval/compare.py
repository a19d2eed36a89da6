"""The numbers of `rlvr compare`, from plain data: per-step metric rows and pass@k curves in, one
summary per algorithm, a printed table and a figure out. Nothing here trains or samples.

Definitions (also in docs/algorithms.md, "Comparing paradigms"):

- reward jitter: mean over steps of |reward_t − reward_{t−1}|, averaged over seeds. A trend moves
  the reward a little each step; noise moves it a lot, so this measures instability, not progress.
- final reward: mean reward over the last quarter of the steps of a run; its spread across seeds
  (standard deviation, Bessel-corrected) measures how much the outcome depends on the seed.
- memory: the peak over steps of every `memory/*` metric the run logged (bytes, shown in MiB);
  absent ones are "not measured", never estimated here.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from rlvr.eval.stats import mean_sd

NOT_MEASURED = "not measured"


def _mean_std(values: list[float | None]) -> dict[str, float | None]:
    """{"mean", "std"} over seeds (eval/stats.py); std is None with fewer than 2 values."""
    spread = mean_sd(values)
    return {"mean": spread.mean, "std": spread.sd}


def step_rewards(rows: list[dict[str, Any]]) -> list[float]:
    """The `reward` of each training step (rows without it, e.g. eval-only rows, are skipped)."""
    return [r["reward"] for r in rows if r.get("reward") is not None]


def reward_jitter(rewards: list[float]) -> float | None:
    """Mean |r_t − r_{t−1}| over consecutive steps; None with fewer than 2 steps."""
    if len(rewards) < 2:
        return None
    return statistics.fmean(abs(b - a) for a, b in zip(rewards, rewards[1:]))


def final_reward(rewards: list[float]) -> float | None:
    """Mean reward over the last quarter of the steps (at least one step)."""
    if not rewards:
        return None
    tail = max(1, len(rewards) // 4)
    return statistics.fmean(rewards[-tail:])


def peak_memory(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The largest value of each numeric `memory/*` metric over the run; {} when none was logged."""
    peaks: dict[str, float] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("memory/") and isinstance(value, (int, float)) and not isinstance(value, bool):
                peaks[key] = max(peaks.get(key, value), value)
    return peaks


def last_value(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return values[-1] if values else None


def summarize_algorithm(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One algorithm's row of the table from its runs (one per seed).

    Each run is {"seed", "rows" (metrics.jsonl), "wall_s", "passk": {"pass@k": [...],
    "cot_pass@k": [...] or None}}; the k values are the report's.
    """
    rewards = [step_rewards(run["rows"]) for run in runs]
    memory = [peak_memory(run["rows"]) for run in runs]
    keys = sorted({k for m in memory for k in m})
    curves = {name: [run["passk"][name] for run in runs] for name in ("pass@k", "cot_pass@k")}
    return {
        "seeds": [run["seed"] for run in runs],
        "memory": {k: _mean_std([m.get(k) for m in memory]) for k in keys} or NOT_MEASURED,
        "distinct_correct": _mean_std([last_value(run["rows"], "explore/distinct_correct") for run in runs]),
        "queries_solved": _mean_std([last_value(run["rows"], "explore/queries_solved") for run in runs]),
        "reward_jitter": _mean_std([reward_jitter(r) for r in rewards]),
        "final_reward": _mean_std([final_reward(r) for r in rewards]),
        "pass@k": curve_mean(curves["pass@k"]),
        "cot_pass@k": None if any(c is None for c in curves["cot_pass@k"]) else curve_mean(curves["cot_pass@k"]),
        "wall_s": _mean_std([run["wall_s"] for run in runs]),
        "reward_curves": rewards,
        "distinct_curves": [
            [r["explore/distinct_correct"] for r in run["rows"] if "explore/distinct_correct" in r] for run in runs
        ],
    }


def curve_mean(curves: list[list[float]]) -> dict[str, list[float | None]]:
    """Per-k mean and std over seeds."""
    per_k = [_mean_std(list(values)) for values in zip(*curves)]
    return {"mean": [s["mean"] for s in per_k], "std": [s["std"] for s in per_k]}


# --------------------------------------------------------------------------- the table


def _fmt(stat: dict[str, float | None] | None, scale: float = 1.0, digits: int = 3, unit: str = "") -> str:
    if stat is None or stat["mean"] is None:
        return "n/a"
    text = f"{scale * stat['mean']:.{digits}f}"
    if stat["std"] is not None:
        text += f" ± {scale * stat['std']:.{digits}f}"
    return text + unit


def _at(curve: dict[str, list] | None, i: int) -> dict[str, float | None] | None:
    return None if curve is None else {"mean": curve["mean"][i], "std": curve["std"][i]}


def table_rows(report: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(quantity, one cell per column) rows; columns are the algorithms, then the base model."""
    algos = report["algorithms"]
    ks, big = report["k"], len(report["k"]) - 1
    base = report.get("base")
    memory_keys = sorted({k for a in algos.values() if a["memory"] != NOT_MEASURED for k in a["memory"]})

    def row(label: str, cell, base_cell: str = "–") -> tuple[str, list[str]]:
        return label, [cell(a) for a in algos.values()] + ([base_cell] if base else [])

    rows = [row("memory", lambda a: NOT_MEASURED if a["memory"] == NOT_MEASURED else "peaks below")]
    for key in memory_keys:
        rows.append(
            row(
                f"memory: {key.removeprefix('memory/')} (peak, MiB)",
                lambda a, k=key: (
                    NOT_MEASURED if a["memory"] == NOT_MEASURED else _fmt(a["memory"].get(k), scale=1 / 2**20, digits=2)
                ),
            )
        )
    base_curve = {"pass@k": None, "cot_pass@k": None} if base is None else base
    rows += [
        row("exploration: distinct correct solutions", lambda a: _fmt(a["distinct_correct"], digits=0)),
        row("exploration: train queries solved", lambda a: _fmt(a["queries_solved"], digits=0)),
        row(
            f"exploration: held-out pass@{ks[big]}",
            lambda a: _fmt(_at(a["pass@k"], big)),
            _fmt(_at(base_curve["pass@k"], big)),
        ),
        row("stability: reward jitter (mean abs step change)", lambda a: _fmt(a["reward_jitter"])),
        row("stability: final reward (last quarter of steps)", lambda a: _fmt(a["final_reward"])),
        row("reasoning: held-out pass@1", lambda a: _fmt(_at(a["pass@k"], 0)), _fmt(_at(base_curve["pass@k"], 0))),
        row(
            "reasoning: held-out CoT-pass@1",
            lambda a: _fmt(_at(a["cot_pass@k"], 0)),
            _fmt(_at(base_curve["cot_pass@k"], 0)),
        ),
        row(
            f"reasoning: held-out CoT-pass@{ks[big]}",
            lambda a: _fmt(_at(a["cot_pass@k"], big)),
            _fmt(_at(base_curve["cot_pass@k"], big)),
        ),
        row("wall time per run (train + eval)", lambda a: _fmt(a["wall_s"], digits=0, unit=" s")),
    ]
    return rows


def format_table(report: dict[str, Any]) -> str:
    """A Markdown table (readable as printed, pasteable into docs): mean ± std over seeds."""
    header = ["quantity", *report["algorithms"], *(["base model"] if report.get("base") else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join([label, *cells]) + " |" for label, cells in table_rows(report)]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the figure


def plot_compare(report: dict[str, Any], path: Path) -> Path:
    """Three panels: training reward per step, distinct correct solutions per step (mean over
    seeds, band = min..max), and held-out pass@k / CoT-pass@k against k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_r, ax_e, ax_k) = plt.subplots(1, 3, figsize=(13, 4), dpi=110)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (name, algo), colour in zip(report["algorithms"].items(), colours):
        for ax, curves in ((ax_r, algo["reward_curves"]), (ax_e, algo["distinct_curves"])):
            length = min(len(c) for c in curves)
            if not length:
                continue
            steps = range(1, length + 1)
            columns = list(zip(*(c[:length] for c in curves)))
            ax.plot(steps, [statistics.fmean(c) for c in columns], color=colour, label=name)
            ax.fill_between(steps, [min(c) for c in columns], [max(c) for c in columns], color=colour, alpha=0.2)
        ax_k.plot(report["k"], [100 * v for v in algo["pass@k"]["mean"]], "-o", color=colour, label=f"{name} pass@k")
        if algo["cot_pass@k"] is not None:
            ax_k.plot(
                report["k"],
                [100 * v for v in algo["cot_pass@k"]["mean"]],
                "--s",
                color=colour,
                label=f"{name} CoT-pass@k",
            )
    if report.get("base"):
        ax_k.plot(
            report["k"], [100 * v for v in report["base"]["pass@k"]["mean"]], "-o", color="grey", label="base pass@k"
        )
        if report["base"]["cot_pass@k"] is not None:
            ax_k.plot(
                report["k"],
                [100 * v for v in report["base"]["cot_pass@k"]["mean"]],
                "--s",
                color="grey",
                label="base CoT-pass@k",
            )
    ax_r.set(xlabel="step", ylabel="training reward", title="reward (band: min..max over seeds)")
    ax_e.set(xlabel="step", ylabel="distinct correct solutions", title="online exploration")
    ax_k.set_xscale("log", base=2)
    ax_k.set_xticks(report["k"], [str(k) for k in report["k"]])
    ax_k.set(
        xlabel="k",
        ylabel="held-out queries solved (%)",
        ylim=(0, 100),
        title=f"held-out pass@k, n={report['n']}, {report['num_queries']} queries",
    )
    for ax in (ax_r, ax_e, ax_k):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"rlvr compare: {report['steps']} steps x seeds {report['seeds']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
