"""`rlvr reproduce NAME`: a published claim about RLVR, measured end to end on this machine.

    rlvr reproduce --list
    rlvr reproduce controls --out runs/reproduce/controls

A study is a few arms (configurations), each trained over several seeds by `rlvr train` in
processes of their own, side by side (the atlas's runner, so a study resumes after an interruption
too), then, where the claim is about pass@k, evaluated by `rlvr eval` against the base model. The
study's report sets each paper's claim beside the numbers measured here, mean ± standard deviation
over seeds, and writes a card: ``<out>/reproduce.json`` and ``<out>/reproduce.png``.

Every held-out number is judged by the gold verifier: sampled pass@1 (n = 4 at T = 1) and greedy
accuracy side by side, before training and after.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.config import EVAL_FIELDS, load_config
from rlvr.errors import UserError
from rlvr.studies.atlas import AtlasRun, Setting, checkout_commit, preset_path, provenance, run_all, run_card

PASSK = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""The k of a pass@k study (Yue et al. 2025 go to k = 256); n = 256 samples per held-out query."""


class ReproduceError(UserError):
    """An unknown study, or bad seeds."""


@dataclass(frozen=True)
class Claim:
    source: str
    """Paper, as cited in REFERENCES.md."""
    text: str
    """What it reports, in its own setting."""


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    claims: tuple[Claim, ...]
    arms: tuple[Setting, ...]
    """Each arm is a configuration: a preset (or the default) and overrides (Setting.knob = the study)."""
    steps: int
    minutes: int
    """What the whole study takes on 2 cores, measured (docs/results.md)."""
    passk_arms: tuple[str, ...] = ()
    """Arms whose trained models `rlvr eval` compares with the base at k = 1..256."""
    report: Callable[[dict[str, list[dict]]], list[str]] = field(default=lambda arms: [], repr=False)
    """Lines that set the measurements beside the claims, from {arm: [run results]}."""


# ---------------------------------------------------------------------------------------------
# Numbers every report uses


def _spread(values: list[float | None]) -> tuple[float, float | None] | None:
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else None)


def _fmt(stat: tuple[float, float | None] | None, scale: float = 100.0, unit: str = "%", signed: bool = False) -> str:
    """mean ± sd with its unit, e.g. "70.0 ± 14.1%" or "+30.0 ± 14.1 points"."""
    if stat is None:
        return "n/a"
    mean, sd = stat
    text = f"{scale * mean:{'+' if signed else ''}.1f}"
    return (text if sd is None else f"{text} ± {scale * sd:.1f}") + unit


def _held_out(run: dict, key: str, which: int) -> float | None:
    evals = run["card"]["evals"]
    return evals[key][which] if evals["step"] and key in evals else None


def accuracy_line(label: str, runs: list[dict]) -> str:
    """Sampled pass@1 and greedy accuracy (gold), base -> final, mean ± sd over seeds."""
    cells = {
        f"{what} {when}": _spread([_held_out(r, key, i) for r in runs])
        for what, key in (("pass@1", "gold_pass@1"), ("greedy", "gold_greedy"))
        for when, i in (("base", 0), ("final", -1))
    }
    gain = _spread([_held_out(r, "gold_pass@1", -1) - _held_out(r, "gold_pass@1", 0) for r in runs])
    drop = _spread([_held_out(r, "gold_greedy", -1) - _held_out(r, "gold_greedy", 0) for r in runs])
    return (
        f"{label}: pass@1 {_fmt(cells['pass@1 base'])} -> {_fmt(cells['pass@1 final'])} "
        f"({_fmt(gain, unit=' points', signed=True)}); greedy {_fmt(cells['greedy base'])} -> {_fmt(cells['greedy final'])} "
        f"({_fmt(drop, unit=' points', signed=True)}) [{len(runs)} seeds]"
    )


# ---------------------------------------------------------------------------------------------
# The studies


def _bounds(runs: list[dict], key: str) -> tuple[float, float]:
    """The mean change (final - base) minus and plus two standard errors over seeds (one seed: the change)."""
    changes = [_held_out(r, key, -1) - _held_out(r, key, 0) for r in runs]
    mean = statistics.fmean(changes)
    margin = 2 * statistics.stdev(changes) / len(changes) ** 0.5 if len(changes) > 1 else 0.0
    return mean - margin, mean + margin


KEEP = 0.02
"""A greedy drop under 2 points (2 of 100 held-out queries) counts as keeping greedy accuracy."""


def _change(runs: list[dict], key: str) -> tuple[float, float | None]:
    return _spread([_held_out(r, key, -1) - _held_out(r, key, 0) for r in runs])


def raises(runs: list[dict], key: str = "gold_pass@1") -> bool:
    """The mean change is above zero by more than two standard errors over seeds."""
    return _bounds(runs, key)[0] > 0


def lowers(runs: list[dict], key: str = "gold_greedy") -> bool:
    """The mean change is below zero by more than two standard errors over seeds."""
    return _bounds(runs, key)[1] < 0


def _controls_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = [accuracy_line(arm, runs) for arm, runs in arms.items()]
    others = [arm for arm in arms if arm != "gold" and raises(arms[arm])]
    if raises(arms["gold"]) and not others:
        reading = ("only the accurate reward raises gold pass@1 (mean gain above two standard errors), as Wu et al. "
                   "found on clean arithmetic and Shao et al. on Llama3 and OLMo2; the spurious-reward gains of "
                   "Qwen2.5-Math do not appear on this base")  # fmt: skip
    else:
        reading = f"arms whose gold pass@1 gain is above two standard errors: {', '.join(others) or 'none'}"
    return [*lines, f"reading: {reading}"]


def _passk_mean(reports: list[dict], model: str, key: str) -> list[float]:
    """The mean over seeds of one model's curve (base or trained) at each k."""
    return [statistics.fmean(r["models"][model][key][i] for r in reports) for i in range(len(reports[0]["k"]))]


def _passk_lines(arm: str, runs: list[dict]) -> list[str]:
    """pass@k and CoT-pass@k, base -> trained, mean over seeds, and the k where the base catches up."""
    reports = [r["eval"] for r in runs if r.get("eval")]
    lines = []
    for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")) if reports else ():
        ks, base, model = reports[0]["k"], _passk_mean(reports, "base", key), _passk_mean(reports, "model", key)
        cross = next((k for k, b, m in zip(ks, base, model, strict=True) if b >= m), None)
        lines.append(
            f"{arm} {name} (mean of {len(reports)} seeds, base -> trained): "
            + ", ".join(f"k={k} {100 * b:.1f}->{100 * m:.1f}" for k, b, m in zip(ks, base, model, strict=True))
            + "; "
            + (f"the base catches up at k={cross}" if cross else "the base stays below at every k")
        )
    return lines


EXPANSION_BASE_MAX = 0.10
"""The expansion regime's base: pass@256 at most 10% on held-out problems."""
EXPANSION_GAIN = 0.30
"""... and the trained model at least 30 points above it at k = 256, above it at every k."""


def expansion_verdict(reports: list[dict], key: str = "pass@k") -> dict[str, Any]:
    """Whether eval reports (one per seed) show expansion: the base's pass@256 at most 10%, each
    seed's trained model above the base at every k, and the mean gain at the largest k >= 30 points."""
    base_top = statistics.fmean(r["models"]["base"][key][-1] for r in reports)
    above = [all(m > b for b, m in zip(r["models"]["base"][key], r["models"]["model"][key], strict=True))
             for r in reports]  # fmt: skip
    gain = _spread([r["models"]["model"][key][-1] - r["models"]["base"][key][-1] for r in reports])
    return {
        "k": reports[0]["k"][-1],
        "base_top": base_top,
        "seeds_above_everywhere": sum(above),
        "seeds": len(reports),
        "gain_top": gain,
        "expansion": _at_most(base_top, EXPANSION_BASE_MAX)
        and all(above)
        and gain is not None
        and _at_most(EXPANSION_GAIN, gain[0]),
    }


def _at_most(value: float, bound: float) -> bool:
    """value <= bound, forgiving the float error of a mean (10/100 averaged can be 0.1000000001)."""
    return value <= bound + 1e-9


def _expansion_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = [accuracy_line(arm, runs) for arm, runs in arms.items()]
    for arm, runs in arms.items():
        lines += _passk_lines(arm, runs)
        reports = [r["eval"] for r in runs if r.get("eval")]
        for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")) if reports else ():
            v = expansion_verdict(reports, key)
            lines.append(
                f"reading ({arm}, {name}): the base's {name.replace('k', str(v['k']))} is {100 * v['base_top']:.1f}% "
                f"({'at most' if _at_most(v['base_top'], EXPANSION_BASE_MAX) else 'above'} {100 * EXPANSION_BASE_MAX:.0f}%); "
                f"trained above the base at every k on {v['seeds_above_everywhere']} of {v['seeds']} seeds; "
                f"gain at k={v['k']} {_fmt(v['gain_top'], unit=' points', signed=True)} -> "
                + ("expansion: RL solved problems the base did not solve in 256 tries"
                   if v["expansion"] else "not the expansion regime's criteria (see the numbers above)")
            )  # fmt: skip
    return lines


def _sharpening_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = [accuracy_line(arm, runs) for arm, runs in arms.items()]
    for arm, runs in arms.items():
        lines += _passk_lines(arm, runs)
    keeps = [
        f"{arm} (greedy {_fmt(_change(runs, 'gold_greedy'), unit=' points', signed=True)})"
        for arm, runs in arms.items()
        if raises(runs) and (not lowers(runs) or _change(runs, "gold_greedy")[0] >= -KEEP)
    ]
    lines.append(
        f"raises pass@1 and keeps greedy (no drop beyond two standard errors, or under {100 * KEEP:.0f} points): "
        + (", ".join(keeps) if keeps else "none of these arms")
    )
    return lines


def _length_report(arms: dict[str, list[dict]]) -> list[str]:
    lines, growth = [], {}
    for arm, runs in arms.items():
        early = [_window(r, "completions/wrong_mean_length", 0, 10) for r in runs]
        late = [_window(r, "completions/wrong_mean_length", -10, None) for r in runs]
        right = _spread([_window(r, "completions/correct_mean_length", -10, None) for r in runs])
        growth[arm] = [b - a for a, b in zip(early, late, strict=True) if a is not None and b is not None]
        lines.append(
            f"{arm}: wrong answers {_fmt(_spread(early), 1, ' tokens')} (steps 1-10) -> "
            f"{_fmt(_spread(late), 1, ' tokens')} (last 10 steps); right answers in the last 10 steps "
            f"{_fmt(right, 1, ' tokens')}"
        )
    (first, a), (second, b) = list(growth.items())[:2]
    if len(a) > 1 and len(b) > 1:
        diff = statistics.fmean(a) - statistics.fmean(b)
        se = (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5
        verdict = "beyond" if abs(diff) > 2 * se else "within"
        lines.append(
            f"reading: wrong answers grew {diff:+.2f} ± {se:.2f} tokens more under {first} than under {second}, "
            f"{verdict} two standard errors"
        )
    return lines


def _self_check_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = []
    for arm, runs in arms.items():
        early = [_window(r, "selfcheck/rate", 0, 10) for r in runs]
        late = [_window(r, "selfcheck/rate", -10, None) for r in runs]
        checked = _spread([_window(r, "selfcheck/accuracy_checked", -10, None) for r in runs])
        unchecked = _spread([_window(r, "selfcheck/accuracy_unchecked", -10, None) for r in runs])
        change = [b - a for a, b in zip(early, late, strict=True) if a is not None and b is not None]
        mean = statistics.fmean(change) if change else float("nan")
        margin = 2 * statistics.stdev(change) / len(change) ** 0.5 if len(change) > 1 else 0.0
        verdict = "rose" if mean - margin > 0 else "fell" if mean + margin < 0 else "did not move beyond noise"
        curves = [r["card"]["curves"] for r in runs if r["card"]["curves"].get("selfcheck/rate")]
        steps = curves[0]["step"] if curves else []
        mean = [statistics.fmean(c["selfcheck/rate"][i] for c in curves) for i in range(len(steps))]
        peak = max(range(len(mean)), key=mean.__getitem__) if mean else None
        lines.append(
            f"{arm}: completions that check a step {_fmt(_spread(early))} (steps 1-10) -> {_fmt(_spread(late))} "
            f"(last 10 steps), {verdict}"
            + (f"; the mean over seeds peaks at {100 * mean[peak]:.1f}% at step {steps[peak]}" if mean else "")
            + f"; training accuracy in the last 10 steps with a check {_fmt(checked)}, without {_fmt(unchecked)}"
        )
    return [*lines, *(accuracy_line(arm, runs) for arm, runs in arms.items())]


def _window(run: dict, key: str, start: int, stop: int | None) -> float | None:
    xs = [x for x in run["card"]["curves"].get(key, [])[start:stop] if x is not None]
    return statistics.fmean(xs) if xs else None


NOISY = ("reward.fidelity=noisy", "reward.false_positive_rate=0.5", "reward.false_negative_rate=0.5")
SELF_CHECK = ("model.name=tiny-arith-check", "rollout.max_new_tokens=64")
"""The base that sometimes checks a step (models/selfcheck_base.py), with room for its checks."""

STUDIES: dict[str, Study] = {
    study.name: study
    for study in (
        Study(
            "controls",
            "Spurious rewards: does a reward that ignores correctness still teach?",
            (
                Claim("Shao et al. 2025 (arXiv 2506.10947)",
                      "Qwen2.5-Math-7B on MATH-500: ground truth +28.8, random reward +21.4, format-only +13.8 "
                      "points; no gains on Llama3 or OLMo2"),
                Claim("Wu et al. 2025 (arXiv 2507.10532)",
                      "on a clean arithmetic generator only accurate rewards beat the base; random ones do not"),
            ),
            (
                Setting("controls", "gold"),
                Setting("controls", "random reward", None, NOISY),
                Setting("controls", "format only", None, ("reward.correctness_weight=0", "reward.format_weight=1")),
            ),
            steps=100,
            minutes=5,
            report=_controls_report,
        ),
        Study(
            "sharpening",
            "Compression or new capability? pass@k of base and trained model up to k = 256",
            (
                Claim("Yue et al. 2025 (arXiv 2504.13837)",
                      "RL wins at small k; the base overtakes it between k of tens and hundreds"),
                Claim("Wen et al. 2025 (arXiv 2506.14245)", "RLVR raises CoT-pass@k at all k"),
            ),
            (
                Setting("sharpening", "default"),
                Setting("sharpening", "lr 1e-4", None, ("optim.lr=1e-4",)),
                Setting("sharpening", "beta 0.4", None, ("algo.beta=0.4",)),
            ),
            steps=100,
            minutes=6,
            passk_arms=("default",),
            report=_sharpening_report,
        ),
        Study(
            "expansion",
            "Compression or new capability? RL on chains the base rarely completes, pass@k up to k = 256",
            (
                Claim("Wen et al. 2025 (arXiv 2506.14245)", "RLVR raises CoT-pass@k at all k, up to large k"),
                Claim("Liu et al. 2025, ProRL (prolonged RL)",
                      "on tasks where the base is weak, long RL raises pass@k at all k: the boundary moves"),
                Claim("Yue et al. 2025 (arXiv 2504.13837)",
                      "the base overtakes the RL model at large k: RL only reweights what the base can sample"),
            ),
            (Setting("expansion", "step-checked reward", "configs/expansion.yaml"),),
            steps=500,
            minutes=17,
            passk_arms=("step-checked reward",),
            report=_expansion_report,
        ),
        Study(
            "self-verification",
            "Does checking one's own steps emerge from an answer-only reward?",
            (
                Claim("DeepSeek-R1 (2025)", "with rule-based rewards and no SFT, self-verification and reflection "
                      "emerge and grow over training"),
                Claim("TinyZero (Countdown)", "a 3B Qwen2.5 base learns self-verification; a 0.5B one does not"),
            ),
            (
                Setting("self-verification", "gold reward", None, SELF_CHECK),
                Setting("self-verification", "random reward", None, (*SELF_CHECK, *NOISY)),
            ),
            steps=100,
            minutes=7,
            report=_self_check_report,
        ),
        Study(
            "length-bias",
            "Dr. GRPO: per-sequence normalisation lets wrong answers grow long",
            (
                Claim("Liu et al. 2025, Dr. GRPO (arXiv 2503.20783)",
                      "the 1/|o| weighting lets wrong answers grow long; a constant normaliser removes the bias"),
            ),
            (
                Setting("length-bias", "sequence_mean (GRPO)"),
                Setting("length-bias", "constant (Dr. GRPO)", None, ("algo.aggregation=constant",)),
            ),
            steps=100,
            minutes=3,
            report=_length_report,
        ),
    )
}  # fmt: skip

# ---------------------------------------------------------------------------------------------
# Running a study


def runs_of(study: Study, seeds: list[int], steps: int | None = None) -> list[AtlasRun]:
    return [AtlasRun(arm, seed, steps or study.steps) for arm in study.arms for seed in seeds]


def eval_argv(run_dir: Path, queries: int) -> list[str]:
    """The `rlvr eval` command line that compares a trained run with the base it started from, on
    the run's own held-out task (chain length, values, sampling length), at k = 1..256."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    fields = [name.split(".") for name in EVAL_FIELDS]  # what `rlvr eval --set` takes, from the run's config
    sets = [arg for section, key in fields for arg in ("--set", f"{section}.{key}={config[section][key]}")]
    return ["eval", "--model", str(run_dir / "final"), "--base", str(config["model"]["name"]), "--n", str(PASSK[-1]),
            "--k", ",".join(map(str, PASSK)), "--num-queries", str(queries), *sets, "--out", str(run_dir / "eval"),
            "--quiet"]  # fmt: skip


def _evaluate(out: Path, run: AtlasRun, queries: int) -> int:
    """`rlvr eval` of one trained run against its base at k = 1..256 (kept if already made)."""
    run_dir = out / "runs" / run.dir_name
    if (run_dir / "eval" / "eval.json").is_file():
        return 0
    argv = eval_argv(run_dir, queries)
    with open(out / "runs" / f"{run.dir_name}.eval.log", "w") as log:
        return subprocess.run(
            [sys.executable, "-m", "rlvr.cli", *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            check=False,
        ).returncode


def reproduce(
    name: str,
    out: str | Path,
    *,
    seeds: tuple[int, ...] = (0, 1, 2),
    steps: int | None = None,
    jobs: int | None = None,
    progress: bool = True,
    command: str | None = None,
    eval_queries: int = 100,
) -> dict[str, Any]:
    """Run a study (keeping what is already made) and write its card; return the card. `steps`
    shortens (or lengthens) every run; `eval_queries` is the pass@k evaluation's held-out size."""
    if name not in STUDIES:
        raise ReproduceError(f"unknown study {name!r}; known: {', '.join(STUDIES)} (rlvr reproduce --list)")
    if len(seeds) < 1:
        raise ReproduceError("--seeds: give at least one seed")
    if steps is not None and steps < 2:
        raise ReproduceError(f"--steps {steps}: a study run needs at least 2 steps")
    study, out = STUDIES[name], Path(out)
    runs = runs_of(study, list(seeds), steps)
    for run in runs:  # a bad arm fails before any run starts
        load_config(preset_path(run.setting.config), run.overrides)
    commit, started = checkout_commit(), time.perf_counter()
    run_all(out, runs, jobs=jobs, progress=progress, desc=name)
    to_eval = [run for run in runs if run.setting.value in study.passk_arms]
    with ThreadPoolExecutor(max_workers=jobs or max(1, os.cpu_count() or 1)) as pool:
        codes = list(pool.map(lambda run: _evaluate(out, run, eval_queries), to_eval))
    if any(codes):
        failed = to_eval[codes.index(next(c for c in codes if c))].dir_name
        raise ReproduceError(f"rlvr eval failed for {failed}: see {out / 'runs' / (failed + '.eval.log')}")
    arms: dict[str, list[dict]] = {}
    for run in runs:
        run_dir = out / "runs" / run.dir_name
        evaluation = run_dir / "eval" / "eval.json"
        arms.setdefault(run.setting.value, []).append(
            {
                "dir": f"runs/{run.dir_name}",
                "seed": run.seed,
                "card": run_card(run_dir),
                "eval": json.loads(evaluation.read_text()) if evaluation.is_file() else None,
            }
        )
    card = {
        "study": study.name,
        "title": study.title,
        "command": command,
        "made": provenance(commit),
        "wall_s": round(time.perf_counter() - started, 1),
        "seeds": list(seeds),
        "steps": steps or study.steps,
        "claims": [{"source": c.source, "text": c.text} for c in study.claims],
        "measured": study.report(arms),
        "arms": {
            arm: [{k: v for k, v in r.items() if k != "eval"} | {"eval": _passk(r["eval"])} for r in results]
            for arm, results in arms.items()
        },  # fmt: skip
    }
    previous = out / "reproduce.json"
    if previous.is_file():  # a resumed study: its time is the sum of its parts
        try:
            card["wall_s"] = round(card["wall_s"] + float(json.loads(previous.read_text()).get("wall_s") or 0), 1)
        except (ValueError, TypeError):
            pass  # an unreadable card is replaced
    previous.write_text(json.dumps(card, indent=1) + "\n")
    draw_card(card, out / "reproduce.png")
    curves = passk_curves(card)
    if curves["arms"]:
        (out / "passk.json").write_text(json.dumps(curves, indent=1) + "\n")
    return card


def passk_curves(card: dict[str, Any]) -> dict[str, Any]:
    """A study card's pass@k in small: base and trained curves, mean over seeds and per seed, with
    the claims and the measured lines (what the lab's "Compression or new capability?" tab draws)."""
    arms = {}
    for arm, runs in card["arms"].items():
        reports = [r["eval"] for r in runs if r.get("eval")]
        if not reports:
            continue
        arms[arm] = {
            "base": {key: _passk_mean(reports, "base", key) for key in ("pass@k", "cot_pass@k")},
            "trained": {key: _passk_mean(reports, "model", key) for key in ("pass@k", "cot_pass@k")},
            "seeds": [{"seed": r["seed"], **{key: r["eval"]["models"]["model"][key] for key in ("pass@k", "cot_pass@k")}}
                      for r in runs if r.get("eval")],
        }  # fmt: skip
    keys = ("study", "title", "command", "made", "wall_s", "seeds", "steps", "claims", "measured")
    k = next((r["eval"]["k"] for runs in card["arms"].values() for r in runs if r.get("eval")), [])
    return {"schema": "rlvr.passk/1", **{key: card.get(key) for key in keys}, "k": k, "arms": arms}


def _passk(report: dict | None) -> dict | None:
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
                    mean = [statistics.fmean(r["models"][model][key][i] for r in reports) for i in range(len(ks))]
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
