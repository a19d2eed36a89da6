"""`rlvr eval`: pass@k and CoT-pass@k curves of a model, and of its base, on held-out queries."""

from __future__ import annotations

import argparse
from pathlib import Path

from rlvr.cli.common import Flag, UsageError, add_command, add_quiet, quiet_hugging_face
from rlvr.cli.validators import int_at_least, int_list, number_above
from rlvr.config import EVAL_FIELDS, RunConfig, TaskConfig, config_from_dict, eval_set_problem, load_config
from rlvr.tasks.registry import task_names


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "eval",
        run,
        help="pass@k and CoT-pass@k curves of a model (and its base) on held-out queries",
        description="Sample n completions per held-out query, estimate pass@k (Chen et al. 2021) and "
        "CoT-pass@k (right answer and right reasoning) for each k, and name the k where the base "
        "model's curve catches up with the trained one, if it does. See docs/evaluation.md.",
        overrides=f"the held-out task and sampling length, as `rlvr train` takes them: {', '.join(EVAL_FIELDS)} "
        "(e.g. --set task.operands=5 to evaluate longer chains than training saw); another --task takes the "
        "fields that decide its held-out split instead of task.operands ... task.min_operand",
        seed=Flag("sampling seed, the same for both models (default 0)", default=0),
        out=Flag(
            "folder for eval.json, samples.jsonl, samples_lm_eval.jsonl and passk.png (default ./eval)", default="eval"
        ),
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="'tiny-arith' or a Hugging Face model directory (e.g. a run's final/)")
    which.add_argument(
        "--run",
        help="a run directory: its model (--checkpoint) on its own task's held-out split, with its own config "
        "(task, prompt format, length, temperature), against the model it started from unless --base is given",
    )
    p.add_argument(
        "--checkpoint",
        type=checkpoint_choice,
        help="with --run: its final/ model (default), best/ (kept with train.keep_best), or the model saved after "
        "step STEP (steps/STEP/ kept with train.keep_every, checkpoint/ when it is at STEP, final/ at the last step)",
        metavar="best|final|STEP",
    )
    p.add_argument("--base", help="a second model to compare against, usually the one training started from")
    p.add_argument(
        "--task",
        choices=task_names(),
        help=f"registered task whose held-out split is used (default {TaskConfig.name}, or the run's with --run); "
        "CoT-pass@k needs its reasoning checker and is reported n/a without one",
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
        "--support-k",
        type=int_at_least(1),
        help="also draw on, up to this many samples per query, for the queries not solved yet, and classify "
        "each query's support at that k against --base: preserved, expanded, shrunk or never (>= --n)",
    )
    p.add_argument(
        "--temperature",
        type=number_above(0, " (pass@k is estimated from sampled completions)"),
        help="sampling temperature (default 1.0, or the run's rollout.temperature with --run)",
    )
    add_quiet(p)


def checkpoint_choice(text: str) -> str | int:
    """A `type=` for --checkpoint: best, final, or a step number."""
    if text in ("best", "final"):
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected best, final or a step number (an integer >= 1); got {text!r}")


def run(args: argparse.Namespace) -> int:
    ks = sorted(set(args.k))
    if ks[-1] > args.n:
        raise UsageError(
            f"--k {ks[-1]} exceeds --n {args.n}: pass@k needs at least k samples per query; raise --n or drop that k"
        )
    if args.support_k is not None and args.support_k < args.n:
        raise UsageError(f"--support-k {args.support_k} is below --n {args.n}: it counts the first n draws too")
    cfg, model, base = _setup(args)
    from rlvr.bases import check_model  # torch and the models load once the flags are known to be good
    from rlvr.rollout.prompts import PromptFormat
    from rlvr.studies.eval_table import format_eval_table
    from rlvr.studies.passk_eval import evaluate_passk

    check_model(model, "--model")
    if base:
        check_model(base, "--base")
    quiet_hugging_face()
    out = Path(args.out)
    print(
        f"rlvr eval: {args.num_queries} held-out {cfg.task.name} queries x n={args.n} samples at "
        f"T={cfg.rollout.temperature} -> {out}"
    )
    report = evaluate_passk(
        str(model),
        base=base,
        task=cfg.task,
        n=args.n,
        ks=ks,
        num_queries=args.num_queries,
        temperature=cfg.rollout.temperature,
        seed=args.seed,
        out=out,
        progress=not args.quiet,
        max_new_tokens=cfg.rollout.max_new_tokens,
        prompt_format=PromptFormat.of(cfg.task),
        rollout=cfg.rollout,
        support_k=args.support_k,
    )
    print(format_eval_table(report))
    saved = ("eval.json", "samples.jsonl", "samples_lm_eval.jsonl", "passk.png")
    print(f"saved: {', '.join(str(out / name) for name in saved)}")
    return 0


def _setup(args: argparse.Namespace) -> tuple[RunConfig, str, str | None]:
    """(the config the held-out split and sampling come from, the model, the base or None):
    from --task and --set, or from a run directory's own config with --set on top."""
    from rlvr import rundir

    if args.run is None:
        if args.checkpoint is not None:
            raise UsageError(f"--checkpoint {args.checkpoint}: only with --run DIR (--model names the model itself)")
        task = args.task or TaskConfig.name
        base_cfg, model, base = None, args.model, args.base
    else:
        run = Path(args.run)
        if problem := rundir.not_a_run(run):
            raise UsageError(problem)
        model = _run_model(run, args.checkpoint or "final")
        base_cfg = config_from_dict(rundir.read_config(run))
        if args.task and args.task != base_cfg.task.name:
            raise UsageError(
                f"--task {args.task}: the run trained on {base_cfg.task.name}; drop --task to use its split"
            )
        task, base = base_cfg.task.name, args.base or base_cfg.model.name
    outside = eval_set_problem(args.overrides, task)
    if outside:
        raise UsageError(outside)
    sets = [f"task.name={task}", *args.overrides]
    if args.temperature is not None:
        sets.append(f"rollout.temperature={args.temperature}")
    return load_config(None, sets, base=base_cfg), str(model), base


def _run_model(run: Path, checkpoint: str | int) -> Path:
    """The model of `run` that --checkpoint names; a UsageError says which there are when it is not there."""
    from rlvr import rundir

    if isinstance(checkpoint, int):
        from rlvr.engine.checkpoint import saved_step  # torch loads only for a step

        saved = rundir.saved_models(run, saved_step)
        if checkpoint not in saved:
            have = f"saved after steps {', '.join(map(str, saved))}" if saved else "no model saved at any step"
            raise UsageError(
                f"--checkpoint {checkpoint}: --run {run} has no model saved after step {checkpoint} ({have}; "
                "train.keep_every=N keeps one every N steps)"
            )
        return saved[checkpoint]
    model = rundir.best_dir(run) if checkpoint == "best" else rundir.final_dir(run)
    if not (model / rundir.MODEL_CONFIG).is_file():
        why = "keep one with train.keep_best=pass@1" if checkpoint == "best" else "the run has not finished"
        raise UsageError(f"--run {run}: no {model.name}/ model there ({why})")
    return model
