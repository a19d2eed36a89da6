"""`rlvr train`: one training run, fresh or resumed from its checkpoint."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rlvr import rundir
from rlvr.cli.common import RawRegistryHelp, UsageError, add_command, add_quiet, quiet_hugging_face
from rlvr.config import RunConfig, config_from_dict, describe_fields, load_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "train",
        run,
        help="train a policy with GRPO (no arguments: the embedded tiny model on arith)",
        description="Train with GRPO: sample G completions per query, verify, group-normalise, update.",
        epilog="settable keys (--set section.key=value):\n" + describe_fields(),
        formatter_class=RawRegistryHelp,  # model.name's help names the built-in bases
        config="YAML preset (see configs/); --set overrides it",
        overrides="override one config field, e.g. --set algo.beta=0.1 (repeatable)",
        seed="shorthand for --set train.seed=N",
        out="run directory (default: runs/<time>-seed<N>)",
    )
    p.add_argument(
        "--resume",
        metavar="DIR",
        help="continue the run in DIR from its last checkpoint (with --set train.steps=N to extend it)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="only lint the run's settings (batch split, max_new_tokens against the task's worked solutions, lr "
        "against the atlas, estimated memory against this machine; docs/troubleshooting.md) and exit: 2 on an error",
    )
    p.add_argument(
        "--supervise",
        action="store_true",
        help="train in a child process and restart it from its last checkpoint when it crashes, at most "
        "train.max_restarts times (each restart logged in <out>/supervisor.jsonl)",
    )
    p.add_argument(
        "--determinism",
        action="store_true",
        help="train the config twice into <out>/a and <out>/b and compare every logged number apart from "
        "times, throughput and memory; exit 1 on a difference (the synchronous loop is exactly reproducible on the CPU)",
    )
    add_quiet(p)


def _fresh_run_dir(out: str | None, seed: int) -> Path:
    path = Path(out) if out else rundir.default_run_dir(seed)
    if rundir.is_run_dir(path):
        raise UsageError(f"--out {path} already holds a run; continue it with --resume {path} or pick another --out")
    return path


def _resumed_config(args: argparse.Namespace) -> tuple[RunConfig, Path]:
    run = Path(args.resume)
    if not rundir.is_run_dir(run) or rundir.find_checkpoint(run) is None:
        raise UsageError(f"--resume {run}: no run with a checkpoint there (expected config.yaml and checkpoint/)")
    if args.config or args.seed is not None or args.out:
        raise UsageError(
            "--resume continues a run with its own saved config and directory; "
            "drop --config/--seed/--out (--set may change fields, e.g. train.steps to extend it)"
        )
    cfg = load_config(None, args.overrides, base=config_from_dict(rundir.read_config(run)))
    _start_sampling_early(cfg, args)
    return cfg, run


def _new_config(args: argparse.Namespace) -> RunConfig:
    """--config with its --set values and --seed (the shorthand for train.seed)."""
    return load_config(
        args.config, list(args.overrides) + ([f"train.seed={args.seed}"] if args.seed is not None else [])
    )


def _fresh_config(args: argparse.Namespace) -> tuple[RunConfig, Path]:
    cfg = _new_config(args)
    _start_sampling_early(cfg, args)
    from rlvr.engine.distributed import world  # torch: after the sampler process started

    out = world().on_main(lambda: _fresh_run_dir(args.out, cfg.train.seed))  # one directory for all processes
    return cfg, out


def _start_sampling_early(cfg: RunConfig, args: argparse.Namespace) -> None:
    """rollout.max_staleness >= 1: start the sampler process before this one imports torch, so that
    its imports and model load run beside ours (engine/sampler_launch.py). Under --supervise the
    run trains in a child process, which starts its own."""
    if not args.supervise:
        from rlvr.engine.sampler_launch import start_early

        start_early(cfg)


def lint_run(cfg: RunConfig, *, report_all: bool) -> bool:
    """Print the linter's findings (every one with `report_all`, else the warnings and errors);
    True when there is no error."""
    from rlvr.diagnostics.lint import lint

    world_size = int(os.environ.get("WORLD_SIZE", "1") or 1)
    findings = lint(cfg, world_size=world_size, strict=report_all)
    errors = [f for f in findings if f.level == "error"]
    shown = [f for f in findings if report_all or f.level != "ok"]
    if shown and os.environ.get("RANK", "0") == "0":
        print("\n".join(["rlvr train --check:" if report_all else "rlvr train: before the first step:",
                         *(f.line() for f in shown)]))  # fmt: skip
    return not errors


def run(args: argparse.Namespace) -> int:
    if args.check:
        if args.resume:
            raise UsageError("--check lints a new run's settings; drop --resume")
        cfg = _new_config(args)
        ok = lint_run(cfg, report_all=True)
        print("no errors" if ok else "errors above: fix them before training (docs/troubleshooting.md)")
        return 0 if ok else 2
    if args.determinism:
        return _determinism(args)
    cfg, out = _resumed_config(args) if args.resume else _fresh_config(args)
    if not lint_run(cfg, report_all=False):
        raise UsageError("the settings above would train nothing or not fit; `rlvr train --check` lists every finding")
    print(f"rlvr train: {cfg.algo.algorithm} on task '{cfg.task.name}' with model '{cfg.model.name}' -> {out}")
    if args.supervise:
        code = _supervised(cfg, out, args)
        if code:
            return code
        summary = rundir.read_summary(out)
    else:
        summary = _train_here(cfg, out, args)
    if summary:  # empty on a process other than rank 0 under accelerate/torchrun: rank 0 reports
        lines = rundir.summary_lines(
            summary, temperature=cfg.rollout.temperature, fidelity=cfg.reward.fidelity, tools=cfg.rollout.tools
        )
        print("\n".join([*lines, reading(summary)]))
        if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
            print(_process_memory(out, cfg))
        _plot_curves(out, cfg)
        print(f"run directory: {out} (config.yaml, metrics.jsonl, summary.json, curves.png, final/, checkpoint/)")
    return 0


def _process_memory(out: Path, cfg: RunConfig) -> str:
    """What each training process held at the last step (memory/*, the largest over processes)."""
    from rlvr.diagnostics.memory_estimate import format_bytes

    last = next((row for row in reversed(rundir.read_metrics(out)) if "memory/policy_weights" in row), None)
    if last is None:
        return "memory per process: not measured (train.memory_metrics=false)"
    parts = {"policy_weights": "weights", "policy_gradients": "gradients", "policy_optimizer": "optimizer state",
             "sampler_weights": "sampler copy", "reference_weights": "reference"}  # fmt: skip
    held = ", ".join(
        f"{name} {format_bytes(last[f'memory/{key}'])}" for key, name in parts.items() if last.get(f"memory/{key}")
    )
    return f"memory per process (train.sharding={cfg.train.sharding}, {os.environ['WORLD_SIZE']} processes): {held}"


def _train_here(cfg: RunConfig, out: Path, args: argparse.Namespace) -> dict:
    from rlvr.engine.loop import train  # torch and the models load once the flags are known to be good
    from rlvr.verifiers.registry import close_verifiers

    quiet_hugging_face()
    try:
        return train(cfg, out, resume=bool(args.resume), progress=not args.quiet)
    finally:
        close_verifiers()  # worker pools and the coq session end with the command, also when run in-process


def _supervised(cfg: RunConfig, out: Path, args: argparse.Namespace) -> int:
    from rlvr.engine.supervisor import supervise

    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        raise UsageError("--supervise runs one training process; under torchrun use its own --max-restarts")
    return supervise(cfg, out, resume=bool(args.resume), progress=not args.quiet)


def _determinism(args: argparse.Namespace) -> int:
    from rlvr.diagnostics.determinism import check_determinism
    from rlvr.verifiers.registry import close_verifiers

    if args.resume or not args.out:
        raise UsageError("--determinism trains two new runs: give --out DIR (they go to DIR/a and DIR/b), no --resume")
    cfg = _new_config(args)
    quiet_hugging_face()
    try:
        found = check_determinism(cfg, args.out, progress=not args.quiet)
    finally:
        close_verifiers()
    if found:
        print("\n".join([f"rlvr train --determinism: {len(found)} difference(s) between {args.out}/a and /b:",
                         *found[:20]]))  # fmt: skip
        return 1
    print(f"rlvr train --determinism: {args.out}/a and {args.out}/b logged identical numbers (times, throughput "
          "and memory aside)")  # fmt: skip
    return 0


def reading(summary: dict) -> str:
    """One line on what the two held-out numbers mean, and on greedy accuracy when it fell."""
    base, final = summary["base"], summary["final"]
    line = (
        "what these mean: pass@1 is the share of right answers among samples drawn at the training "
        "temperature (what the reward trains), greedy the share of queries whose single most likely "
        "completion is right"
    )
    if final["greedy"] < base["greedy"] - 0.005:
        return (
            f"{line}. Greedy fell ({base['greedy']:.3f} -> {final['greedy']:.3f}): training moved probability "
            "toward answers the verifier passes when sampled, and on some queries that moved the single most "
            "likely completion off the right one; a smaller optim.lr or a larger algo.beta keeps it closer "
            "(docs/results.md)"
        )
    return f"{line}."


def _plot_curves(out: Path, cfg: RunConfig) -> None:
    """curves.png in the run directory: reward, held-out pass@1 and greedy, KL and entropy over steps."""
    from rlvr.eval.plots import plot_run

    title = f"{cfg.algo.algorithm} on {cfg.task.name}, {cfg.model.name}, seed {cfg.train.seed}"
    plot_run(rundir.read_metrics(out), rundir.read_summary(out), out / rundir.CURVES, title=title)
