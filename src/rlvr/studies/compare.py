"""`rlvr compare`: train several algorithms on the same task, model, prompt budget and seeds, then
set them side by side on memory, online exploration, reward stability and held-out reasoning.

Each (algorithm, seed) is an ordinary run directory `<out>/<algorithm>-seed<seed>/`, trained in
this process by the runner (studies/runner.py); after training, its final policy is evaluated on
held-out pass@k and CoT-pass@k with the same sampler and counts as `rlvr eval`
(studies/passk_eval.py), into `<run>/passk.json`. The numbers are computed from those files by
eval/compare.py and written to `<out>/compare.json` and `<out>/compare.png`.

The same command run again with the same --out continues: a finished run and its passk.json are
kept, an interrupted run resumes from its checkpoint, and a run of other settings there is refused.
Each base is evaluated once: the held-out evaluation `rlvr train` makes before its first step is
made once per seed (`<out>/base-eval-seed<N>.json`) and shared by the runs of every algorithm with
that seed, which draw the same samples from it (paired draws, rollout/draws.py: they depend on the
base, the held-out split, the sampling settings and train.seed, not on the algorithm); the base's
pass@k is made once too (`<out>/base-passk.json`).
"""

from __future__ import annotations

import json
import time
import typing
from dataclasses import dataclass
from pathlib import Path

import yaml

from rlvr.algos import ALGORITHMS
from rlvr.bases import resolve_model_path
from rlvr.config import AlgoConfig, RunConfig, config_from_dict, load_config
from rlvr.engine.checkpoint import saved_step
from rlvr.engine.loop import Trainer
from rlvr.errors import UserError
from rlvr.eval.compare import curve_mean, format_table, plot_compare, summarize_algorithm
from rlvr.eval.curves import curves
from rlvr.models import load_policy
from rlvr.rollout.prompts import PromptFormat
from rlvr.rundir import final_dir, find_checkpoint, is_finished, is_run_dir, read_config, read_metrics, read_summary
from rlvr.studies.passk_eval import count_samples
from rlvr.studies.runner import RunSpec, run
from rlvr.tasks import load_task
from rlvr.tasks.registry import reasoning_checker
from rlvr.verifiers import RewardFunction

DEFAULT_ALGORITHMS = ("grpo", "ppo", "dpo")
MIN_SEEDS = 2
"""A spread across seeds needs at least two of them."""
MIN_STEPS = 8
"""Fewer steps leave a last quarter of one step and too few step-to-step changes to say anything."""
EVAL_SEED = 0
"""Every model's held-out samples start from this RNG state, so differences are the models'."""
RUN_PASSK = "passk.json"
"""<run>/passk.json: a run's held-out pass@k, with how it was made (Evaluation.record) and its time."""
BASE_PASSK = "base-passk.json"
"""<out>/base-passk.json: the base model's held-out pass@k, the same way."""
BASE_EVAL = "base-eval-seed{seed}.json"
"""<out>/base-eval-seed<N>.json: {"settings", "base"}: the base's held-out evaluation that every run
of seed N starts its summary with (RunSpec.base_eval), and the settings it was made under."""


class CompareBudgetError(UserError):
    """A comparison too small to measure what it reports."""


def known_algorithms() -> list[str]:
    """The algorithms this build can run: the registry's, and any `algo.algorithm` accepts that a
    branch wires into the trainer without a registry entry."""
    choices = typing.get_args(typing.get_type_hints(AlgoConfig)["algorithm"])
    return list(dict.fromkeys([*ALGORITHMS, *choices]))


def resolve_algorithms(requested: list[str] | None) -> tuple[list[str], list[str]]:
    """(algorithms to run, default ones skipped because this build does not have them).

    With no explicit list, the defaults that exist in the registry are run; a name asked for
    explicitly that the registry does not know is an error that names it.
    """
    known = known_algorithms()
    if requested is None:
        present = [a for a in DEFAULT_ALGORITHMS if a in known]
        return present, [a for a in DEFAULT_ALGORITHMS if a not in known]
    unknown = [a for a in requested if a not in known]
    if unknown:
        raise UserError(f"unknown algorithm {unknown[0]!r} in --algorithms; this build has: {', '.join(known)}")
    if len(set(requested)) != len(requested) or not requested:
        raise UserError("--algorithms needs at least one algorithm and no repeats, e.g. --algorithms grpo,dpo")
    return list(requested), []


def passk_ks(n: int) -> list[int]:
    """The k of the held-out pass@k curves with n samples per query: powers of two up to n (and 64)."""
    return [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= n]


def default_out(root: str | Path = "runs") -> Path:
    """Where a comparison goes when no folder is named: <root>/compare-<YYYYmmdd-HHMMSS>."""
    return Path(root) / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"


def check_budget(seeds: list[int], steps: int, n: int, ks: list[int]) -> None:
    """Refuse a budget too small to say anything, naming what is missing."""
    if len(set(seeds)) != len(seeds):
        raise CompareBudgetError(f"--seeds {seeds} repeats a seed; give distinct seeds, e.g. --seeds 0,1")
    if len(seeds) < MIN_SEEDS:
        raise CompareBudgetError(
            f"--seeds gives {len(seeds)} seed(s): reward spread across seeds needs at least "
            f"{MIN_SEEDS}, e.g. --seeds 0,1"
        )
    if steps < MIN_STEPS:
        raise CompareBudgetError(f"--steps {steps} is too few to measure reward stability; use at least {MIN_STEPS}")
    if n < 2 or ks[-1] > n:
        raise CompareBudgetError(f"--n {n}: pass@k at large k needs n >= 2 samples per held-out query and k <= n")


def _run_sets(overrides: list[str], algorithm: str, seed: int, steps: int) -> list[str]:
    return [*overrides, f"algo.algorithm={algorithm}", f"train.seed={seed}", f"train.steps={steps}"]


def _heldout_curves(
    model_path: str, cfg: RunConfig, *, n: int, ks: list[int], num_queries: int | None, progress: bool, label: str
) -> dict:
    """pass@k and CoT-pass@k on the run's held-out split, as `rlvr eval` counts them."""
    _, heldout = load_task(cfg.task)
    queries = heldout[:num_queries] if num_queries else heldout
    model, tokenizer = load_policy(resolve_model_path(model_path))
    counts, unscorable = count_samples(
        model,
        tokenizer,
        queries,
        RewardFunction({"correctness": 1.0}),
        reasoning_checker(cfg.task.name),
        n=n,
        temperature=cfg.rollout.temperature,
        max_new_tokens=cfg.rollout.max_new_tokens,
        progress=progress,
        label=label,
        prompt_format=PromptFormat.of(cfg.task),
        draw_seed=EVAL_SEED,
    )
    return {**curves(counts, ks), "unscorable": unscorable, "num_queries": len(queries)}


def compare_algorithms(
    algorithms: list[str],
    *,
    seeds: list[int],
    steps: int,
    config: str | None,
    overrides: list[str],
    out: Path,
    n: int = 16,
    ks: list[int] | None = None,
    num_queries: int | None = 100,
    progress: bool = True,
) -> dict:
    """Train every algorithm with every seed (keeping finished runs, resuming interrupted ones),
    evaluate, and write out/compare.json and .png."""
    ks = ks or passk_ks(n)
    check_budget(seeds, steps, n, ks)
    sets = {(a, s): _run_sets(overrides, a, s, steps) for a in algorithms for s in seeds}
    configs = {key: load_config(config, value) for key, value in sets.items()}  # all valid before any run
    for (algorithm, seed), cfg in configs.items():
        if problem := other_settings(out / f"{algorithm}-seed{seed}", cfg):
            raise UserError(problem)
    say = print if progress else (lambda *_: None)
    evaluation = Evaluation(n, ks, num_queries, progress)
    per_algorithm: dict[str, list[dict]] = {a: [] for a in algorithms}
    for index, ((algorithm, seed), cfg) in enumerate(configs.items(), start=1):
        run_dir = out / f"{algorithm}-seed{seed}"
        say(f"[{index}/{len(configs)}] {algorithm}, seed {seed}: {_plan(run_dir, steps)} -> {run_dir}")
        base_eval = None if is_finished(run_dir) or find_checkpoint(run_dir) else shared_base_eval(out, cfg, say)
        spec = RunSpec(str(run_dir), config, tuple(sets[algorithm, seed]), progress=progress, base_eval=base_eval)
        per_algorithm[algorithm].append(_train_and_measure(spec, cfg, evaluation))
    first = next(iter(configs.values()))
    base = _base_curves(out, first, evaluation, say)
    report = _report(config, overrides, steps, seeds, n, ks, first, per_algorithm, base)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(report, indent=1) + "\n")
    plot_compare(report, out / "compare.png")
    (out / "compare.md").write_text(format_table(report) + "\n")
    return report


@dataclass(frozen=True)
class Evaluation:
    """How every model of a comparison is evaluated on held-out queries."""

    n: int
    ks: list[int]
    num_queries: int | None
    progress: bool

    def record(self, **also) -> dict:
        """How a passk.json was made (and `also`, what else decides it), to tell whether to keep it."""
        return {"k": self.ks, "n": self.n, "queries_asked": self.num_queries, "draw_seed": EVAL_SEED, **also}

    def kept(self, path: Path, **also) -> dict | None:
        """The curves in `path` when they were made this way; None otherwise."""
        made = _read_json(path)
        return made if made and all(made.get(key) == value for key, value in self.record(**also).items()) else None

    def curves(self, model_path: str, cfg: RunConfig, label: str, path: Path, **also) -> dict:
        """The model's held-out curves: those kept in `path`, or made now and written there."""
        kept = self.kept(path, **also)
        if kept is not None:
            return kept
        started = time.perf_counter()
        passk = _heldout_curves(
            model_path, cfg, n=self.n, ks=self.ks, num_queries=self.num_queries, progress=self.progress, label=label
        )
        made = {**self.record(**also), **passk, "wall_s": round(time.perf_counter() - started, 2)}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(made, indent=1) + "\n")
        return made


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def other_settings(run_dir: Path, cfg: RunConfig) -> str | None:
    """What stops `run_dir` from being kept or resumed as this comparison's run: a run of other
    settings (the first field that differs), or a config.yaml rlvr cannot read. None when there is
    no run there or it is this one."""
    if not is_run_dir(run_dir):
        return None
    again = "rerun with the same flags to continue it, or pick another --out"
    try:
        saved = config_from_dict(read_config(run_dir)).to_dict()
    except (UserError, ValueError, yaml.YAMLError) as err:
        return f"{run_dir} holds a run whose config.yaml cannot be read ({err}); pick another --out"
    wanted = cfg.to_dict()
    for section, fields in wanted.items():
        for key, value in fields.items():
            if saved.get(section, {}).get(key) != value:
                there = saved.get(section, {}).get(key)
                return f"{run_dir} holds a run of other settings ({section}.{key}: {there!r} there, {value!r} now); {again}"
    return None


def _plan(run_dir: Path, steps: int) -> str:
    """What this call does with one run, for the progress line."""
    if is_finished(run_dir):
        return "finished, kept"
    checkpoint = find_checkpoint(run_dir)
    if checkpoint is not None:
        return f"resumes after step {saved_step(checkpoint)} of {steps}"
    return f"{steps} steps"


def base_settings(cfg: RunConfig) -> dict:
    """What decides a run's base evaluation (`rlvr train`'s, before its first step): the whole
    config but the algorithm and the number of steps."""
    settings = cfg.to_dict()
    settings.pop("algo")
    settings["train"] = {key: value for key, value in settings["train"].items() if key != "steps"}
    return settings


def shared_base_eval(out: Path, cfg: RunConfig, say=print) -> str:
    """`<out>/base-eval-seed<N>.json` for cfg's train.seed: the base's held-out evaluation as a run
    makes it before its first step, made once and shared by every run of that seed (made again
    when the settings it was made under differ)."""
    path = out / BASE_EVAL.format(seed=cfg.train.seed)
    settings = base_settings(cfg)
    if (_read_json(path) or {}).get("settings") == settings:
        return str(path)
    say(f"base model {cfg.model.name}, seed {cfg.train.seed}: held-out evaluation, shared by every run of the seed")
    trainer = Trainer(cfg, out)  # the parts a run builds: its evaluation is the run's own
    try:
        result = trainer.evaluate()
    finally:
        trainer.close()
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"settings": settings, "base": result.to_dict()}, indent=1) + "\n")
    return str(path)


def _train_and_measure(spec: RunSpec, cfg: RunConfig, evaluation: Evaluation) -> dict:
    """Train one run unless it is finished, then its held-out pass@k (<run>/passk.json, kept when
    made the same way); what summarize_algorithm takes of it. Its wall time is training's (every
    segment, summary.json) plus its pass@k evaluation's."""
    if not spec.finished():
        run(spec)
    run_dir = Path(spec.out)
    label = f"{cfg.algo.algorithm} seed {cfg.train.seed}"
    passk = evaluation.curves(str(final_dir(run_dir)), cfg, label, run_dir / RUN_PASSK)
    return {
        "seed": cfg.train.seed,
        "rows": read_metrics(run_dir),
        "passk": passk,
        "wall_s": (read_summary(run_dir) or {}).get("wall_s", 0.0) + passk.get("wall_s", 0.0),
    }


def _base_curves(out: Path, first: RunConfig, evaluation: Evaluation, say) -> dict:
    """The base model's held-out pass@k (<out>/base-passk.json, kept when made the same way from
    the same base and held-out settings)."""
    path = out / BASE_PASSK
    held_out = {key: value for key, value in base_settings(first).items() if key != "train"}
    if evaluation.kept(path, settings=held_out) is None:
        say(f"base model {first.model.name}: held-out pass@k")
    return evaluation.curves(first.model.name, first, "base", path, settings=held_out)


def _report(
    config: str | None,
    overrides: list[str],
    steps: int,
    seeds: list[int],
    n: int,
    ks: list[int],
    first: RunConfig,
    per_algorithm: dict[str, list[dict]],
    base: dict,
) -> dict:
    """compare.json: the setup, one summary per algorithm, and the base model's pass@k."""
    return {
        "command_config": config,
        "overrides": overrides,
        "steps": steps,
        "seeds": seeds,
        "n": n,
        "k": ks,
        "num_queries": base["num_queries"],
        "task": first.task.name,
        "model": first.model.name,
        "prompt_budget": {"batch_queries": first.train.batch_queries, "group_size": first.rollout.group_size},
        "algorithms": {a: summarize_algorithm(runs) for a, runs in per_algorithm.items()},
        "base": {
            "pass@k": curve_mean([base["pass@k"]]),
            "cot_pass@k": None if base["cot_pass@k"] is None else curve_mean([base["cot_pass@k"]]),
        },
    }
