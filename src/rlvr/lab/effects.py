"""The lab's first page: each knob's values side by side, from the atlas (`rlvr atlas`) of real runs.

Where the runs come from: the atlas the package ships (``SHIPPED``: a file `rlvr atlas` wrote,
labelled with the machine, date, rlvr version and command that made it; only the small results, no
model weights). Your own runs are an overlay, placed, grouped and named by lab/yours.py; nothing of
yours enters a shipped value's numbers.

What a value shows (mean over its runs, spread over seeds):
- curves per training step: reward, KL, entropy, gradient noise scale, and held-out pass@1 at each
  evaluation;
- a table row: held-out pass@1 (gold verifier) before and after training, greedy accuracy, peak
  memory by component as measured on the tiny model, the `rlvr memory` estimate for a real model,
  gradient variance and noise scale, the reward-hacking rate (training verifier passes, gold fails),
  wall time;
- one-line readings made from those numbers.

Nothing here trains or evaluates: every number is read from a run card (studies/atlas.run_card) or
computed by the memory estimator.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.algos import ALGORITHMS
from rlvr.diagnostics.memory_estimate import TrainingSetup, estimate
from rlvr.diagnostics.memory_model import load_model_spec
from rlvr.errors import UserError
from rlvr.eval.stats import finite, mean_sd
from rlvr.studies.atlas import SCHEMA

SHIPPED = Path(__file__).with_name("atlas") / "atlas.json"
"""The atlas the package ships (made by the command recorded inside it)."""

DEFAULT_MODEL = "Qwen2.5-7B"

LABELS = {"fidelity": "verifier fidelity", "algorithm": "algorithm", "group_size": "G (completions per query)",
          "beta": "β (KL weight)", "lr": "learning rate",
          "max_staleness": "max_staleness (asynchronous rollouts, each run timed alone)"}  # fmt: skip
ORDERED = {"group_size", "beta", "lr", "max_staleness"}
"""Knobs whose values have an order: their readings go from the smallest value to the largest."""

CURVES = {"reward": "reward (0-1)", "kl": "KL to reference (nats/token)", "entropy": "entropy (nats/token)",
          "grad/noise_scale": "gradient noise scale (completions)"}  # fmt: skip
"""The per-step curves drawn for every knob, with their units (docs/metrics.md)."""

TAIL = 10
"""Readings of per-step quantities (KL, entropy) average the last TAIL logged steps of each run."""
MATCHED = 5
"""Gradient variance and noise scale are compared over steps 1..MATCHED of every run: the same steps,
before the runs' trajectories part (a median over whole runs compares different points of
different trajectories)."""


class AtlasFileError(UserError):
    """An atlas file that is missing or not an `rlvr atlas` output."""


def load_atlas(path: str | Path = SHIPPED) -> dict[str, Any]:
    """An atlas.json written by `rlvr atlas` (schema rlvr.atlas/1, with its run cards)."""
    path = Path(path)
    try:
        atlas = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise AtlasFileError(
            f"{path}: cannot read the atlas ({error}); rebuild it with `rlvr atlas --out DIR`"
        ) from None
    if not isinstance(atlas, dict) or atlas.get("schema") != SCHEMA or "runs" not in atlas:
        raise AtlasFileError(f"{path}: not an atlas file of schema {SCHEMA}; rebuild it with `rlvr atlas --out DIR`")
    return atlas


@dataclass
class Value:
    """One value of one knob and its runs' cards."""

    knob: str
    label: str
    source: str  # "shipped" or "yours"
    cards: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    """The fields the memory estimate reads: algorithm, group_size, beta (memory_fields)."""
    name: str = ""
    """What the legend and the table call it: the value itself for the atlas, "yours: ..." for yours."""
    cohort: tuple = ()
    """Runs that may be compared with these: the same length and held-out size (yours only)."""
    unfinished: str | None = None
    """For a run of yours without summary.json: how far it got ("running/interrupted at step N of M")."""

    def __post_init__(self) -> None:
        self.name = self.name or self.label


def memory_fields(config: dict[str, Any]) -> dict[str, Any]:
    """What the memory estimate reads from a run's configuration (a config.yaml's dict)."""
    algo, rollout = config.get("algo") or {}, config.get("rollout") or {}
    return {"algorithm": algo.get("algorithm", "grpo"), "group_size": rollout.get("group_size", 8),
            "beta": algo.get("beta", 0.04)}  # fmt: skip


def shipped_values(atlas: dict[str, Any]) -> dict[str, list[Value]]:
    """The atlas's own values per knob, in its order, each with its runs' cards."""
    out: dict[str, list[Value]] = {}
    for knob, entries in atlas["knobs"].items():
        out[knob] = []
        for entry in entries:
            config = entry["resolved"]  # the configuration the shipped runs were made with
            cards = [{**atlas["runs"][run], "dir": run} for run in entry["runs"] if atlas["runs"].get(run)]
            out[knob].append(Value(knob, entry["value"], "shipped", cards, memory_fields(config)))
    return out


def _numeric(label: str) -> float | None:
    try:
        return float(label)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# What one value shows


def spread(values: list[Any]) -> dict[str, float | int | None]:
    """Mean, sample standard deviation (None for one value) and count over seeds (eval/stats.py)."""
    return dataclasses.asdict(mean_sd(values))


def _band(series: list[tuple[list[int], list[Any]]]) -> dict[str, list]:
    """Mean, min and max over runs at each step any run logged (runs may have different lengths)."""
    at: dict[int, list[float]] = {}
    for steps, values in series:
        for step, value in zip(steps, values, strict=False):  # a metric the run did not log: no values
            if isinstance(value, (int, float)) and math.isfinite(value):
                at.setdefault(step, []).append(float(value))
    steps = sorted(at)
    return {
        "step": steps,
        "mean": [statistics.fmean(at[s]) for s in steps],
        "lo": [min(at[s]) for s in steps],
        "hi": [max(at[s]) for s in steps],
    }


def _median_matched(card: dict[str, Any], key: str) -> float | None:
    """The median of `key` over steps 1..MATCHED of the run."""
    curves = card["curves"]
    xs = finite([x for step, x in zip(curves.get("step", []), curves.get(key, []), strict=False) if step <= MATCHED])
    return statistics.median(xs) if xs else None


def _tail_mean(card: dict[str, Any], key: str) -> float | None:
    xs = finite(card["curves"].get(key, [])[-TAIL:])
    return statistics.fmean(xs) if xs else None


def _eval_at(card: dict[str, Any], key: str, which: int) -> float | None:
    """A held-out number before training (which=0) or after it (which=-1); None if not evaluated."""
    evals = card["evals"]
    if not evals["step"] or key not in evals or (which == -1 and not card.get("finished")):
        return None  # not evaluated, or an atlas from before this field was recorded
    return evals[key][which]


def _false_pass(card: dict[str, Any], which: int) -> float | None:
    """The training verifier's pass rate on the held-out answers gold fails: hacking rate / gold
    fail rate, of the base model (which=0: the verifier's own false passes) or the trained one."""
    hacking, gold = _eval_at(card, "hacking_rate", which), _eval_at(card, "gold_pass@1", which)
    if hacking is None or gold is None or gold >= 1.0:
        return None
    return min(1.0, hacking / (1.0 - gold))


def _gain(card: dict[str, Any]) -> float | None:
    base, final = _eval_at(card, "gold_pass@1", 0), _eval_at(card, "gold_pass@1", -1)
    return None if base is None or final is None else final - base


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def row(value: Value) -> dict[str, Any]:
    """The table row of one value: each cell a spread over its runs (fractions 0-1, bytes, seconds)."""
    cards = value.cards
    memory_keys = sorted({key for card in cards for key in card["memory"]})
    return {
        "runs": len(cards),
        "seeds": sorted({card["seed"] for card in cards if card.get("seed") is not None}),
        "steps": sorted({card["steps"] for card in cards if card.get("steps") is not None}),
        "finished": sum(bool(card.get("finished")) for card in cards),
        "pass@1 base": spread([_eval_at(c, "gold_pass@1", 0) for c in cards]),
        "pass@1 final": spread([_eval_at(c, "gold_pass@1", -1) for c in cards]),
        "pass@1 gain": spread([_gain(c) for c in cards]),
        "greedy base": spread([_eval_at(c, "gold_greedy", 0) for c in cards]),
        "greedy final": spread([_eval_at(c, "gold_greedy", -1) for c in cards]),
        "train pass@1 final": spread([_eval_at(c, "pass@1", -1) for c in cards]),
        "hacking final": spread([_eval_at(c, "hacking_rate", -1) for c in cards]),
        "false pass base": spread([_false_pass(c, 0) for c in cards]),
        "false pass final": spread([_false_pass(c, -1) for c in cards]),
        "exploitation": spread([_difference(_false_pass(c, -1), _false_pass(c, 0)) for c in cards]),
        "memory": {key: spread([c["memory"].get(key) for c in cards]) for key in memory_keys},
        "grad variance": spread([_median_matched(c, "grad/variance") for c in cards]),
        "noise scale": spread([_median_matched(c, "grad/noise_scale") for c in cards]),
        "kl tail": spread([_tail_mean(c, "kl") for c in cards]),
        "entropy tail": spread([_tail_mean(c, "entropy") for c in cards]),
        "wall s": spread([c.get("wall_s") for c in cards]),
    }


def estimates(value: Value, models: list[str]) -> dict[str, dict[str, float]]:
    """`rlvr memory`'s per-GPU estimate (bytes by component) for each model, with this value's
    algorithm, G and β and `rlvr memory`'s defaults otherwise (B=32, 256+1024 tokens, bf16 mixed,
    AdamW). rlvr trains DPO online, so its estimate is online DPO with every pair the batch can give
    (B x G/2). Fidelity and learning rate change no tensor: their values estimate alike."""
    algorithm, group, beta = value.config["algorithm"], int(value.config["group_size"]), float(value.config["beta"])
    pairwise = ALGORITHMS[algorithm].update == "preference"
    setup = TrainingSetup(algorithm=algorithm, group=group, beta=beta,
                          online_pairs=32 * (group // 2) if pairwise else 0)  # fmt: skip
    out = {}
    for model in models:
        result = estimate(load_model_spec(model), setup)
        out[model] = {name: c.bytes for name, c in result.components.items()}
    return out


def curves(value: Value) -> dict[str, dict[str, list]]:
    """Mean and min..max over runs, per step: the CURVES and held-out pass@1 (gold) per evaluation."""
    out = {key: _band([(c["curves"]["step"], c["curves"].get(key, [])) for c in value.cards]) for key in CURVES}
    out["heldout"] = _band([(c["evals"]["step"], c["evals"]["gold_pass@1"]) for c in value.cards])
    return out


# ---------------------------------------------------------------------------------------------
# Readings: one line per effect, from the rows


def _points(stat: dict[str, Any]) -> str:
    mean, sd = stat["mean"], stat["sd"]
    if mean is None:
        return "n/a"
    return f"{100 * mean:+.1f}" + ("" if sd is None else f" ± {100 * sd:.1f}") + " points"


def _pct(stat: dict[str, Any]) -> str:
    return "n/a" if stat["mean"] is None else f"{100 * stat['mean']:.1f}%"


def _num(stat: dict[str, Any], digits: int = 3) -> str:
    mean = stat["mean"]
    return "n/a" if mean is None else f"{mean:.{digits}g}"


def _mib(stat: dict[str, Any]) -> str:
    return "n/a" if stat["mean"] is None else f"{stat['mean'] / 2**20:.1f} MiB"


def _secs(stat: dict[str, Any]) -> str:
    return "n/a" if stat["mean"] is None else f"{stat['mean']:.0f} s"


def _direction(first: float | None, last: float | None) -> str:
    if first is None or last is None:
        return "goes"
    if abs(last - first) <= 0.05 * max(abs(first), abs(last), 1e-12):
        return "stays about level"
    return "rises" if last > first else "falls"


def readings(knob: str, values: list[Value], rows: list[dict[str, Any]]) -> list[str]:
    """One line per effect of this knob, each made from the table's numbers."""
    if len(values) < 2:
        return [f"Only one value of {LABELS[knob]} has runs: nothing to compare yet."]
    name = LABELS[knob].split(" (")[0]
    steps = max((s for r in rows for s in r["steps"]), default=0)
    tail = f"steps {max(1, steps - TAIL + 1)}-{steps}" if steps else "the last steps"

    def trend(key: str, what: str, fmt) -> str:
        measured = [(v, r[key]) for v, r in zip(values, rows, strict=True) if r[key]["mean"] is not None]
        if len(measured) < 2:
            return f"{what}: measured for {len(measured)} value(s) only"
        (first, a), (last, b) = measured[0], measured[-1]
        missing = [v.label for v, r in zip(values, rows, strict=True) if r[key]["mean"] is None]
        note = f" (not measured at {name} {', '.join(missing)})" if missing else ""
        return (
            f"{name} {first.label} → {last.label}: {what} {_direction(a['mean'], b['mean'])}, {fmt(a)} → {fmt(b)}{note}"
        )

    def extremes(key: str, what: str, fmt) -> str:
        ranked = sorted((r[key]["mean"], v.label, r[key]) for v, r in zip(values, rows, strict=True)
                        if r[key]["mean"] is not None)  # fmt: skip
        if len(ranked) < 2:  # one value measured: nothing to rank
            return f"{what}: measured for {len(ranked)} value(s) only"
        (_, low, low_stat), (_, high, high_stat) = ranked[0], ranked[-1]
        return f"{what}: highest with {high} ({fmt(high_stat)}), lowest with {low} ({fmt(low_stat)})"

    form = trend if knob in ORDERED else extremes
    matched = f"median over steps 1-{min(MATCHED, steps) or MATCHED}, the same steps of every run"
    lines = [
        form("pass@1 gain", "held-out pass@1 gain (gold, final - base)", _points),
        form("kl tail", f"KL to the reference (mean over {tail})", lambda s: _num(s)),
        form("noise scale", f"gradient noise scale, in completions ({matched})", lambda s: _num(s)),
    ]
    if knob == "algorithm":  # a variance carries its loss's scale; the noise scale, a ratio, does not
        lines.append("gradient variance is not ranked across algorithms: their losses are scaled differently "
                     "(sequence mean, token mean, sequence sum, preference pairs); the noise scale tr(Σ)/|G|², "
                     "a ratio in which the scale cancels, is compared instead")  # fmt: skip
    else:
        lines.append(form("grad variance", f"gradient variance ({matched})", lambda s: _num(s)))
    if knob == "group_size":
        lines.append(_noise_per_prompt(values, rows, matched))
    lines += _exploitation(values, rows)
    peaks = [r["memory"].get("peak_total", {"mean": None}) for r in rows]
    if len({round(p["mean"] or 0, -4) for p in peaks}) > 1:
        lines.append(form_memory(values, peaks, name, knob))
    lines.append(form("wall s", "wall time per run", _secs))
    lines += _same_numbers(values, rows)
    return lines


def _noise_per_prompt(values: list[Value], rows: list[dict[str, Any]], matched: str) -> str:
    """The G knob's noise scale in prompts (completions / G), the unit of `rlvr grad-variance`'s
    controlled sweep (docs/results.md), so the two read alike."""
    measured = [(v.label, r["noise scale"]["mean"] / int(v.label)) for v, r in zip(values, rows, strict=True)
                if r["noise scale"]["mean"] is not None and v.label.isdigit()]  # fmt: skip
    if len(measured) < 2:
        return "gradient noise scale in prompts: measured for fewer than two values of G"
    (first, a), (last, b) = measured[0], measured[-1]
    return (f"G {first} → {last}: gradient noise scale in prompts (completions / G, assuming a group's completions "
            f"independent; {matched}) {_direction(a, b)}, {a:.3g} → {b:.3g}; the controlled sweep at equal prompt "
            "count (rlvr grad-variance, docs/results.md) measures it directly")  # fmt: skip


def _exploitation(values: list[Value], rows: list[dict[str, Any]]) -> list[str]:
    """Per weakened verifier: how often it passes wrong answers of the base (its own false-pass
    rate) and of the trained model; only a rise is the policy exploiting it."""
    lines = []
    for value, r in zip(values, rows, strict=True):
        base, final, rise = r["false pass base"], r["false pass final"], r["exploitation"]
        if base["mean"] is None or final["mean"] is None or not (base["mean"] or final["mean"]):
            continue
        two_se = 2 * rise["sd"] / math.sqrt(rise["n"]) if rise["sd"] is not None else 0.0
        verdict = (
            "a rise beyond two standard errors: the policy found wrong answers it passes"
            if rise["mean"] - two_se > 1e-9
            else "no rise beyond two standard errors: what it passes is its own error, not exploitation"
        )
        lines.append(
            f"{value.label}: the training verifier passes {_pct(base)} of the base's wrong held-out answers "
            f"(its own false passes) and {_pct(final)} of the trained model's ({_points(rise)}): {verdict}"
        )
    return lines


SAME = ("pass@1 final", "greedy final", "kl tail", "entropy tail", "noise scale")


def _same_numbers(values: list[Value], rows: list[dict[str, Any]]) -> list[str]:
    """Values whose runs measured the same numbers to 3 significant digits: two names of one update."""

    def key(r: dict[str, Any]) -> tuple:
        return tuple(None if r[k]["mean"] is None else float(f"{r[k]['mean']:.3g}") for k in SAME)

    lines, seen = [], {}
    for value, r in zip(values, rows, strict=True):
        if all(x is None for x in key(r)):
            continue
        if key(r) in seen:
            lines.append(f"{value.label} measures the same as {seen[key(r)]} to 3 digits on held-out pass@1, "
                         "greedy, KL, entropy and noise scale: the same update under another name here")  # fmt: skip
        else:
            seen[key(r)] = value.label
    return lines


def form_memory(values: list[Value], peaks: list[dict[str, Any]], name: str, knob: str) -> str:
    """The measured peak (tiny model) from the first value to the last, or its highest and lowest."""
    if knob in ORDERED:
        return (f"{name} {values[0].label} → {values[-1].label}: measured peak memory (tiny model) "
                f"{_mib(peaks[0])} → {_mib(peaks[-1])}")  # fmt: skip
    ranked = sorted((p["mean"], v.label, p) for v, p in zip(values, peaks, strict=True) if p["mean"] is not None)
    return (f"measured peak memory (tiny model): highest with {ranked[-1][1]} ({_mib(ranked[-1][2])}), "
            f"lowest with {ranked[0][1]} ({_mib(ranked[0][2])})")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The page's data


def sort_values(knob: str, values: list[Value]) -> list[Value]:
    """An ordered knob's values from the smallest to the largest; other knobs' as they come."""
    if knob not in ORDERED:
        return values  # the atlas's order
    orders = [_numeric(v.label) for v in values]
    ranked = sorted(zip(orders, range(len(values)), strict=True), key=lambda p: (p[0] is None, p[0] or 0.0, p[1]))
    return [values[i] for _, i in ranked]


def value_entry(value: Value, value_row: dict[str, Any], models: list[str]) -> dict[str, Any]:
    """What the page draws of one value: its name, row, curves and memory estimates."""
    return {"value": value.label, "name": value.name, "source": value.source, "unfinished": value.unfinished,
            "row": value_row, "curves": curves(value), "estimate": estimates(value, models),
            "runs": [c["dir"] for c in value.cards]}  # fmt: skip


def view(knob: str, values: list[Value], models: list[str]) -> dict[str, Any]:
    """The shipped atlas's rows and readings of one knob, as shipped."""
    values = [v for v in sort_values(knob, values) if v.cards]
    rows = [row(v) for v in values]
    return {
        "values": [value_entry(v, r, models) for v, r in zip(values, rows, strict=True)],
        "readings": readings(knob, values, rows),
    }
