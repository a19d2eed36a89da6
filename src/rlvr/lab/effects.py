"""The lab's first page: each knob's values side by side, from the atlas (`rlvr atlas`) of real runs.

Where the runs come from:
- the atlas the package ships (``SHIPPED``: a file `rlvr atlas` wrote, labelled with the machine,
  date, rlvr version and command that made it; only the small results, no model weights);
- every run directory under the lab's folder (made by `rlvr train`, `rlvr sweep`, `rlvr atlas` or
  the page itself). A run whose configuration is an atlas setting (seed, steps and evaluation size
  aside) joins that setting; a run that changes only one knob's fields from the atlas default is a
  new value of that knob. Where a setting has runs of yours, they replace the shipped ones; the
  page can switch back to the shipped atlas alone.

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
import datetime
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.algos import ALGORITHMS
from rlvr.config import RunConfig, load_config
from rlvr.diagnostics.memory_estimate import TrainingSetup, estimate
from rlvr.diagnostics.memory_model import load_model_spec, preset_names
from rlvr.errors import UserError
from rlvr.eval.stats import finite, mean_sd
from rlvr.rundir import metrics_path, read_config, run_dirs
from rlvr.studies.atlas import KNOBS, SCHEMA, Setting, preset_path, run_card

SHIPPED = Path(__file__).with_name("atlas") / "atlas.json"
"""The atlas the package ships (made by the command recorded inside it)."""

DEFAULT_MODEL = "Qwen2.5-7B"

LABELS = {"fidelity": "verifier fidelity", "algorithm": "algorithm", "group_size": "G (completions per query)",
          "beta": "β (KL weight)", "lr": "learning rate"}  # fmt: skip
ORDERED = {"group_size", "beta", "lr"}
"""Knobs whose values have an order: their readings go from the smallest value to the largest."""

KNOB_FIELDS: dict[str, tuple[str, ...]] = {
    "fidelity": ("reward.fidelity", "reward.false_positive_rate", "reward.false_negative_rate"),
    "group_size": ("rollout.group_size",),
    "beta": ("algo.beta",),
    "lr": ("optim.lr",),
    "algorithm": ("algo.", "ppo."),
}
"""The config fields (or section prefixes) each knob changes; a run that changes fields of one knob
only, away from the atlas default, is a value of that knob."""

INCIDENTAL = (
    "train.seed", "train.steps", "train.threads", "train.eval_every", "train.eval_samples", "train.save_every",
    "train.tensorboard", "train.memory_metrics", "train.trackers", "train.wandb_project", "train.wandb_mode",
    "task.num_eval", "model.device", "model.forward", "reward.noise_seed", "reward.hacking_sample",
    "reward.hacking_warn", "reward.backend", "reward.ray_address",
)  # fmt: skip
"""Fields that do not make a different setting: seeds, length, how much is evaluated, logging, devices."""

CURVES = {"reward": "reward (0-1)", "kl": "KL to reference (nats/token)", "entropy": "entropy (nats/token)",
          "grad/noise_scale": "gradient noise scale (completions)"}  # fmt: skip
"""The per-step curves drawn for every knob, with their units (docs/metrics.md)."""

TAIL = 10
"""Readings of per-step quantities (KL, entropy) average the last TAIL logged steps of each run."""


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


# ---------------------------------------------------------------------------------------------
# Which setting a run belongs to


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    flat = {}
    for section, values in config.items():
        for key, value in (values or {}).items() if isinstance(values, dict) else ():
            name = f"{section}.{key}"
            if name not in INCIDENTAL:
                flat[name] = value
    return flat


def _resolved(setting: Setting) -> dict[str, Any]:
    """A setting's configuration as its run's config.yaml holds it (the trainer writes it this way)."""
    cfg = load_config(preset_path(setting.config), list(setting.overrides))
    return _flatten(yaml.safe_load(yaml.safe_dump(cfg.to_dict(), sort_keys=False)))


def _owner(key: str) -> str | None:
    for knob in ("fidelity", "group_size", "beta", "lr"):
        if key in KNOB_FIELDS[knob]:
            return knob
    return "algorithm" if key.startswith(KNOB_FIELDS["algorithm"]) else None


def _label(knob: str, flat: dict[str, Any]) -> str:
    """The name of a new value of a knob, as a user would type it."""
    if knob == "group_size":
        return str(flat["rollout.group_size"])
    if knob == "beta":
        return f"{flat['algo.beta']:g}"
    if knob == "lr":
        return f"{flat['optim.lr']:g}"
    if knob == "fidelity":
        name = flat["reward.fidelity"]
        if name == "noisy":
            return f"noisy fp={flat['reward.false_positive_rate']:g} fn={flat['reward.false_negative_rate']:g}"
        return str(name)
    return str(flat["algo.algorithm"])


class Placer:
    """Places run directories on the atlas's knobs by comparing resolved configurations."""

    def __init__(self) -> None:
        self.settings = []
        for knob, values in KNOBS.items():
            for setting in values:
                try:
                    self.settings.append((knob, setting, _resolved(setting)))
                except UserError:
                    continue  # its preset is not installed (a wheel without configs/): nothing joins it
        self.default = next(flat for _, s, flat in self.settings if s.name == "default")
        self.defaults = _flatten(yaml.safe_load(yaml.safe_dump(RunConfig().to_dict(), sort_keys=False)))

    def place(self, config: dict[str, Any]) -> list[tuple[str, str]]:
        """The (knob, value) pairs a run's config.yaml belongs to: every knob listing its setting,
        or one knob it is a new value of, or none."""
        flat = self.defaults | _flatten(config)  # a run made before a field existed has that field's default
        same = [(knob, s.value) for knob, s, known in self.settings if known == flat]
        if same:
            return same
        diff = {key for key in self.default.keys() | flat.keys() if self.default.get(key) != flat.get(key)}
        owners = {_owner(key) for key in diff}
        if len(owners) != 1 or None in owners:
            return []  # changes several knobs, or fields no knob owns: not on this page
        (knob,) = owners
        if knob == "algorithm" and "algo.algorithm" not in diff:
            return []  # the default algorithm with other settings: not one of its values
        label = _label(knob, flat)
        known = {s.value for k, s, _ in self.settings if k == knob}
        if label in known:  # e.g. dapo with another epsilon_high: name what differs
            label += " (" + ", ".join(f"{key}={flat.get(key)}" for key in sorted(diff) if key != "algo.algorithm") + ")"
        return [(knob, label)]


@dataclass
class Value:
    """One value of one knob and its runs' cards."""

    knob: str
    label: str
    source: str  # "shipped" or "yours"
    cards: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    """The fields the memory estimate reads: algorithm, group_size, beta (memory_fields)."""


def user_values(root: str | Path, placer: Placer | None = None) -> dict[tuple[str, str], Value]:
    """Your runs under root, grouped by the (knob, value) they belong to."""
    root = Path(root)
    if not root.is_dir():
        return {}
    placer = placer or Placer()
    found: dict[tuple[str, str], Value] = {}
    for run_dir in run_dirs(root):
        try:
            config = read_config(run_dir)
        except (OSError, yaml.YAMLError):
            continue
        if not config or not isinstance(config, dict) or not metrics_path(run_dir).is_file():
            continue
        card = run_card(run_dir)
        if card is None or not card["curves"]["step"]:
            continue
        card["dir"] = str(run_dir)
        for knob, label in placer.place(config):
            value = found.setdefault((knob, label), Value(knob, label, "yours", [], memory_fields(config)))
            value.cards.append(card)
    return found


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


def _median_over_steps(card: dict[str, Any], key: str) -> float | None:
    xs = finite(card["curves"].get(key, []))
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


def _gain(card: dict[str, Any]) -> float | None:
    base, final = _eval_at(card, "gold_pass@1", 0), _eval_at(card, "gold_pass@1", -1)
    return None if base is None or final is None else final - base


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
        "memory": {key: spread([c["memory"].get(key) for c in cards]) for key in memory_keys},
        "grad variance": spread([_median_over_steps(c, "grad/variance") for c in cards]),
        "noise scale": spread([_median_over_steps(c, "grad/noise_scale") for c in cards]),
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
        if not ranked:
            return f"{what}: not measured"
        (_, low, low_stat), (_, high, high_stat) = ranked[0], ranked[-1]
        return f"{what}: highest with {high} ({fmt(high_stat)}), lowest with {low} ({fmt(low_stat)})"

    form = trend if knob in ORDERED else extremes
    lines = [
        form("pass@1 gain", "held-out pass@1 gain (gold, final - base)", _points),
        form("kl tail", f"KL to the reference (mean over {tail})", lambda s: _num(s)),
        form("noise scale", "gradient noise scale (median over steps)", lambda s: _num(s)),
        form("grad variance", "gradient variance (median over steps)", lambda s: _num(s)),
    ]
    if any((r["hacking final"]["mean"] or 0) > 0 for r in rows):
        lines.append(form("hacking final", "held-out hacking rate (training verifier passes, gold fails)", _pct))
    peaks = [r["memory"].get("peak_total", {"mean": None}) for r in rows]
    if len({round(p["mean"] or 0, -4) for p in peaks}) > 1:
        lines.append(form_memory(values, peaks, name, knob))
    lines.append(form("wall s", "wall time per run", _secs))
    lines += _same_numbers(values, rows)
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


def _sorted(knob: str, values: list[Value]) -> list[Value]:
    if knob not in ORDERED:
        return values  # the atlas's order, then yours as they were found
    orders = [_numeric(v.label) for v in values]
    ranked = sorted(zip(orders, range(len(values)), strict=True), key=lambda p: (p[0] is None, p[0] or 0.0, p[1]))
    return [values[i] for _, i in ranked]


def _variant(knob: str, values: list[Value], models: list[str]) -> dict[str, Any]:
    values = [v for v in _sorted(knob, values) if v.cards]
    rows = [row(v) for v in values]
    return {
        "values": [
            {"value": v.label, "source": v.source, "row": r, "curves": curves(v), "estimate": estimates(v, models),
             "runs": [c["dir"] for c in v.cards]}
            for v, r in zip(values, rows, strict=True)
        ],
        "readings": readings(knob, values, rows),
    }  # fmt: skip


def page_data(root: str | Path | None, atlas: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the first page draws: per knob, its values (shipped, or yours where you ran them)
    with rows, curves, estimates and readings; and, where your runs changed something, the shipped
    atlas alone as well."""
    atlas = atlas if atlas is not None else load_atlas()
    models = preset_names()
    shipped = shipped_values(atlas)
    yours = user_values(root) if root is not None else {}
    knobs = {}
    for knob in KNOBS:
        base = shipped.get(knob, [])
        mixed = [yours.get((knob, v.label), v) for v in base]
        mixed += [v for (k, label), v in yours.items() if k == knob and label not in {b.label for b in base}]
        changed = any(v.source == "yours" for v in mixed)
        knobs[knob] = {
            "label": LABELS[knob],
            "ordered": knob in ORDERED,
            "all": _variant(knob, mixed, models),
            "shipped": _variant(knob, base, models) if changed else None,
        }
    return {
        "made": atlas.get("made", {}),
        "command": atlas.get("command"),
        "steps": atlas.get("steps"),
        "seeds": atlas.get("seeds"),
        "build_wall_s": atlas.get("build_wall_s"),
        "shipped_runs": len(atlas.get("runs", {})),
        "your_runs": sorted({c["dir"] for v in yours.values() for c in v.cards}),
        "read_at": datetime.datetime.now().strftime("%H:%M:%S"),
        "root": None if root is None else str(root),
        "models": models,
        "default_model": DEFAULT_MODEL if DEFAULT_MODEL in models else models[0],
        "curves": CURVES,
        "knobs": knobs,
    }
