"""`rlvr memory`: estimate accelerator memory by component for training a model with an algorithm."""

from __future__ import annotations

import argparse
import json

from rlvr.cli.common import add_command
from rlvr.diagnostics.memory_model import preset_names


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "memory",
        run,
        help="estimate accelerator memory by component for training a model with an algorithm",
        description="Estimate per-GPU memory, component by component (weights, reference, critic, gradients, "
        "optimizer states, activations, rollout KV cache), for training a Llama-family model. "
        "Formulas and their sources: docs/memory.md.",
    )
    _model_flags(p)
    _batch_flags(p)
    _rollout_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")


def _model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        default="tiny-arith",
        help=f"preset ({', '.join(preset_names())}) or a Hugging Face config.json / model directory",
    )
    p.add_argument(
        "--algorithm", default="grpo", help="an algo.algorithm name: grpo, gspo, ... (docs/algorithms.md; default grpo)"
    )
    p.add_argument(
        "--precision",
        default="bf16-mixed",
        help="fp32, bf16-mixed (fp32 master), fp16-mixed or bf16 (default bf16-mixed)",
    )
    p.add_argument("--optimizer", default="adamw", help="adamw, adam8bit, sgd or sgd-momentum (default adamw)")
    p.add_argument(
        "--lora-rank", type=int, default=0, help="LoRA rank on every linear layer (default 0: full fine-tuning)"
    )
    p.add_argument("--sharding", default="zero0", help="zero0, zero1, zero2, zero3 or fsdp (= zero3) (default zero0)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs the batch and the shards are spread over (default 1)")
    p.add_argument(
        "--cpu-offload",
        action="store_true",
        help="with --sharding fsdp and --gpus 2 or more: the policy's shards in CPU memory (train.fsdp_cpu_offload)",
    )


def _batch_flags(p: argparse.ArgumentParser) -> None:
    lengths = "default: 8 and 40 for tiny-arith (rlvr train's default run), else 256 and 1024, scaled to fit the model's context"
    p.add_argument("--prompt-len", type=int, help=f"prompt tokens P ({lengths})")
    p.add_argument("--completion-len", type=int, help="completion tokens T (see --prompt-len)")
    p.add_argument("--batch", type=int, default=32, help="B: queries per step; DPO: pairs (default 32)")
    p.add_argument("--group", type=int, help="G: completions per query (default 8; DPO: 2, chosen and rejected)")
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward per GPU (default 8)")
    p.add_argument("--grad-checkpointing", action="store_true", help="recompute each layer in the backward")
    p.add_argument("--padding-free", action="store_true", help="sequences packed without padding (no attention mask)")
    p.add_argument(
        "--beta", type=float, default=0.04, help="KL weight; 0 holds no reference for GRPO and PPO (default 0.04)"
    )
    p.add_argument("--reward-model", action="store_true", help="also hold a learned reward model")
    p.add_argument(
        "--online-pairs",
        type=int,
        default=0,
        help="DPO as rlvr trains it: sample --group per query, then train on this many pairs per step "
        "(default 0: offline DPO on --batch given pairs)",
    )


def _rollout_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rollout-backend",
        default="hf",
        help="sampler: hf (transformers generate; rollout.backend) or vllm (a colocated vLLM engine with its "
        "own weights and KV cache) (default hf)",
    )
    p.add_argument(
        "--rollout-dtype",
        default="float32",
        help="sampler precision (rollout.dtype): float32 samples with the policy itself; bfloat16 with a "
        "bf16 copy (hf) or a bf16 engine (vllm) (default float32)",
    )
    p.add_argument(
        "--vllm-gpu-memory-utilization",
        type=float,
        default=0.3,
        help="with --rollout-backend vllm: share of GPU memory vLLM reserves for its weights and KV cache "
        "(default 0.3)",
    )
    p.add_argument(
        "--gpu-memory", type=float, default=80, help="memory of one GPU in GiB; sizes vLLM's reservation (default 80)"
    )


def run(args: argparse.Namespace) -> int:
    from rlvr.diagnostics.memory_estimate import estimate, format_table
    from rlvr.diagnostics.memory_model import load_model_spec
    from rlvr.diagnostics.memory_setup import default_lengths, lengths_line, setup_from_flags

    spec = load_model_spec(args.model)
    result = estimate(spec, setup_from_flags(vars(args), spec))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    print(format_table(result))
    if args.prompt_len is None or args.completion_len is None:  # an assumption the reader must see
        print(lengths_line(result.setup, default_lengths(spec)[2]))
    return 0
