"""The pass@k / CoT-pass@k figure: each model's pass@k solid (its 95% bootstrap interval shaded) and
CoT-pass@k dashed, k on a log axis; a k with no value (no query with k scorable samples) is a gap."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def plot_passk(report: dict, path: Path) -> Path:
    """Write the curves of every model in `report` (the eval.json object) to a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display is needed or wanted
    import matplotlib.pyplot as plt

    ks = report["k"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for (label, result), colour in zip(report["models"].items(), ["tab:blue", "tab:orange"]):
        name = f"{label} ({Path(result['path']).name or result['path']})"
        ax.plot(ks, _percent(result["pass@k"]), "-o", color=colour, label=f"{name} pass@k")
        if result.get("pass@k_ci"):
            low, high = zip(*[(i or [None, None]) for i in result["pass@k_ci"]])
            ax.fill_between(ks, _percent(low), _percent(high), color=colour, alpha=0.15, linewidth=0)
        if result["cot_pass@k"] is not None:
            ax.plot(ks, _percent(result["cot_pass@k"]), "--s", color=colour, label=f"{name} CoT-pass@k")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (samples drawn per query)")
    ax.set_ylabel("queries solved (%)")
    ax.set_ylim(0, 100)
    ax.set_title(
        f"pass@k on {report['task']}: n={report['n']} samples x {report['num_queries']} "
        f"held-out queries, T={report['temperature']}",
        fontsize=9,
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _percent(values: Iterable[float | None]) -> list[float]:
    """Fractions as percent, None as NaN (matplotlib leaves a gap)."""
    return [float("nan") if v is None else 100 * v for v in values]


RUN_PANELS = (
    ("reward", ("reward", "accuracy"), "training batch (0-1)"),
    ("held-out", ("eval/pass@1", "eval/greedy"), "held-out (0-1)"),
    ("KL to the reference", ("kl",), "KL (k3 estimate)"),
    ("entropy", ("entropy",), "entropy (nats/token)"),
)
"""curves.png's panels: title, the metrics.jsonl keys drawn, the y label."""


def plot_run(rows: list[dict], summary: dict | None, path: Path, *, title: str = "") -> Path:
    """A run's curves over steps (RUN_PANELS), from its metrics.jsonl rows; held-out points include the
    base's (step 0, from summary.json) and the final evaluation. Keys a run did not log are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    held_out = [{"step": 0, **{f"eval/{k}": v for k, v in summary["base"].items()}}] if summary else []
    fig, axes = plt.subplots(2, 2, figsize=(8.8, 5.6), dpi=110, sharex=True)
    for ax, (name, keys, label) in zip(axes.flat, RUN_PANELS):
        for key in keys:
            source = held_out + rows if key.startswith("eval/") else rows
            points = [(r["step"], r[key]) for r in source if isinstance(r.get(key), int | float)]
            if points:
                steps, values = zip(*points)
                ax.plot(steps, values, "-o" if key.startswith("eval/") else "-", markersize=3, label=key)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("step")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
