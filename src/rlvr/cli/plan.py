"""`rlvr plan`: settings under which a run fits a GPU, with the estimate they rest on (diagnostics/plan.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rlvr.cli.common import UsageError, add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "plan",
        run,
        help="choose micro-batch, sharding, checkpointing and LoRA so that a run fits a GPU",
        description="Try, in the order of what they cost, the ways rlvr lowers each process's memory (a "
        "smaller micro-batch, train.sharding=fsdp2, gradient checkpointing, LoRA) and print the first "
        "plan whose estimated peak fits 90%% of the GPU, with the `rlvr memory` estimate it rests on and "
        "the `rlvr train` settings that run it; exit 2 when none fits. --verify trains one step of the "
        "plan and prints the measured memory beside the estimate (docs/scaling.md).",
    )
    p.add_argument(
        "--model", default="tiny-arith", help="a preset of `rlvr memory`, or a model directory / config.json"
    )
    p.add_argument("--algorithm", default="grpo", help="algo.algorithm (default grpo)")
    p.add_argument("--gpu-memory", type=float, default=80, help="memory of one GPU in GiB (default 80)")
    p.add_argument("--gpus", type=int, default=1, help="training processes, one GPU each (default 1)")
    p.add_argument("--prompt-len", type=int, help="prompt tokens P (default: as `rlvr memory`)")
    p.add_argument(
        "--completion-len", type=int, help="completion tokens T, rollout.max_new_tokens (default: as `rlvr memory`)"
    )
    p.add_argument("--batch", type=int, default=32, help="B: queries per step, train.batch_queries (default 32)")
    p.add_argument("--group", type=int, default=8, help="G: completions per query, rollout.group_size (default 8)")
    p.add_argument("--beta", type=float, default=0.04, help="algo.beta; 0 holds no reference (default 0.04)")
    p.add_argument("--verify", action="store_true", help="train one step of the plan and print measured memory")
    p.add_argument("--out", type=Path, help="with --verify: the run directory of that step (default runs/plan-verify)")


def run(args: argparse.Namespace) -> int:
    from rlvr.algos import ALGORITHMS
    from rlvr.diagnostics.memory_estimate import TrainingSetup, format_table
    from rlvr.diagnostics.memory_model import load_model_spec
    from rlvr.diagnostics.memory_setup import default_lengths, memory_command
    from rlvr.diagnostics.plan import make_plan

    if args.algorithm not in ALGORITHMS:
        raise UsageError(f"--algorithm {args.algorithm}: unknown; pick one of {', '.join(ALGORITHMS)}")
    if args.gpus > 1 and not ALGORITHMS[args.algorithm].multi_process:
        raise UsageError(f"--algorithm {args.algorithm} trains on one process only; plan it with --gpus 1")
    if args.out is not None and not args.verify:
        raise UsageError("--out names the directory of --verify's step; add --verify")
    spec = load_model_spec(args.model)
    prompt, completion, _ = default_lengths(spec)
    base = TrainingSetup(
        algorithm=args.algorithm, gpus=args.gpus, batch=args.batch, group=args.group, beta=args.beta,
        prompt_len=args.prompt_len or prompt, completion_len=args.completion_len or completion,
        gpu_memory_gib=args.gpu_memory,
    )  # fmt: skip
    plan = make_plan(spec, base)  # a UserError (exit 2) when nothing fits
    s = plan.setup
    print(f"plan: {s.algorithm} on {spec.name}, {s.gpus} process(es) with one {args.gpu_memory:g} GiB GPU each; "
          f"a plan may use 90% of it")  # fmt: skip
    for setting, value in _settings(plan):
        print(f"  {setting:<26} {value}")
    print(f"  {'rests on':<26} {memory_command(args.model, s)}")
    for line in plan.tried:
        print(f"  {'did not fit':<26} {line}")
    print(format_table(plan.result))
    if args.verify:
        _verify(plan, args)
    return 0


def _settings(plan) -> list[tuple[str, str]]:
    from rlvr.diagnostics.memory_estimate import format_bytes

    s = plan.setup
    return [
        ("training", f"LoRA r={s.lora_rank} on a bfloat16 base" if s.lora_rank else "full fine-tuning in float32"),
        ("sharding", "fsdp2 (1/N of weights, gradients, AdamW state)" if s.zero_stage == 3 else "ddp (whole on each)"),
        ("micro-batch", f"{s.micro_batch} of {s.batch * s.group // s.gpus} sequences per process"),
        ("gradient checkpointing", "on" if s.grad_checkpointing else "off"),
        ("CPU offload", "on: the shards in CPU memory (estimated, not measured on a GPU)" if s.cpu_offload else "off"),
        ("sequence length", f"P = {s.prompt_len} + T = {s.completion_len}; T fits up to {plan.longest_completion:,}"),
        (
            "estimated peak",
            f"{format_bytes(plan.result.components['peak_total'].bytes)} of {format_bytes(plan.budget)}",
        ),
        ("rlvr train", " ".join(f"--set {v}" for v in plan.train_settings())),
    ]


def _verify(plan, args: argparse.Namespace) -> None:
    from rlvr.bases import check_model
    from rlvr.diagnostics.plan_check import comparison, run_estimate, run_step

    check_model(args.model, "--verify trains a step of the plan, so --model must be a model with weights:")
    out = args.out or Path("runs/plan-verify")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; name a new directory")
    print(f"\nverify: one step of this plan on this machine ({plan.setup.gpus} process(es)) -> {out}")
    measured = run_step(plan, args.model, out)
    result = run_estimate(out, plan.setup.gpus)
    if plan.setup.cpu_offload and not result.setup.cpu_offload:
        print("CPU offload moves nothing without a GPU: the estimate beside the measurement is this run's, "
              "with the shards counted where they stay")  # fmt: skip
    print("\n".join(comparison(result, measured)))
