"""The pass@k / CoT-pass@k figure: each model's pass@k solid and CoT-pass@k dashed, k on a log axis."""

from __future__ import annotations

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
        ax.plot(ks, [100 * v for v in result["pass@k"]], "-o", color=colour, label=f"{name} pass@k")
        if result["cot_pass@k"] is not None:
            ax.plot(ks, [100 * v for v in result["cot_pass@k"]], "--s", color=colour, label=f"{name} CoT-pass@k")
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
