"""What rg_learning.py, proof_learning.py and tool_learning.py share: a base (built once, or a
built-in one), then per seed one real `rlvr train` and one real `rlvr eval --run` of that run.

`rlvr eval --run SEED_DIR` evaluates the run's final/ against the model it started from on the
run's own held-out split, with paired draws (the same random draws per query and sample for both
models), and writes SEED_DIR/eval/eval.json: pass@k per model with 95% bootstrap intervals over
queries, and the trained-minus-base difference with its paired interval (docs/evaluation.md).
Printed per seed: those numbers at k = 1 and the largest k, and training's own held-out check;
then the base once (paired draws make it the same in every seed's eval.json: checked, and said),
and the mean and sd over seeds of the difference. OUT/results.json keeps every run's summary.json
with its eval.json path and numbers under "eval".

Not a benchmark of its own: each script gives a `Recipe` and `run` does the rest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EVAL_N, EVAL_K, EVAL_QUERIES = 8, "1,2,4,8", 200
"""`rlvr eval` samples 8 completions per held-out query (T of the run), pass@1 ... pass@8, on the
first 200 held-out queries (each script's whole held-out split)."""


@dataclass(frozen=True)
class Recipe:
    """One script's setting: how its base comes about, and what every seed's `rlvr train` gets."""

    name: str
    description: str
    base: str | Callable[[Path], None]
    """A built-in base's name, or a function that builds the base into the folder it is given."""
    overrides: tuple[str, ...] = ()
    """`rlvr train --set` values of every seed (steps and lr come from the command line)."""
    steps: int | None = None
    """Default of --steps; None: the config's train.steps."""
    lr: float | None = None
    """Default of --lr; None: the config's optim.lr."""
    config: Path | None = None
    summary_keys: tuple[str, ...] = ("pass@1", "greedy")
    """Keys of summary.json's held-out check (base, final) printed per seed."""
    preamble: Callable[[], str] | None = None
    """Printed first (something about the base that eval.json does not say)."""


def train(base: Path | str, out: Path, seed: int, overrides: list[str], config: Path | None = None) -> dict:
    """One `rlvr train` run of `base` (a path or a built-in name) with `config`, if given, and
    `overrides` (section.key=value); its summary.json plus the wall time measured around the command."""
    argv = [sys.executable, "-m", "rlvr.cli", "train", "--quiet", "--seed", str(seed), "--out", str(out)]
    if config is not None:
        argv += ["--config", str(config)]
    for override in [f"model.name={base}", *overrides]:
        argv += ["--set", override]
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    summary = json.loads((out / "summary.json").read_text())
    summary["measured_wall_s"] = time.perf_counter() - started
    return summary


def evaluate(run_dir: Path, *, n: int, ks: str, num_queries: int) -> dict:
    """One `rlvr eval --run run_dir` (its final/ against its base, sampling seed 0) into
    run_dir/eval; `eval_numbers` of its eval.json plus the wall time measured around the command."""
    out = run_dir / "eval"
    argv = [sys.executable, "-m", "rlvr.cli", "eval", "--quiet", "--run", str(run_dir), "--n", str(n), "--k", ks,
            "--num-queries", str(num_queries), "--seed", "0", "--out", str(out)]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)  # its table is in eval.json; errors still show
    return eval_numbers(out / "eval.json") | {"measured_wall_s": time.perf_counter() - started}


def eval_numbers(path: Path) -> dict:
    """What the tables read from an eval.json: per k, base and trained pass@k and their difference,
    each {"value", "ci"} (fractions; value None where no query had k scorable samples)."""
    report = json.loads(path.read_text())

    def curve(entry: dict) -> dict:
        return {
            f"pass@{k}": {"value": v, "ci": ci} for k, v, ci in zip(report["k"], entry["pass@k"], entry["pass@k_ci"])
        }

    models = report["models"]
    return {
        "path": str(path),
        "n": report["n"],
        "num_queries": report["num_queries"],
        "temperature": report["temperature"],
        "base": curve(models["base"]),
        "trained": curve(models["model"]),
        "difference": curve(report["difference"]),
        "unscorable": {"base": models["base"]["unscorable"], "trained": models["model"]["unscorable"]},
        "wall_s": {"base": models["base"]["wall_s"], "trained": models["model"]["wall_s"]},
    }


def same_base(paths: list[str]) -> bool:
    """Whether every eval.json in `paths` holds the same base results: the same queries, the same
    per-query counts, the same pass@k. Paired draws (per query and sample, sampling seed 0) make
    them so when the base and the held-out split are the same."""
    bases = [json.loads(Path(path).read_text())["models"]["base"] for path in paths]
    keys = ("path", "query_ids", "per_query", "pass@k", "pass@k_ci")
    return all({key: base[key] for key in keys} == {key: bases[0][key] for key in keys} for base in bases)


def _pct(entry: dict) -> str:
    if entry["value"] is None:
        return "n/a"
    low, high = entry["ci"]
    return f"{100 * entry['value']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def _points(entry: dict) -> str:
    if entry["value"] is None:
        return "n/a"
    low, high = entry["ci"]
    return f"{100 * entry['value']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] points"


def _shown_ks(numbers: dict) -> list[str]:
    """pass@1 and the largest k evaluated."""
    keys = list(numbers["difference"])
    return [keys[0], keys[-1]] if len(keys) > 1 else keys


def seed_line(seed: int, summary: dict, keys: tuple[str, ...]) -> str:
    """The seed's eval.json at k = 1 and the largest k (base -> trained, paired difference), then
    training's own held-out check (summary.json: pass@1 over its eval_samples, greedy, ...)."""
    numbers = summary["eval"]
    shown = "; ".join(
        f"{k} {_pct(numbers['base'][k])} -> {_pct(numbers['trained'][k])}, {_points(numbers['difference'][k])}"
        for k in _shown_ks(numbers)
    )
    own = ", ".join(f"{key} {summary['base'][key]:.3f} -> {summary['final'][key]:.3f}" for key in keys)
    trained, evaluated = summary.get("measured_wall_s"), numbers["measured_wall_s"]
    took = f"trained in {trained:.0f} s" if trained is not None else f"trained earlier ({summary['wall_s']:.0f} s)"
    how = f"rlvr eval {evaluated:.0f} s" if evaluated is not None else "eval.json read as it was (--eval-only)"
    return f"seed {seed}: {shown}\n  training's own held-out check: {own}; {summary['steps']} steps, {took}; {how}"


def summary_lines(rows: list[dict]) -> tuple[list[str], dict]:
    """The base once (and whether it is the same in every seed's eval.json), then per shown k the
    mean and sd over seeds of the trained pass@k and of the paired difference, in points; and
    those figures for results.json."""
    first = rows[0]["eval"]
    identical = same_base([row["eval"]["path"] for row in rows])
    said = "the same in every seed's eval.json" if identical else "NOT the same in every seed's eval.json"
    base = ", ".join(f"{k} {_pct(first['base'][k])}" for k in _shown_ks(first))
    lines = [f"base ({said}; {first['num_queries']} held-out queries x n={first['n']}): {base}"]
    over: dict = {"base_identical": identical, "seeds": len(rows)}
    for k in _shown_ks(first):
        diffs = [100 * row["eval"]["difference"][k]["value"] for row in rows]
        trained = [100 * row["eval"]["trained"][k]["value"] for row in rows]
        sd = statistics.stdev(diffs) if len(diffs) > 1 else None
        over[k] = {"trained_mean": statistics.mean(trained), "difference_mean": statistics.mean(diffs),
                   "difference_sd": sd, "differences": diffs}  # fmt: skip
        spread = f"sd {sd:.1f}" if sd is not None else "no sd (one seed)"
        lines.append(
            f"{k} over {len(rows)} seeds: trained {statistics.mean(trained):.1f}%, difference "
            f"{statistics.mean(diffs):+.1f} points ({spread}; by seed {', '.join(f'{d:+.1f}' for d in diffs)})"
        )
    return lines, over


def _arguments(recipe: Recipe) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=recipe.description)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=recipe.steps, help="default: %(default)s (None: the config's)")
    parser.add_argument("--lr", type=float, default=recipe.lr, help="default: %(default)s (None: the config's)")
    parser.add_argument("--eval-n", type=int, default=EVAL_N, help="rlvr eval --n (default %(default)s)")
    parser.add_argument("--eval-k", default=EVAL_K, help="rlvr eval --k (default %(default)s)")
    parser.add_argument(
        "--eval-queries", type=int, default=EVAL_QUERIES, help="rlvr eval --num-queries (default %(default)s)"
    )
    parser.add_argument(
        "--eval-only",
        action="store_true",
        help="reuse a seed whose final/ is already there (its summary.json) instead of training it, and its "
        "eval/eval.json if written after final/ with these --eval-* settings instead of evaluating it",
    )
    return parser.parse_args()


def _base(recipe: Recipe, out: Path) -> Path | str:
    """The built-in base's name, or OUT/base, built unless it is there."""
    if isinstance(recipe.base, str):
        return recipe.base
    base = out / "base"
    if not (base / "model.safetensors").is_file():
        started = time.perf_counter()
        recipe.base(base)
        print(f"base for {recipe.name} built in {time.perf_counter() - started:.0f} s", flush=True)
    return base


def _current_eval(run_dir: Path, args: argparse.Namespace) -> dict | None:
    """`eval_numbers` of run_dir/eval/eval.json if it was written after final/ with these --eval-*
    settings (measured_wall_s None: not measured now), else None."""
    path, final = run_dir / "eval" / "eval.json", run_dir / "final" / "model.safetensors"
    if not path.is_file() or not final.is_file() or path.stat().st_mtime < final.stat().st_mtime:
        return None
    report = json.loads(path.read_text())
    wanted = (args.eval_n, [int(k) for k in args.eval_k.split(",")], args.eval_queries)
    if (report["n"], report["k"], report["num_queries"]) != wanted or "difference" not in report:
        return None
    return eval_numbers(path) | {"measured_wall_s": None}


def _seed(recipe: Recipe, base: Path | str, seed: int, args: argparse.Namespace) -> dict:
    """The seed's summary.json (trained now, or as it is with --eval-only and a final/ there) with
    its evaluation under "eval" (evaluated now, or with --eval-only an eval.json already there)."""
    run_dir = args.out / f"seed{seed}"
    if args.eval_only and (run_dir / "final" / "config.json").is_file():
        summary = json.loads((run_dir / "summary.json").read_text())
    else:
        common = [f"train.steps={args.steps}"] * (args.steps is not None) + [f"optim.lr={args.lr}"] * (
            args.lr is not None
        )
        summary = train(base, run_dir, seed, [*recipe.overrides, *common], config=recipe.config)
    evaluated = _current_eval(run_dir, args) if args.eval_only else None
    summary["eval"] = evaluated or evaluate(run_dir, n=args.eval_n, ks=args.eval_k, num_queries=args.eval_queries)
    print(seed_line(seed, summary, recipe.summary_keys), flush=True)
    return summary


def run(recipe: Recipe) -> None:
    """Parse the flags, make the base, train and evaluate each seed (one line each), print the base
    and the spread over seeds, and write OUT/results.json."""
    args = _arguments(recipe)
    started = time.perf_counter()
    base = _base(recipe, args.out)
    if recipe.preamble is not None:
        print(recipe.preamble(), flush=True)
    rows = [_seed(recipe, base, seed, args) for seed in args.seeds]
    lines, over = summary_lines(rows)
    print("\n".join([f"{recipe.name}:", *lines]))
    print(f"wall time, whole command: {time.perf_counter() - started:.0f} s")
    (args.out / "results.json").write_text(
        json.dumps(
            {"name": recipe.name, "args": vars(args) | {"out": str(args.out)}, "runs": rows, "eval": over}, indent=1
        )
    )
