"""`rlvr atlas`: real runs around the default configuration, one knob at a time, several seeds each.

    rlvr atlas --out runs/atlas                          # every knob, seeds 0,1,2
    rlvr atlas --knobs beta,group_size --seeds 0 --out runs/atlas-small

For each knob of the lab (verifier fidelity, algorithm, G, β, learning rate) every value is one
setting: the atlas's base configuration (``BASE``: the default GRPO run on arith, with ``steps``
steps) with that one knob changed. Settings that are the same configuration (the default
value of each knob) are run once and shared. Every (setting, seed) is an ordinary run directory
``<out>/runs/<setting>-seed<N>``, trained by the runner (studies/runner.py) in a process of its own
with one torch thread, as many side by side as the machine has cores. A finished run (summary.json)
is kept; an interrupted one resumes from its checkpoint; so an interrupted atlas continues where it
stopped.
``<out>/atlas.json`` indexes the runs by knob and value, records the machine, date, rlvr version
and the command, and holds each run's small results (``run_card``: per-step curves, held-out
evaluations, peak memory by component, wall time), so that it stands alone without the run
directories. The package ships one such file, built by this command (src/rlvr/lab/atlas/).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import yaml

from rlvr.algos import ALGORITHMS
from rlvr.config import RunConfig, load_config
from rlvr.errors import UserError
from rlvr.eval.compare import peak_memory
from rlvr.rundir import metrics_path, read_config, read_metrics, read_summary
from rlvr.studies.runner import Job, RunSpec, run_many
from rlvr.studies.supervised import SupervisedSpec

PRESETS = Path(__file__).resolve().parents[3] / "configs"
"""The repository's presets (src/rlvr/studies/atlas.py -> configs/), so that the atlas runs from any folder."""


def preset_path(config: str | None) -> str | None:
    """A setting's preset as a path that works from any working directory."""
    if config is None:
        return None
    shipped = PRESETS / Path(config).name
    return str(shipped) if shipped.is_file() else config


BASE = ["train.threads=1", "task.num_eval=100", "train.eval_samples=4", "train.eval_every=20"]
"""Every atlas run: the default run with one torch thread, 100 held-out queries x 4 samples,
evaluated every 20 steps as well as before and after (and the atlas's `steps`, 60 by default)."""


@dataclass(frozen=True)
class Setting:
    """One value of one knob: a preset (or none: the default) and overrides on top of BASE."""

    knob: str
    value: str
    config: str | None = None
    overrides: tuple[str, ...] = ()
    supervised: str | None = None
    """A supervised control of that configuration instead of RL: "gold" or "rft" (studies/supervised.py)."""
    alone: bool = False
    """Trained one run at a time, not beside another, so that its wall clock means something."""

    @property
    def name(self) -> str:
        """The run-directory stem, the same for two settings that are the same configuration."""
        parts = [
            self.config.removeprefix("configs/").removesuffix(".yaml") if self.config else "default",
            *self.overrides,
            *([f"supervised-{self.supervised}"] if self.supervised else []),
        ]
        return "_".join(part.replace("/", "-") for part in parts)


def _fidelity() -> list[Setting]:
    noisy = ["reward.fidelity=noisy", "reward.false_negative_rate=0.0"]
    return [
        Setting("fidelity", "gold"),
        Setting("fidelity", "lenient (arith)", None, ("reward.fidelity=lenient",)),
        Setting("fidelity", "noisy 10%", None, (*noisy[:1], "reward.false_positive_rate=0.1", noisy[1])),
        Setting("fidelity", "noisy 30%", None, (*noisy[:1], "reward.false_positive_rate=0.3", noisy[1])),
        # a coin flip whatever the answer: the control every effect of the reward is measured against
        # (one coin per rollout, Shao et al.'s random reward; docs/hacking.md)
        Setting("fidelity", "random reward", None, ("reward.fidelity=random", "reward.random_rate=0.5")),
        Setting("fidelity", "gold (funcsynth)", "configs/funcsynth-gold.yaml"),
        Setting("fidelity", "visible_only (funcsynth)", "configs/funcsynth-visible.yaml"),
    ]  # fmt: skip


DEFAULT = RunConfig()
"""The default configuration, whose value of each numeric knob is the setting with no override."""

KNOBS = {
    "fidelity": _fidelity(),
    "algorithm": [Setting("algorithm", "grpo")]
    + [Setting("algorithm", name, f"configs/{name}.yaml")
       for name in ("dr_grpo", "dapo", "gspo", "rloo", "reinforce_pp", "ppo", "dpo")],
    "group_size": [Setting("group_size", str(g), None, () if g == DEFAULT.rollout.group_size else (f"rollout.group_size={g}",))
                   for g in (2, 4, 8, 16)],
    "beta": [Setting("beta", str(b), None, () if b == DEFAULT.algo.beta else (f"algo.beta={b}",)) for b in (0.0, 0.01, 0.04, 0.1, 0.4)],
    "lr": [Setting("lr", lr, None, () if float(lr) == DEFAULT.optim.lr else (f"optim.lr={lr}",))
           for lr in ("3e-5", "1e-4", "2e-4", "5e-4", "2e-3")],
    # timed one run at a time on the machine's 2 cores: the synchronous loop with 2 torch threads
    # against a sampler process of 1 thread beside a trainer of 1 (BASE's train.threads=1)
    "max_staleness": [Setting("max_staleness", "0", None, ("train.threads=2",), alone=True)]
    + [Setting("max_staleness", str(n), None, (f"rollout.max_staleness={n}",), alone=True) for n in (1, 2, 4)],
}  # fmt: skip
"""The knobs of the lab and their values; the default configuration's value of each has no override,
except max_staleness, whose runs are timed alone (its 0 is the default with the machine's 2 threads)."""


class AtlasError(UserError):
    """An unknown knob, bad seeds, or a run that failed."""


@dataclass(frozen=True)
class AtlasRun:
    setting: Setting
    seed: int
    steps: int

    @property
    def dir_name(self) -> str:
        return f"{self.setting.name}-seed{self.seed}"

    @property
    def overrides(self) -> list[str]:
        """The `--set` values of this run, on top of the setting's preset."""
        return [*BASE, f"train.steps={self.steps}", *self.setting.overrides, f"train.seed={self.seed}"]

    def spec(self, out: Path) -> RunSpec | SupervisedSpec:
        """This run for the runner: `<out>/runs/<dir_name>`, one torch thread, resumed from its checkpoint
        (a supervised control, a minute long, starts again)."""
        config, where = preset_path(self.setting.config), str(out / "runs" / self.dir_name)
        if self.setting.supervised:
            return SupervisedSpec(where, self.setting.supervised, config, tuple(self.overrides), threads=1)
        return RunSpec(out=where, config=config, overrides=tuple(self.overrides), threads=1)


def plan(knobs: list[str], seeds: list[int], steps: int) -> list[AtlasRun]:
    """The distinct runs of these knobs and seeds (a configuration shared by knobs runs once),
    each validated before the first one starts."""
    unknown = [k for k in knobs if k not in KNOBS]
    if unknown:
        raise AtlasError(f"--knobs: unknown knob {unknown[0]!r}; known: {', '.join(KNOBS)}")
    if steps < 2:
        raise AtlasError(f"--steps {steps}: an atlas run needs at least 2 steps to show a change")
    runs: dict[str, AtlasRun] = {}
    for knob in knobs:
        for setting in KNOBS[knob]:
            for seed in seeds:
                run = AtlasRun(setting, seed, steps)
                if run.dir_name not in runs:
                    load_config(preset_path(setting.config), run.overrides)  # a bad setting fails here, before any run
                    runs[run.dir_name] = run
    return list(runs.values())


def build_atlas(
    out: str | Path,
    *,
    knobs: list[str] | None = None,
    seeds: tuple[int, ...] = (0, 1, 2),
    steps: int = 60,
    jobs: int | None = None,
    progress: bool = True,
    command: str | None = None,
    reuse: str | Path | None = None,
) -> dict:
    """Run (or keep) every run of the atlas, `jobs` at a time, and write `<out>/atlas.json`.
    `reuse`: a previous atlas.json (the shipped one) whose run cards stand in for runs of an unchanged
    configuration (``reusable``); the index lists them under "reused" with the build that made them."""
    out = Path(out)
    knobs = list(knobs or KNOBS)
    runs = plan(knobs, list(seeds), steps)
    previous = _read_index(Path(reuse)) if reuse else {}
    kept = reusable(previous, runs, out)
    commit = checkout_commit()  # the code that trains the runs, whatever is committed while they run
    started = time.perf_counter()
    made = run_all(out, [run for run in runs if f"runs/{run.dir_name}" not in kept], jobs=jobs, progress=progress,
                   desc="atlas")  # fmt: skip
    index = _index(out, knobs, runs, seeds, steps, time.perf_counter() - started, made, command, commit)
    own = index["call_wall_s"] + _own_build_s(out / "atlas.json")
    index["build_wall_s"] = round(own, 1)  # every call's time here, summed over a resumed build
    if kept:  # and the time of the build that made the cards kept
        index["runs"].update(kept)
        index["reused"] = {"from": str(reuse), "made": previous.get("made"), "runs": sorted(kept),
                           "build_wall_s": previous.get("build_wall_s")}  # fmt: skip
        index["build_wall_s"] = round(own + float(previous.get("build_wall_s") or 0), 1)
    (out / "atlas.json").write_text(dump(index))
    return index


def _own_build_s(path: Path) -> float:
    """The seconds an earlier call of this build spent (0 for a new build or an unreadable index)."""
    try:
        index = json.loads(path.read_text())
        return float(index.get("build_wall_s") or 0) - float((index.get("reused") or {}).get("build_wall_s") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0


def dump(index: dict) -> str:
    """atlas.json's text: the index indented, then one line per run card (small, and diffable)."""
    head = json.dumps({key: value for key, value in index.items() if key != "runs"}, indent=2)
    cards = ",\n".join(f"    {json.dumps(name)}: {json.dumps(card)}" for name, card in index["runs"].items())
    return head[: -len("\n}")] + ',\n  "runs": {\n' + cards + "\n  }\n}\n"


def run_all(
    out: Path, runs: list[AtlasRun], *, jobs: int | None, progress: bool, desc: str, also: Sequence[Job] = ()
) -> int:
    """Make every run not finished yet (summary.json), `jobs` side by side (default one per core),
    with a progress bar, and return how many it made; raise AtlasError naming the first that failed.
    `also`: other jobs to run in the same batch (a study's base evaluations), after the RL runs and
    before the supervised controls, the shortest, which then fill the cores at the end."""
    specs = [run.spec(out) for run in runs if not run.setting.alone]
    short = [spec for spec in specs if isinstance(spec, SupervisedSpec)]
    ordered = [*(spec for spec in specs if not isinstance(spec, SupervisedSpec)), *also, *short]
    alone = [run.spec(out) for run in runs if run.setting.alone]
    batches = [run_many(alone, jobs=1, progress=progress, desc=f"{desc} (timed alone)")] if alone else []
    batches.append(run_many(ordered, jobs=jobs, progress=progress, desc=desc))
    failed = [job for batch in batches for job in batch.failed]
    if failed:
        raise AtlasError(
            f"{len(failed)} run(s) failed, first {Path(failed[0].out).name}: see {failed[0].log_path()} "
            "and run the same command again to retry them"
        )
    return sum(batch.made for batch in batches)


SCHEMA = "rlvr.atlas/1"


def _read_index(path: Path) -> dict:
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise AtlasError(f"--reuse {path}: not a readable atlas.json ({err})") from None
    if not isinstance(index, dict) or index.get("schema") != SCHEMA:
        raise AtlasError(f"--reuse {path}: not an atlas index (schema {SCHEMA!r})")
    return index


def reusable(previous: dict, runs: list[AtlasRun], out: Path) -> dict[str, dict]:
    """The cards of a previous index that can stand for runs of this plan not yet made under `out`:
    the same run name, seed and steps, finished, built on the same BASE, from a setting whose
    configuration resolves as it did then (a field added since at its default aside, as the lab
    places an old run). The code that trains a configuration may still have changed: the default
    run's metrics are pinned by a test (tests/engine/test_default_run_pinned.py)."""
    if previous.get("base") != BASE:
        return {}
    then = {run: value.get("resolved") for values in previous.get("knobs", {}).values() for value in values
            for run in value.get("runs", [])}  # fmt: skip
    defaults = json.loads(json.dumps(RunConfig().to_dict()))
    kept = {}
    for run in runs:
        key, card = f"runs/{run.dir_name}", previous.get("runs", {}).get(f"runs/{run.dir_name}")
        if not card or not card.get("finished") or (card.get("seed"), card.get("steps")) != (run.seed, run.steps):
            continue
        if (out / key / "summary.json").is_file() or run.setting.supervised:
            continue  # made here already, or not an atlas run
        now = json.loads(
            json.dumps(load_config(preset_path(run.setting.config), list(run.setting.overrides)).to_dict())
        )
        if isinstance(then.get(key), dict) and _same_config(then[key], now, defaults):
            kept[key] = card
    return kept


def _same_config(then: dict, now: dict, defaults: dict) -> bool:
    """Two resolved configurations are one, a field that `then` lacks counting at its default."""
    if any(key not in now.get(section, {}) for section, values in then.items() for key in values):
        return False  # a field since removed
    return all(
        then.get(section, {}).get(key, defaults.get(section, {}).get(key)) == value
        for section, values in now.items()
        for key, value in values.items()
    )


CURVES = ("reward", "accuracy", "kl", "entropy", "grad/noise_scale", "grad/variance", "hacking/rate",
          "completions/mean_length", "completions/correct_mean_length", "completions/wrong_mean_length",
          "selfcheck/rate", "selfcheck/redo_rate", "selfcheck/accuracy_checked", "selfcheck/accuracy_unchecked",
          "clip_ratio/region_mean", "format_rate", "time/step")  # fmt: skip
"""Per-step metrics a run card keeps (docs/metrics.md); a metric the run did not log is left out."""

EVALS = ("pass@1", "greedy", "gold_pass@1", "gold_greedy", "hacking_rate", "unscorable")
"""Held-out evaluation fields a run card keeps: before training (step 0), every `train.eval_every`
steps, and after the last step (summary.json's base and final)."""


def _small(value):
    """A number as the atlas stores it: 4 significant digits; None for a missing or non-finite one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value if isinstance(value, int) else float(f"{value:.4g}")


def run_card(run_dir: str | Path) -> dict | None:
    """The small results of one run directory (None: no metrics.jsonl yet, or unreadable).

    ``curves``: step and each of CURVES per logged training step; ``evals``: step and each of EVALS
    per held-out evaluation, step 0 being the base model; ``memory``: the peak of each `memory/*`
    metric (bytes); ``wall_s`` and ``steps`` from summary.json and config.yaml.
    """
    if not metrics_path(run_dir).is_file():
        return None
    try:
        rows = read_metrics(run_dir)  # without the last line of a run being written
        config = read_config(run_dir)
        summary = read_summary(run_dir)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    steps = [row for row in rows if "reward" in row and "step" in row]
    curves = {"step": [row["step"] for row in steps]}
    for key in CURVES:
        if any(key in row for row in steps):
            curves[key] = [_small(row.get(key)) for row in steps]
    evals: dict[str, list] = {"step": [], **{key: [] for key in EVALS}}
    gold_trained = (config.get("reward") or {}).get("fidelity", "gold") == "gold"

    def add_eval(step: int, result: dict) -> None:
        if gold_trained and result.get("gold_greedy") is None:
            result = {**result, "gold_greedy": result.get("greedy")}  # one verifier: the same number
        evals["step"].append(step)
        for key in EVALS:
            evals[key].append(_small(result.get(key)))

    if summary and "base" in summary:
        add_eval(0, summary["base"])
    for row in rows:
        if "eval/pass@1" in row and (summary is None or row["step"] != summary.get("steps")):
            add_eval(row["step"], {key: row.get(f"eval/{key}") for key in EVALS})
    if summary and "final" in summary:
        add_eval(summary.get("steps", steps[-1]["step"] if steps else 0), summary["final"])
    algo = config.get("algo") or {}
    name = algo.get("algorithm", "grpo")
    if "kl" in curves and name in ALGORITHMS and not ALGORITHMS[name].holds_reference(algo.get("beta") or 0):
        del curves["kl"]  # logged as 0 when no reference is held (docs/metrics.md): not a measurement
    train = config.get("train") or {}
    return {
        "seed": train.get("seed"),
        "steps": train.get("steps"),
        "finished": summary is not None,
        "wall_s": _small(summary.get("wall_s")) if summary else None,
        "curves": curves,
        "evals": evals,
        "memory": {key.removeprefix("memory/"): int(value) for key, value in peak_memory(rows).items()},
    }


def provenance(commit: str | None) -> dict:
    """What labels a result: date, rlvr version, the commit that made it, the machine."""
    return {"date": datetime.date.today().isoformat(), "rlvr": metadata.version("rlvr"), "commit": commit,
            "machine": f"{_cpu_name()}, {os.cpu_count()} cores"}  # fmt: skip


def checkout_commit() -> str | None:
    """The repository's commit when rlvr runs from a git checkout (None otherwise)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(PRESETS.parent), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except OSError:
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _cpu_name() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def _index(
    out: Path,
    knobs: list[str],
    runs: list[AtlasRun],
    seeds,
    steps: int,
    wall_s: float,
    ran: int,
    command: str | None,
    commit: str | None,
) -> dict:
    by_name = {run.setting.name for run in runs}
    return {
        "schema": SCHEMA,
        "command": command,
        "made": provenance(commit),
        "steps": steps,
        "seeds": list(seeds),
        "base": BASE,
        "build_wall_s": round(wall_s, 1),  # every call's time, summed over a resumed build
        "call_wall_s": round(wall_s, 1),  # this call's
        "runs_made": ran,  # by this call
        "knobs": {
            knob: [{"value": s.value, "config": s.config, "overrides": list(s.overrides),
                    "runs": [f"runs/{s.name}-seed{seed}" for seed in seeds],
                    "resolved": load_config(preset_path(s.config), list(s.overrides)).to_dict()}
                   for s in KNOBS[knob] if s.name in by_name]
            for knob in knobs
        },
        "runs": {f"runs/{run.dir_name}": run_card(out / "runs" / run.dir_name) for run in runs},
    }  # fmt: skip
