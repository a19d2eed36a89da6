"""What `rlvr reproduce` reads from a study's runs: the lines that set each paper's claim beside the
numbers measured here, mean ± standard deviation over seeds (eval/stats.py), and the verdicts they
rest on (a change beyond two standard errors; the expansion regime's criteria).

Every function takes plain data: {arm: [run]}, each run {"card": its atlas run card, "eval": its
eval.json or None}.
"""

from __future__ import annotations

import statistics
from typing import Any

from rlvr.eval.curves import support_summary
from rlvr.eval.stats import Spread, mean_sd

# ---------------------------------------------------------------------------------------------
# Numbers every report uses


def _fmt(stat: Spread, scale: float = 100.0, unit: str = "%", signed: bool = False) -> str:
    """mean ± sd with its unit, e.g. "70.0 ± 14.1%" or "+30.0 ± 14.1 points"."""
    if stat.mean is None:
        return "n/a"
    mean, sd = stat.mean, stat.sd
    text = f"{scale * mean:{'+' if signed else ''}.1f}"
    return (text if sd is None else f"{text} ± {scale * sd:.1f}") + unit


def _held_out(run: dict, key: str, which: int) -> float | None:
    evals = run["card"]["evals"]
    return evals[key][which] if evals["step"] and key in evals else None


def accuracy_line(label: str, runs: list[dict]) -> str:
    """Sampled pass@1 and greedy accuracy (gold), base -> final, mean ± sd over seeds."""
    cells = {
        f"{what} {when}": mean_sd([_held_out(r, key, i) for r in runs])
        for what, key in (("pass@1", "gold_pass@1"), ("greedy", "gold_greedy"))
        for when, i in (("base", 0), ("final", -1))
    }
    gain = mean_sd([_held_out(r, "gold_pass@1", -1) - _held_out(r, "gold_pass@1", 0) for r in runs])
    drop = mean_sd([_held_out(r, "gold_greedy", -1) - _held_out(r, "gold_greedy", 0) for r in runs])
    return (
        f"{label}: pass@1 {_fmt(cells['pass@1 base'])} -> {_fmt(cells['pass@1 final'])} "
        f"({_fmt(gain, unit=' points', signed=True)}); greedy {_fmt(cells['greedy base'])} -> {_fmt(cells['greedy final'])} "
        f"({_fmt(drop, unit=' points', signed=True)}) [{len(runs)} seeds]"
    )


# ---------------------------------------------------------------------------------------------
# What each study reads from its arms


def _bounds(runs: list[dict], key: str) -> tuple[float, float]:
    """The mean change (final - base) minus and plus two standard errors over seeds (one seed: the change)."""
    change = _change(runs, key)
    return change.mean - _two_se(change), change.mean + _two_se(change)


def _two_se(spread: Spread) -> float:
    """Two standard errors of the mean; 0 for one seed (its change is all there is)."""
    return 2 * spread.standard_error if spread.sd is not None else 0.0


KEEP = 0.02
"""A greedy drop under 2 points (2 of 100 held-out queries) counts as keeping greedy accuracy."""


def _change(runs: list[dict], key: str) -> Spread:
    return mean_sd([_held_out(r, key, -1) - _held_out(r, key, 0) for r in runs])


def raises(runs: list[dict], key: str = "gold_pass@1") -> bool:
    """The mean change is above zero by more than two standard errors over seeds."""
    return _bounds(runs, key)[0] > 0


def lowers(runs: list[dict], key: str = "gold_greedy") -> bool:
    """The mean change is below zero by more than two standard errors over seeds."""
    return _bounds(runs, key)[1] < 0


def controls_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = [accuracy_line(arm, runs) for arm, runs in arms.items()]
    lines += [format_line(arm, runs) for arm, runs in arms.items() if _edge_width(runs)]
    if "bernoulli" in arms and "bernoulli no-clip" in arms:
        lines.append(clip_reading(arms["bernoulli"], arms["bernoulli no-clip"]))
    others = [arm for arm in arms if arm != "gold" and raises(arms[arm])]
    if raises(arms["gold"]) and not others:
        reading = ("only the accurate reward raises gold pass@1 (mean gain above two standard errors), as Wu et al. "
                   "found on clean arithmetic and Shao et al. on Llama3 and OLMo2; the spurious-reward gains of "
                   "Qwen2.5-Math do not appear on this base")  # fmt: skip
    else:
        reading = f"arms whose gold pass@1 gain is above two standard errors: {', '.join(others) or 'none'}"
    return [*lines, f"reading: {reading}"]


def format_line(arm: str, runs: list[dict]) -> str:
    """The share of training completions in the R1 format at step 1 (the base's own samples: a format
    reward teaches it within a few steps, which an early window would hide) against the last steps,
    and whether it moved beyond two standard errors over seeds: whether a format reward had
    anything to teach, and what the other rewards did to the format."""
    width = _edge_width(runs)
    last = _edge_labels(width)[1]
    base = [_window(r, "format_rate", 0, 1) for r in runs]
    late = [_late(r, "format_rate", width) for r in runs]
    change = mean_sd(b - a for a, b in zip(base, late, strict=True) if a is not None and b is not None)
    shift = change.mean if change.mean is not None else float("nan")
    verdict = "rose" if shift - _two_se(change) > 0 else "fell" if shift + _two_se(change) < 0 else "did not move"
    return (
        f"{arm}: completions in the format {_fmt(mean_sd(base))} (step 1) -> {_fmt(mean_sd(late))} ({last}), {verdict}"
    )


def eval_pass1_change(run: dict) -> float | None:
    """Trained minus base pass@1 of a run's pass@k evaluation (n samples a query), or None."""
    report = run.get("eval")
    if not report:
        return None
    return report["models"]["model"]["pass@k"][0] - report["models"]["base"]["pass@k"][0]


def clip_reading(clipped: list[dict], unclipped: list[dict]) -> str:
    """Shao et al.'s mechanism: the Bernoulli arm's pass@1 change with the clip minus without, seed by
    seed (the same seed draws the same coins and the same evaluation), and the clip's share of tokens."""
    pairs = [(eval_pass1_change(a), eval_pass1_change(b)) for a, b in zip(clipped, unclipped, strict=True)]
    diffs = [a - b for a, b in pairs if a is not None and b is not None]
    if not diffs:
        return "clip: no pass@k evaluation to compare"
    spread = mean_sd(diffs)
    share = mean_sd([statistics.fmean(v for v in r["card"]["curves"].get("clip_ratio/region_mean", []) if v is not None)
                     for r in clipped if any(v is not None for v in r["card"]["curves"].get("clip_ratio/region_mean", []))])  # fmt: skip
    beyond = abs(spread.mean) > _two_se(spread) and len(diffs) > 1
    return (
        f"clip (Shao et al.'s mechanism): Bernoulli pass@1 change with the clip minus without, same seeds and coins, "
        f"{_fmt(spread, unit=' points', signed=True)} over {len(diffs)} seeds; the clip acted on "
        f"{_fmt(share, unit='%')} of tokens -> "
        + ("the clip moves pass@1 beyond two standard errors" if beyond
           else "no effect of the clip beyond two standard errors: the mechanism is not shown here")
    )  # fmt: skip


def passk_mean(reports: list[dict], model: str, key: str) -> list[float]:
    """The mean over seeds of one model's curve (base or trained) at each k."""
    return [statistics.fmean(r["models"][model][key][i] for r in reports) for i in range(len(reports[0]["k"]))]


def _passk_lines(arm: str, runs: list[dict]) -> list[str]:
    """pass@k and CoT-pass@k, base -> trained, mean over seeds, and the k where the base catches up."""
    reports = [r["eval"] for r in runs if r.get("eval")]
    lines = []
    for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")) if reports else ():
        ks, base, model = reports[0]["k"], passk_mean(reports, "base", key), passk_mean(reports, "model", key)
        cross = next((k for k, b, m in zip(ks, base, model, strict=True) if b >= m), None)
        lines.append(
            f"{arm} {name} (mean of {len(reports)} seeds, base -> trained): "
            + ", ".join(f"k={k} {100 * b:.1f}->{100 * m:.1f}" for k, b, m in zip(ks, base, model, strict=True))
            + "; "
            + (f"the base catches up at k={cross}" if cross else "the base stays below at every k")
        )
    return lines


def temperature_lines(arms: dict[str, list[dict]]) -> list[str]:
    """Free sharpening: the base sampled at a lower temperature against each arm's trained model
    (T = 1), at k = 1 and at the largest k, seed by seed (the same seed's draws)."""
    first = next(iter(arms.values()))
    temperatures = sorted({t for r in first for t in r.get("temperatures", {})}, key=float)
    lines = []
    for t in temperatures:
        cooled = {
            r["seed"]: r["temperatures"][t]["models"]["model"]["pass@k"]
            for r in first
            if t in r.get("temperatures", {})
        }
        ks = next(iter(first))["temperatures"][t]["k"]
        base = [cooled[seed][0] for seed in cooled]
        parts = []
        for arm, runs in arms.items():
            pairs = [
                (r["eval"]["models"]["model"]["pass@k"], cooled[r["seed"]])
                for r in runs
                if r.get("eval") and r["seed"] in cooled
            ]
            if not pairs:
                continue
            wins = [sum(m[i] > c[i] for m, c in pairs) for i in (0, -1)]
            parts.append(
                f"{arm} above it at k=1 on {wins[0]} of {len(pairs)} seeds "
                f"({_fmt(mean_sd([m[0] for m, _ in pairs]))}), at k={ks[-1]} on {wins[1]} of {len(pairs)} "
                f"({_fmt(mean_sd([m[-1] for m, _ in pairs]))} vs {_fmt(mean_sd([c[-1] for _, c in pairs]))})"
            )
        lines.append(f"base at T = {t} (no training): pass@1 {_fmt(mean_sd(base))}; " + "; ".join(parts))
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
    gain = mean_sd([r["models"]["model"][key][-1] - r["models"]["base"][key][-1] for r in reports])
    return {
        "k": reports[0]["k"][-1],
        "base_top": base_top,
        "seeds_above_everywhere": sum(above),
        "seeds": len(reports),
        "gain_top": gain,
        "expansion": _at_most(base_top, EXPANSION_BASE_MAX)
        and all(above)
        and gain.mean is not None
        and _at_most(EXPANSION_GAIN, gain.mean),
    }


def _at_most(value: float, bound: float) -> bool:
    """value <= bound, forgiving the float error of a mean (10/100 averaged can be 0.1000000001)."""
    return value <= bound + 1e-9


def expansion_report(arms: dict[str, list[dict]]) -> list[str]:
    """Each arm's held-out accuracy, pass@k curves and how many seeds sit above the base at each k;
    the expansion regime's criteria; per-query support at the largest k drawn; the first arm (RL)
    against each other one (the supervised controls), seed by seed."""
    lines = [accuracy_line(arm, runs) for arm, runs in arms.items()]
    for arm, runs in arms.items():
        lines += _passk_lines(arm, runs)
        reports = [r["eval"] for r in runs if r.get("eval")]
        for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")) if reports else ():
            v = expansion_verdict(reports, key)
            above = seeds_above(reports, key)
            lines.append(
                f"{arm}, {name}: seeds above the base at "
                + ", ".join(f"k={k} {count}" for k, count in zip(reports[0]["k"], above, strict=True))
                + f" (of {len(reports)})"
            )
            lines.append(
                f"reading ({arm}, {name}): the base's {name.replace('k', str(v['k']))} is {100 * v['base_top']:.1f}% "
                f"({'at most' if _at_most(v['base_top'], EXPANSION_BASE_MAX) else 'above'} {100 * EXPANSION_BASE_MAX:.0f}%); "
                f"trained above the base at every k on {v['seeds_above_everywhere']} of {v['seeds']} seeds; "
                f"gain at k={v['k']} {_fmt(v['gain_top'], unit=' points', signed=True)} -> "
                + (f"expansion: the trained model solved problems the base did not solve in {v['k']} tries"
                   if v["expansion"] else "not the expansion regime's criteria (see the numbers above)")
            )  # fmt: skip
        lines += support_lines(arm, reports)
    return lines + control_lines(arms)


def seeds_above(reports: list[dict], key: str) -> list[int]:
    """At each k, how many seeds' trained curve is above their base's."""
    return [
        sum(r["models"]["model"][key][i] > r["models"]["base"][key][i] for r in reports)
        for i in range(len(reports[0]["k"]))
    ]


def support_lines(arm: str, reports: list[dict]) -> list[str]:
    """Per-query support at the study's largest k (`rlvr eval --support-k`), summed over seeds, and
    how many seeds expanded more queries than they shrank."""
    reports = [r for r in reports if r.get("support")]
    lines = []
    for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")) if reports else ():
        total, wider = support_summary([r["support"][key] for r in reports])
        lines.append(
            f"{arm}, support by {name} at k={reports[0]['support_k']} ({reports[0]['num_queries']} queries x "
            f"{len(reports)} seeds): "
            + ", ".join(f"{c} {n}" for c, n in total.items())
            + f"; more expanded than shrunk on {wider} of {len(reports)} seeds"
        )
    return lines


def control_lines(arms: dict[str, list[dict]]) -> list[str]:
    """The first arm against each other arm, the same seeds paired: CoT-pass@k at k = 1 and at the
    largest k, the difference (points, mean ± sd) and on how many seeds the first arm is above."""
    (first, mine), *others = arms.items()
    lines = []
    for arm, theirs in others:
        pairs = [
            (a["eval"], b["eval"])
            for a in mine
            for b in theirs
            if a["seed"] == b["seed"] and a.get("eval") and b.get("eval")
        ]
        if not pairs:
            continue
        parts = []
        for i in (0, -1):
            diff = [a["models"]["model"]["cot_pass@k"][i] - b["models"]["model"]["cot_pass@k"][i] for a, b in pairs]
            k = pairs[0][0]["k"][i]
            parts.append(f"CoT-pass@{k} {_fmt(mean_sd(diff), unit=' points', signed=True)} "
                         f"({sum(d > 0 for d in diff)} of {len(diff)} seeds above)")  # fmt: skip
        lines.append(f"{first} against {arm}: " + "; ".join(parts))
    return lines


def sharpening_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = [accuracy_line(arm, runs) for arm, runs in arms.items()]
    for arm, runs in arms.items():
        lines += _passk_lines(arm, runs)
    lines += temperature_lines(arms)
    keeps = [
        f"{arm} (greedy {_fmt(_change(runs, 'gold_greedy'), unit=' points', signed=True)})"
        for arm, runs in arms.items()
        if raises(runs) and (not lowers(runs) or _change(runs, "gold_greedy").mean >= -KEEP)
    ]
    lines.append(
        f"raises pass@1 and keeps greedy (no drop beyond two standard errors, or under {100 * KEEP:.0f} points): "
        + (", ".join(keeps) if keeps else "none of these arms")
    )
    return lines


def length_report(arms: dict[str, list[dict]]) -> list[str]:
    lines, growth = [], {}
    for arm, runs in arms.items():
        width = _edge_width(runs)
        early = [_early(r, "completions/wrong_mean_length", width) for r in runs]
        late = [_late(r, "completions/wrong_mean_length", width) for r in runs]
        right = mean_sd([_late(r, "completions/correct_mean_length", width) for r in runs])
        growth[arm] = [b - a for a, b in zip(early, late, strict=True) if a is not None and b is not None]
        first, last = _edge_labels(width)
        lines.append(
            f"{arm}: wrong answers {_fmt(mean_sd(early), 1, ' tokens')} ({first}) -> "
            f"{_fmt(mean_sd(late), 1, ' tokens')} ({last}); right answers in the {last} "
            f"{_fmt(right, 1, ' tokens')}"
        )
    (first, a), (second, b) = list(growth.items())[:2]
    if len(a) > 1 and len(b) > 1:
        spread_a, spread_b = mean_sd(a), mean_sd(b)
        diff = spread_a.mean - spread_b.mean
        se = (spread_a.standard_error**2 + spread_b.standard_error**2) ** 0.5
        verdict = "beyond" if abs(diff) > 2 * se else "within"
        lines.append(
            f"reading: wrong answers grew {diff:+.2f} ± {se:.2f} tokens more under {first} than under {second}, "
            f"{verdict} two standard errors"
        )
    return lines


def self_check_report(arms: dict[str, list[dict]]) -> list[str]:
    lines = []
    for arm, runs in arms.items():
        width = _edge_width(runs)
        first, last = _edge_labels(width)
        early = [_early(r, "selfcheck/rate", width) for r in runs]
        late = [_late(r, "selfcheck/rate", width) for r in runs]
        checked = mean_sd([_late(r, "selfcheck/accuracy_checked", width) for r in runs])
        unchecked = mean_sd([_late(r, "selfcheck/accuracy_unchecked", width) for r in runs])
        base_pays = [_difference(_early(r, "selfcheck/accuracy_checked", width),
                                 _early(r, "selfcheck/accuracy_unchecked", width)) for r in runs]  # fmt: skip
        change = mean_sd(b - a for a, b in zip(early, late, strict=True) if a is not None and b is not None)
        shift = change.mean if change.mean is not None else float("nan")
        margin = _two_se(change)
        verdict = "rose" if shift - margin > 0 else "fell" if shift + margin < 0 else "did not move beyond noise"
        curves = [r["card"]["curves"] for r in runs if r["card"]["curves"].get("selfcheck/rate")]
        steps = curves[0]["step"] if curves else []
        mean = [statistics.fmean(c["selfcheck/rate"][i] for c in curves) for i in range(len(steps))]
        peak = max(range(len(mean)), key=mean.__getitem__) if mean else None
        lines.append(
            f"{arm}: completions that check a step {_fmt(mean_sd(early))} ({first}) -> {_fmt(mean_sd(late))} "
            f"({last}), {verdict}"
            + (f"; the mean over seeds peaks at {100 * mean[peak]:.1f}% at step {steps[peak]}" if mean else "")
            + f"; training accuracy in the {last} with a check {_fmt(checked)}, without {_fmt(unchecked)}"
            + f"; at the base ({first}) checked minus unchecked accuracy "
            + _fmt(mean_sd(base_pays), unit=" points", signed=True)
            + f" ({_pays(mean_sd(base_pays))})"
        )
    return [*lines, *(accuracy_line(arm, runs) for arm, runs in arms.items())]


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _pays(spread: Spread) -> str:
    """Whether checking pays: checked accuracy above unchecked beyond two standard errors."""
    if spread.mean is None:
        return "not measured"
    if spread.mean - _two_se(spread) > 0:
        return "checks pay"
    return "checks cost" if spread.mean + _two_se(spread) < 0 else "no difference beyond two standard errors"


EDGE_STEPS = 10
"""Steps in each of the early and late windows a reading compares; runs shorter than twice that
get windows of half their length, so that the two never share a step (and a change is never 0 by
construction)."""


def _edge_width(runs: list[dict]) -> int:
    steps = min((len(r["card"]["curves"].get("step", [])) for r in runs), default=0)
    return min(EDGE_STEPS, steps // 2)


def _edge_labels(width: int) -> tuple[str, str]:
    """How the early and late windows of `width` steps read: ("steps 1-10", "last 10 steps")."""
    if width == 1:
        return "step 1", "last step"
    return f"steps 1-{width}", f"last {width} steps"


def _early(run: dict, key: str, width: int) -> float | None:
    """The mean of `key` over the run's first `width` steps (None without a value there)."""
    return _window(run, key, 0, width)


def _late(run: dict, key: str, width: int) -> float | None:
    """The mean of `key` over the run's last `width` steps (None without a value there)."""
    return _window(run, key, -width, None) if width else None


def _window(run: dict, key: str, start: int, stop: int | None) -> float | None:
    xs = [x for x in run["card"]["curves"].get(key, [])[start:stop] if x is not None]
    return statistics.fmean(xs) if xs else None
