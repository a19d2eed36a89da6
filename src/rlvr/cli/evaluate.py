"""`rlvr eval`: pass@k and CoT-pass@k curves of a model, and of its base, on held-out queries."""

from __future__ import annotations

import argparse
from pathlib import Path

from rlvr.cli.common import (
    Flag,
    UsageError,
    add_quiet,
    int_at_least,
    int_list,
    number_above,
    quiet_hugging_face,
    run_options,
)
from rlvr.config import EVAL_FIELDS, TaskConfig, eval_fields, load_config
from rlvr.tasks.registry import task_names


def add_parser(sub: argparse._SubParsersAction) -> None:
    shared = run_options(
        overrides=f"the held-out task and sampling length, as `rlvr train` takes them: {', '.join(EVAL_FIELDS)} "
        "(e.g. --set task.operands=5 to evaluate longer chains than training saw); another --task takes the "
        "fields that decide its held-out split instead of task.operands ... task.min_operand",
        seed=Flag("sampling seed, the same for both models (default 0)", default=0),
        out=Flag("folder for eval.json and passk.png (default ./eval)", default="eval"),
    )
    p = sub.add_parser(
        "eval",
        parents=[shared],
        help="pass@k and CoT-pass@k curves of a model (and its base) on held-out queries",
        description="Sample n completions per held-out query, estimate pass@k (Chen et al. 2021) and "
        "CoT-pass@k (right answer and right reasoning) for each k, and name the k where the base "
        "model's curve catches up with the trained one, if it does. See docs/evaluation.md.",
    )
    p.add_argument(
        "--model", required=True, help="'tiny-arith' or a Hugging Face model directory (e.g. a run's final/)"
    )
    p.add_argument("--base", help="a second model to compare against, usually the one training started from")
    p.add_argument(
        "--task",
        default=TaskConfig.name,
        choices=task_names(),
        help=f"registered task whose held-out split is used (default {TaskConfig.name}); CoT-pass@k needs its "
        "reasoning checker and is reported n/a without one",
    )
    p.add_argument("--n", type=int_at_least(1), default=16, help="samples per query (default 16); every k must be <= n")
    p.add_argument(
        "--k",
        type=int_list("k", "1,2,4,8", minimum=1),
        default="1,2,4,8,16",
        help="comma-separated k values (default 1,2,4,8,16)",
    )
    p.add_argument("--num-queries", type=int_at_least(1), default=200, help="held-out queries (default 200)")
    p.add_argument(
        "--temperature",
        type=number_above(0, " (pass@k is estimated from sampled completions)"),
        default=1.0,
        help="sampling temperature (default 1.0)",
    )
    add_quiet(p)
    p.set_defaults(func=run)


def eval_set_problem(overrides: list[str], task: str) -> str | None:
    """The message for the first `rlvr eval --task TASK --set` key eval does not take, or None."""
    fields = eval_fields(task)
    for item in overrides:
        if item.split("=", 1)[0].strip() not in fields:
            return f"--set {item}: rlvr eval takes only {', '.join(fields)}"
    return None


def _check_models(*named: tuple[str, str | None]) -> None:
    """Each (flag, name) is a built-in base or a directory with a Hugging Face config.json."""
    from rlvr.bases import BASE_NAMES

    for flag, name in named:
        if name and name not in BASE_NAMES and not (Path(name).expanduser() / "config.json").is_file():
            raise UsageError(
                f"{flag} {name}: neither a built-in base ({', '.join(BASE_NAMES)}) nor a directory with a "
                "Hugging Face config.json"
            )


def run(args: argparse.Namespace) -> int:
    ks = sorted(set(args.k))
    if ks[-1] > args.n:
        raise UsageError(
            f"--k {ks[-1]} exceeds --n {args.n}: pass@k needs at least k samples per query; raise --n or drop that k"
        )
    outside = eval_set_problem(args.overrides, args.task)
    if outside:
        raise UsageError(outside)
    cfg = load_config(None, [f"task.name={args.task}", *args.overrides])  # the trainer's own validation
    _check_models(("--model", args.model), ("--base", args.base))
    from rlvr.rollout.prompts import PromptFormat
    from rlvr.studies.passk_eval import evaluate_passk

    quiet_hugging_face()
    out = Path(args.out)
    print(
        f"rlvr eval: {args.num_queries} held-out {args.task} queries x n={args.n} samples at "
        f"T={args.temperature} -> {out}"
    )
    report = evaluate_passk(
        args.model,
        base=args.base,
        task=cfg.task,
        n=args.n,
        ks=ks,
        num_queries=args.num_queries,
        temperature=args.temperature,
        seed=args.seed,
        out=out,
        progress=not args.quiet,
        max_new_tokens=cfg.rollout.max_new_tokens,
        prompt_format=PromptFormat.of(cfg.task),
        rollout=cfg.rollout,
    )
    print(format_eval_table(report))
    print(f"saved: {out / 'eval.json'}, {out / 'passk.png'}")
    return 0


def format_eval_table(report: dict) -> str:
    """The printed table: one row per k, pass@k and CoT-pass@k in percent for each model."""

    def pct(values: list[float] | None, i: int) -> str:
        return "n/a" if values is None else f"{100 * values[i]:.1f}%"

    models = report["models"]
    header = "   k" + "".join(f"  {label + ' pass@k':>14}  {label + ' CoT-pass@k':>18}" for label in models)
    rows = [header]
    for i, k in enumerate(report["k"]):
        rows.append(
            f"{k:>4}" + "".join(f"  {pct(m['pass@k'], i):>14}  {pct(m['cot_pass@k'], i):>18}" for m in models.values())
        )
    if "base" in models:
        for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")):
            k = report["crossing"][key]
            if models["base"][key] is None:
                rows.append(f"{name}: unavailable for task '{report['task']}' (no reasoning checker)")
            elif k is None:
                rows.append(f"{name}: the curves do not cross (base never catches up from below at these k)")
            else:
                rows.append(f"{name}: base catches up with the trained model at k={k}")
    unscorable = {label: m["unscorable"] for label, m in models.items() if m["unscorable"]}
    if unscorable:
        rows.append(f"unscorable samples (kept out of n): {unscorable}")
    return "\n".join(rows)
