"""`rlvr compare`: train several algorithms on the same task, model, prompt budget and seeds, then
set them side by side on memory, online exploration, reward stability and held-out reasoning.

Each (algorithm, seed) is an ordinary run directory `<out>/<algorithm>-seed<seed>/`, trained in
this process by the runner (studies/runner.py); after training, its final policy is evaluated on
held-out pass@k and CoT-pass@k with the same sampler and counts as `rlvr eval`
(studies/passk_eval.py). The numbers are computed from those files by eval/compare.py and written
to `<out>/compare.json` and `<out>/compare.png`.
"""

from __future__ import annotations

import json
import time
import typing
from pathlib import Path

from rlvr.algos import ALGORITHMS
from rlvr.bases import resolve_model_path
from rlvr.config import AlgoConfig, RunConfig, load_config
from rlvr.errors import UserError
from rlvr.eval.compare import curve_mean, format_table, plot_compare, summarize_algorithm
from rlvr.eval.curves import curves
from rlvr.models import load_policy
from rlvr.rollout.prompts import PromptFormat
from rlvr.rundir import final_dir, is_run_dir, read_metrics
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
    """Train every algorithm with every seed, evaluate, and write out/compare.json and .png."""
    ks = ks or passk_ks(n)
    check_budget(seeds, steps, n, ks)
    sets = {(a, s): _run_sets(overrides, a, s, steps) for a in algorithms for s in seeds}
    configs = {key: load_config(config, value) for key, value in sets.items()}  # all valid before any run
    taken = [out / f"{a}-seed{s}" for a, s in configs if is_run_dir(out / f"{a}-seed{s}")]
    if taken:
        raise UserError(f"{taken[0]} already holds a run; pick another --out for this comparison")
    say = print if progress else (lambda *_: None)
    per_algorithm: dict[str, list[dict]] = {a: [] for a in algorithms}
    for index, ((algorithm, seed), cfg) in enumerate(configs.items(), start=1):
        run_dir = out / f"{algorithm}-seed{seed}"
        say(f"[{index}/{len(configs)}] {algorithm}, seed {seed}: {steps} steps -> {run_dir}")
        spec = RunSpec(str(run_dir), config, tuple(sets[algorithm, seed]), resume=False, progress=progress)
        per_algorithm[algorithm].append(
            _train_and_measure(spec, cfg, n=n, ks=ks, num_queries=num_queries, progress=progress)
        )
    first = next(iter(configs.values()))
    say(f"base model {first.model.name}: held-out pass@k")
    base = _heldout_curves(
        first.model.name, first, n=n, ks=ks, num_queries=num_queries, progress=progress, label="base"
    )
    report = _report(config, overrides, steps, seeds, n, ks, first, per_algorithm, base)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(report, indent=1) + "\n")
    plot_compare(report, out / "compare.png")
    (out / "compare.md").write_text(format_table(report) + "\n")
    return report


def _train_and_measure(
    spec: RunSpec, cfg: RunConfig, *, n: int, ks: list[int], num_queries: int | None, progress: bool
) -> dict:
    """Train one run, then its held-out pass@k (also written to <run>/passk.json); what
    summarize_algorithm takes of it."""
    started = time.perf_counter()
    run(spec)
    label = f"{cfg.algo.algorithm} seed {cfg.train.seed}"
    passk = _heldout_curves(
        str(final_dir(spec.out)), cfg, n=n, ks=ks, num_queries=num_queries, progress=progress, label=label
    )
    run_dir = Path(spec.out)
    (run_dir / "passk.json").write_text(json.dumps({"k": ks, "n": n, **passk}, indent=1) + "\n")
    return {
        "seed": cfg.train.seed,
        "rows": read_metrics(run_dir),
        "passk": passk,
        "wall_s": time.perf_counter() - started,
    }


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
