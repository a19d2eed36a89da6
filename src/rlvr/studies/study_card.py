"""A `rlvr reproduce` study's card in small and in a picture: its pass@k curves (what the lab's
"Compression or new capability?" tab draws, `<out>/passk.json`) and `<out>/reproduce.png`."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from rlvr.studies.study_reports import passk_mean


def passk_curves(card: dict[str, Any]) -> dict[str, Any]:
    """A study card's pass@k in small: base and trained curves, mean over seeds and per seed, with
    the claims and the measured lines (what the lab's "Compression or new capability?" tab draws)."""
    arms = {}
    for arm, runs in card["arms"].items():
        reports = [r["eval"] for r in runs if r.get("eval")]
        if not reports:
            continue
        arms[arm] = {
            "base": {key: passk_mean(reports, "base", key) for key in ("pass@k", "cot_pass@k")},
            "trained": {key: passk_mean(reports, "model", key) for key in ("pass@k", "cot_pass@k")},
            "seeds": [{"seed": r["seed"], **{key: r["eval"]["models"]["model"][key] for key in ("pass@k", "cot_pass@k")}}
                      for r in runs if r.get("eval")],
        }  # fmt: skip
    keys = ("study", "title", "command", "made", "wall_s", "seeds", "steps", "claims", "measured")
    k = next((r["eval"]["k"] for runs in card["arms"].values() for r in runs if r.get("eval")), [])
    return {"schema": "rlvr.passk/1", **{key: card.get(key) for key in keys}, "k": k, "arms": arms}


def passk_of(report: dict | None) -> dict | None:
    """The pass@k curves of an eval.json (base and trained), without its per-query detail."""
    if report is None:
        return None
    return {"k": report["k"], "models": {m: {key: v.get(key) for key in ("pass@k", "cot_pass@k")}
                                          for m, v in report["models"].items()}}  # fmt: skip


def draw_card(card: dict[str, Any], path: Path) -> None:
    """The card's picture: held-out pass@1 (gold) over training per arm, and pass@k where measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with_passk = [(arm, runs) for arm, runs in card["arms"].items() if any(r["eval"] for r in runs)]
    checks = any(  # a panel only for a base that checks steps: a stray '!' in 1 of 128 is not one
        x is not None and x >= 0.05
        for runs in card["arms"].values()
        for r in runs
        for x in r["card"]["curves"].get("selfcheck/rate", [])
    )
    panels = 1 + bool(with_passk) + checks
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False)
    ax = axes[0][0]
    for arm, runs in card["arms"].items():
        curves = [r["card"]["evals"] for r in runs if r["card"]]
        steps = curves[0]["step"]
        values = [[c["gold_pass@1"][i] for c in curves] for i in range(len(steps))]
        mean = [statistics.fmean(v) for v in values]
        ax.plot(steps, mean, marker="o", label=arm)
        ax.fill_between(steps, [min(v) for v in values], [max(v) for v in values], alpha=0.15)
    ax.set(xlabel="step", ylabel="held-out pass@1 (gold)", title=f"rlvr reproduce {card['study']}", ylim=(0, 1))
    ax.legend(fontsize=8)
    if with_passk:
        ax = axes[0][1]
        for arm, runs in with_passk:
            reports = [r["eval"] for r in runs if r["eval"]]
            ks = reports[0]["k"]
            for model, style in (("base", "--"), ("model", "-")):
                for key, marker in (("pass@k", "o"), ("cot_pass@k", "s")):
                    if reports[0]["models"][model].get(key) is None:
                        continue
                    mean = passk_mean(reports, model, key)
                    label = f"{arm} {'base' if model == 'base' else 'trained'} {key.replace('_', '-')}"
                    ax.plot(ks, mean, style, marker=marker, markersize=3, label=label)
        ax.set(xscale="log", xlabel="k samples", ylabel="held-out pass@k", title="pass@k, mean over seeds", ylim=(0, 1))
        ax.legend(fontsize=7)
    if checks:
        ax = axes[0][-1]
        for arm, runs in card["arms"].items():
            series = [r["card"]["curves"] for r in runs]
            steps = series[0]["step"]
            rate = [statistics.fmean(c["selfcheck/rate"][i] for c in series) for i in range(len(steps))]
            ax.plot(steps, rate, label=f"{arm}: completions that check a step")
        ax.set(xlabel="step", ylabel="share of training completions", title="self-checks, mean over seeds", ylim=(0, 1))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
