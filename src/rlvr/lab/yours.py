"""Your runs on the lab's first page: an overlay on the shipped atlas, shown only when asked for.

A run directory under the lab's folder is placed on a knob by its configuration (``Placer``): a run
whose configuration is an atlas setting (seed, length and evaluation size aside) is a run of that
setting's value, and a run that changes only one knob's fields from the atlas default is a new
value of that knob. Your runs are never averaged with the atlas's, and never with each other across
lengths: a group holds finished runs of one value, one length (``train.steps``) and one held-out
evaluation size, so a window such as "the last 10 steps" is the same steps in each of its runs. An
unfinished run (no summary.json) is a row of its own that says how far it got. Every row is named
by what it is: "yours: grpo, lr 5e-4, 100 steps, seeds 0,1".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from rlvr.config import RunConfig, load_config
from rlvr.errors import UserError
from rlvr.lab.effects import LABELS, Value, memory_fields, readings, row, sort_values, value_entry
from rlvr.rundir import metrics_path, read_config, run_dirs
from rlvr.studies.atlas import KNOBS, Setting, preset_path, run_card

KNOB_FIELDS: dict[str, tuple[str, ...]] = {
    "fidelity": ("reward.fidelity", "reward.false_positive_rate", "reward.false_negative_rate", "reward.random_rate"),
    "group_size": ("rollout.group_size",),
    "beta": ("algo.beta",),
    "lr": ("optim.lr",),
    "max_staleness": ("rollout.max_staleness",),
    "algorithm": ("algo.", "ppo."),
}
"""The config fields (or section prefixes) each knob changes; a run that changes fields of one knob
only, away from the atlas default, is a value of that knob."""

INCIDENTAL = (
    "train.seed", "train.steps", "train.threads", "train.on_alarm", "train.max_restarts", "rollout.sampler_threads",
    "train.eval_every", "train.eval_samples", "train.save_every", "train.tensorboard", "train.memory_metrics", "train.trackers", "train.wandb_project", "train.wandb_mode",
    "task.num_eval", "model.device", "model.forward", "reward.noise_seed", "reward.hacking_sample",
    "reward.hacking_warn", "reward.backend", "reward.ray_address",
)  # fmt: skip
"""Fields that do not make a different setting: seeds, length, how much is evaluated, logging, devices;
and every field of the health section (alarm thresholds)."""


# ---------------------------------------------------------------------------------------------
# Which setting a run belongs to


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    flat = {}
    for section, values in config.items():
        if section == "health":
            continue
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
    for knob in ("fidelity", "group_size", "beta", "lr", "max_staleness"):
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
    if knob == "max_staleness":
        return str(flat["rollout.max_staleness"])
    if knob == "fidelity":
        name = flat["reward.fidelity"]
        if name == "random":
            return f"random rate={flat['reward.random_rate']:g}"
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
            differs = [f"{key}={flat.get(key)}" for key in sorted(diff) if key != "algo.algorithm"]
            # nothing else differs: the algorithm set on the default config, not the atlas's preset
            label += f" ({', '.join(differs) or f'algo.algorithm={label} on the default config'})"
        return [(knob, label)]


# ---------------------------------------------------------------------------------------------
# Your runs, grouped and named

SHORT = {"fidelity": "fidelity", "group_size": "G", "beta": "β", "lr": "lr", "max_staleness": "max_staleness"}
"""How a row of yours names the knob it is a value of (the algorithm knob's value names itself)."""


def _your_runs(root: Path) -> Iterator[tuple[Path, dict[str, Any], dict[str, Any]]]:
    """(run directory, its config.yaml, its run card) for every run under root that logged a step."""
    for run_dir in run_dirs(root) if root.is_dir() else ():
        try:
            config = read_config(run_dir)
        except (OSError, yaml.YAMLError):
            continue
        if not config or not isinstance(config, dict) or not metrics_path(run_dir).is_file():
            continue
        card = run_card(run_dir)
        if card is None or not card["curves"]["step"]:
            continue  # started, no step logged yet: nothing to draw
        yield run_dir, config, {**card, "dir": str(run_dir)}


def _held_out(config: dict[str, Any]) -> tuple[Any, Any]:
    """The held-out evaluation's size: (queries, samples per query)."""
    return (config.get("task") or {}).get("num_eval"), (config.get("train") or {}).get("eval_samples")


def progress(card: dict[str, Any]) -> str:
    """How far an unfinished run got: the last logged step of its planned ones."""
    return f"running/interrupted at step {card['curves']['step'][-1]} of {card['steps']}"


def _what(knob: str, label: str, config: dict[str, Any]) -> str:
    if knob == "algorithm":
        return label
    return f"{memory_fields(config)['algorithm']}, {SHORT[knob]} {label}"


def _seeds(cards: list[dict[str, Any]]) -> str:
    seeds = sorted({card["seed"] for card in cards if card.get("seed") is not None})
    return ("seed " if len(seeds) == 1 else "seeds ") + (",".join(map(str, seeds)) or "?")


def your_values(root: str | Path, placer: Placer | None = None) -> tuple[list[Value], list[str]]:
    """Your runs under root as the page's rows, each named, and the run directories no knob of the
    page holds (they change several knobs, or fields no knob owns)."""
    placer = placer or Placer()
    groups: dict[tuple, tuple[Value, str]] = {}
    alone: list[Value] = []
    elsewhere: list[str] = []
    for run_dir, config, card in _your_runs(Path(root)):
        places = placer.place(config)
        if not places:
            elsewhere.append(str(run_dir))
        for knob, label in places:
            what = _what(knob, label, config)
            if not card["finished"]:
                cohort = ("unfinished", card["dir"])
                name = f"yours: {what}, {_seeds([card])}, {progress(card)}"
                alone.append(Value(knob, label, "yours", [card], memory_fields(config), name, cohort, progress(card)))
                continue
            key = (knob, label, card["steps"], _held_out(config))
            value, _ = groups.setdefault(key, (Value(knob, label, "yours", [], memory_fields(config)), what))
            value.cards.append(card)
    for (knob, label, steps, held_out), (value, what) in groups.items():
        twins = [k for k in groups if k[:3] == (knob, label, steps)]  # one length, several held-out sizes
        size = f", held-out {held_out[0]}×{held_out[1]}" if len(twins) > 1 else ""
        value.name = f"yours: {what}, {steps} steps, {_seeds(value.cards)}{size}"
        value.cohort = (steps, held_out)
    return [value for value, _ in groups.values()] + alone, elsewhere


def _cohort_name(cohort: tuple, finished: list[Value]) -> str:
    """ "your 3-step runs", naming the held-out size too where runs of that length have several."""
    steps, (queries, samples) = cohort
    sizes = {v.cohort[1] for v in finished if v.cohort[0] == steps}
    return f"your {steps}-step runs" + (f" (held-out {queries}×{samples})" if len(sizes) > 1 else "")


def overlay(knob: str, values: list[Value], models: list[str]) -> dict[str, Any]:
    """The rows and readings of your runs on one knob: finished groups by length, then each
    unfinished run; readings compare only values whose runs have the same length and held-out size."""
    finished = [v for v in sort_values(knob, values) if v.unfinished is None]
    cohorts: dict[tuple, list[Value]] = {}
    for value in sorted(finished, key=lambda v: (v.cohort[0] or 0, tuple(x or 0 for x in v.cohort[1]))):
        cohorts.setdefault(value.cohort, []).append(value)
    ordered = [v for members in cohorts.values() for v in members] + [v for v in values if v.unfinished]
    rows = [row(v) for v in ordered]
    row_of = {id(v): r for v, r in zip(ordered, rows, strict=True)}
    lines = []
    for cohort, members in cohorts.items():
        if len(members) > 1:
            prefix = _cohort_name(cohort, finished)
            lines += [f"{prefix}: {line}" for line in readings(knob, members, [row_of[id(v)] for v in members])]
    if ordered and not lines:
        lines = [f"Your runs: each is compared only with runs of yours of the same length; no two values of "
                 f"{LABELS[knob].split(' (')[0]} have such runs yet."]  # fmt: skip
    return {"values": [value_entry(v, r, models) for v, r in zip(ordered, rows, strict=True)], "readings": lines}
