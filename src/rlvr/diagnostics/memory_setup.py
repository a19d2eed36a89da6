"""What `rlvr train` runs, as `rlvr memory` sees it: a run config's TrainingSetup, and the command
line that prints its estimate; and the TrainingSetup that `rlvr memory`'s flags describe. benchmarks/gpu_check.py prints both beside what a GPU measured;
docs/gpu.md shows them for the GPU recipe."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlvr.algos import ALGORITHMS
from rlvr.config import RolloutConfig
from rlvr.diagnostics.memory_estimate import SHARDING_STAGES, TrainingSetup
from rlvr.errors import UserError

if TYPE_CHECKING:
    from rlvr.config import RunConfig
    from rlvr.diagnostics.memory_model import ModelSpec


def setup_for_run(
    cfg: RunConfig, *, prompt_len: int, gpu_memory_gib: float = 80.0, processes: int = 1
) -> TrainingSetup:
    """The setup `rlvr train` runs with `cfg` on one of `processes` GPUs (train.sharding=fsdp2 shards
    the policy over them: ZeRO-3), for `estimate`: P = prompt_len (the padded
    prompt width, which depends on the data) and T = rollout.max_new_tokens. model.dtype=bfloat16
    (LoRA only) is bf16-mixed: bf16 base weights and activations, and float32 adapters with float32
    gradients and AdamW states, 4 + 4 + 8 = 16 B per trained parameter, as bf16-mixed's 2 + 2 + 12."""
    m, r = cfg.model, cfg.rollout
    if cfg.algo.algorithm == "dpo":
        raise UserError(
            "setup_for_run: dpo trains on the pairs each step forms; give TrainingSetup online_pairs yourself"
        )
    sequences = cfg.train.batch_queries * r.group_size
    sharded = cfg.train.sharding == "fsdp2" and processes > 1
    # offloaded shards leave the device's memory only where there is a device: on a CPU they stay in what is counted
    offload = sharded and cfg.train.fsdp_cpu_offload and cfg.model.device != "cpu" and _cuda()
    return TrainingSetup(
        algorithm=cfg.algo.algorithm,
        precision="fp32" if m.dtype == "float32" else "bf16-mixed",
        optimizer="adamw",
        lora_rank=m.lora_rank,
        prompt_len=prompt_len,
        completion_len=r.max_new_tokens,
        batch=cfg.train.batch_queries,
        group=r.group_size,
        micro_batch=min(cfg.optim.micro_batch_size or sequences, sequences // processes),  # per process
        grad_checkpointing=m.gradient_checkpointing,
        zero_stage=3 if sharded else 0,
        gpus=processes,
        cpu_offload=offload,
        beta=cfg.algo.beta,
        rollout_backend=r.backend,
        rollout_dtype=r.dtype,
        vllm_gpu_memory_utilization=r.vllm_gpu_memory_utilization,
        gpu_memory_gib=gpu_memory_gib,
    )


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def memory_command(model: str, setup: TrainingSetup) -> str:
    """The `rlvr memory` command line that prints `estimate(load_model_spec(model), setup)`: the
    precision and the batch's shape always, any other flag when it differs from its default."""
    shape = {
        "precision": "--precision", "lora_rank": "--lora-rank", "prompt_len": "--prompt-len",
        "completion_len": "--completion-len", "batch": "--batch", "group": "--group", "micro_batch": "--micro-batch",
    }  # fmt: skip
    others = {
        "algorithm": "--algorithm", "optimizer": "--optimizer", "beta": "--beta",
        "rollout_backend": "--rollout-backend", "rollout_dtype": "--rollout-dtype",
        "vllm_gpu_memory_utilization": "--vllm-gpu-memory-utilization", "gpu_memory_gib": "--gpu-memory",
        "gpus": "--gpus",
    }  # fmt: skip
    default = TrainingSetup()
    words = ["rlvr", "memory", "--model", model]
    for name, flag in (shape | others).items():
        value = getattr(setup, name)
        if name in shape or value != getattr(default, name):
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if setup.zero_stage:
        words += ["--sharding", "fsdp" if setup.zero_stage == 3 else f"zero{setup.zero_stage}"]
    if setup.cpu_offload:
        words.append("--cpu-offload")
    if setup.grad_checkpointing:
        words.append("--grad-checkpointing")
    return " ".join(words)


def default_group(algorithm: str, online_pairs: int = 0) -> int:
    """G when `rlvr memory --group` is not given: 8 completions per query when DPO forms its pairs
    online, else the algorithm's registry value (`memory_group_size`; offline DPO: 2)."""
    return 8 if online_pairs else ALGORITHMS[algorithm].memory_group_size


LONG_PROMPT_LEN, LONG_COMPLETION_LEN = 256, 1024
"""P and T when the model says nothing shorter: a long-answer task (GSM8K-style prompts, reasoning)."""
ARITH_PROMPT_LEN = 8
"""P of `rlvr train`'s default task with tiny-arith: arith prompts padded to 7 characters + BOS
(docs/memory.md; tests/diagnostics/test_memory_setup.py encodes them to check)."""


def default_lengths(spec: ModelSpec) -> tuple[int, int, str]:
    """(P, T, where they come from) when `rlvr memory` is not given --prompt-len / --completion-len:
    for the tiny-arith preset those `rlvr train` runs with by default (arith prompts,
    rollout.max_new_tokens); otherwise 256 + 1024, scaled down to the model's context when the
    config's max_position_embeddings is shorter."""
    if spec.name == "tiny-arith":
        return ARITH_PROMPT_LEN, RolloutConfig().max_new_tokens, "rlvr train's default run on tiny-arith"
    prompt, completion = LONG_PROMPT_LEN, LONG_COMPLETION_LEN
    if spec.context is None or prompt + completion <= spec.context:
        return prompt, completion, "the defaults for a long-answer task"
    prompt = spec.context // 5  # 256 : 1024 is 1 : 4
    return prompt, spec.context - prompt, f"256 + 1024 scaled to the model's {spec.context}-token context"


def lengths_line(setup: TrainingSetup, why: str) -> str:
    """The sequence lengths an estimate assumed, and why, for the table's reader (when a flag did not give them)."""
    return (
        f"sequences: P = {setup.prompt_len} prompt + T = {setup.completion_len} completion tokens "
        f"({why}; --prompt-len and --completion-len set them)"
    )


def setup_from_flags(flags: Mapping[str, Any], spec: ModelSpec | None = None) -> TrainingSetup:
    """The TrainingSetup of `rlvr memory`'s flags, by their argparse names (`vars(args)`): each field
    from the flag of its name, zero_stage from --sharding, gpu_memory_gib from --gpu-memory, G
    from `default_group` when --group is not given, and P and T from `default_lengths(spec)` when
    their flags are not given (None). An unknown algorithm or sharding is refused."""
    algorithm, sharding = flags["algorithm"], flags["sharding"]
    if algorithm not in ALGORITHMS:
        raise UserError(f"--algorithm {algorithm}: unknown; pick one of {', '.join(ALGORITHMS)}")
    if sharding not in SHARDING_STAGES:
        raise UserError(f"--sharding {sharding}: unknown; pick one of {', '.join(SHARDING_STAGES)}")
    values = {field.name: flags[field.name] for field in dataclasses.fields(TrainingSetup) if field.name in flags}
    if flags["group"] is None:
        values["group"] = default_group(algorithm, flags["online_pairs"])
    prompt, completion, _ = default_lengths(spec) if spec else (LONG_PROMPT_LEN, LONG_COMPLETION_LEN, "")
    for name, length in (("prompt_len", prompt), ("completion_len", completion)):
        if values.get(name) is None:
            values[name] = length
    values |= {"zero_stage": SHARDING_STAGES[sharding], "gpu_memory_gib": flags["gpu_memory"]}
    return TrainingSetup(**values)
