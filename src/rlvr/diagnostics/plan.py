"""`rlvr plan`: the settings under which a run fits a GPU, chosen from the memory estimate.

For a model, an algorithm, a GPU's memory and a number of processes, the planner tries, in the
order of what they cost, the ways rlvr lowers each process's memory, and keeps the first that fits
(`estimate` of diagnostics/memory_estimate.py, the numbers `rlvr memory` prints):

1. full fine-tuning in float32, the whole policy on every process (train.sharding=ddp);
2. the same sharded over the processes (train.sharding=fsdp2; several processes only):
   communication per layer, which a GPU overlaps with compute;
3. and 4. the two above with gradient checkpointing (model.gradient_checkpointing): about one more
   forward pass per step;
5. sharded and checkpointed with the shards in CPU memory (train.fsdp_cpu_offload; several
   processes only): host-device copies of every layer's weights and gradients each pass, and
   AdamW on the CPU (its saving is estimated, not measured on a GPU);
6. and 7. LoRA adapters of rank 16 on a bfloat16 base (model.lora_rank, model.dtype=bfloat16),
   without then with checkpointing: a different training, where only the adapters learn.

Within a tier the largest micro-batch that fits wins (optim.micro_batch_size: the gradient is the
same, only the number of passes changes). A plan fits when its estimated peak is at most
`HEADROOM` of the GPU's memory: the rest is for the CUDA context, the allocator's fragmentation and
what the estimate leaves out (docs/memory.md, "Not measured"). For the chosen settings the planner
also finds the longest completion that still fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rlvr.diagnostics.memory_estimate import Estimate, TrainingSetup, estimate, format_bytes
from rlvr.diagnostics.memory_model import ModelSpec
from rlvr.errors import UserError

HEADROOM = 0.9
"""A plan fits when its estimated peak is at most this share of one GPU's memory."""
LORA_RANK = 16
"""The LoRA rank the planner falls back to (model.lora_rank)."""


@dataclass(frozen=True)
class Tier:
    """One way of training, before the micro-batch is chosen."""

    label: str
    sharded: bool = False
    checkpointing: bool = False
    lora: bool = False
    offload: bool = False

    def setup(self, base: TrainingSetup) -> TrainingSetup:
        """`base` trained this way: full fine-tuning in fp32, or LoRA on a bf16 base sampling in bf16."""
        lora = {"lora_rank": LORA_RANK, "precision": "bf16-mixed", "rollout_dtype": "bfloat16"}
        full = {"lora_rank": 0, "precision": "fp32", "rollout_dtype": "float32"}
        return replace(
            base,
            **(lora if self.lora else full),
            zero_stage=3 if self.sharded else 0,
            grad_checkpointing=self.checkpointing,
            cpu_offload=self.offload,
        )


def tiers(processes: int) -> list[Tier]:
    """The ways of training in the order the planner tries them (module docstring)."""
    sharding = [False, True] if processes > 1 else [False]
    full = [
        Tier(("sharded" if s else "whole") + (", checkpointed" if c else ""), sharded=s, checkpointing=c)
        for c in (False, True)
        for s in sharding
    ]
    offload = [Tier("sharded, checkpointed, CPU offload", sharded=True, checkpointing=True, offload=True)]
    lora = [
        Tier(f"LoRA r={LORA_RANK}" + (", checkpointed" if c else ""), checkpointing=c, lora=True) for c in (False, True)
    ]
    return [*full, *(offload if processes > 1 else []), *lora]


@dataclass
class Plan:
    """The chosen settings, the estimate they rest on, and what was tried before them."""

    tier: Tier
    result: Estimate
    budget: float
    """Bytes a plan may use on one GPU: HEADROOM x its memory."""
    longest_completion: int
    """The longest completion (tokens, at the same prompt length) that fits with these settings."""
    tried: list[str]
    """One line per tier that did not fit, at its smallest micro-batch."""

    @property
    def setup(self) -> TrainingSetup:
        return self.result.setup

    def train_settings(self) -> list[str]:
        """The `rlvr train --set` values that run this plan (the batch's shape and the model are the run's own)."""
        s = self.setup
        settings = [
            f"optim.micro_batch_size={s.micro_batch}",
            f"model.gradient_checkpointing={str(s.grad_checkpointing).lower()}",
            f"train.sharding={'fsdp2' if s.zero_stage == 3 else 'ddp'}",
        ]
        if s.cpu_offload:
            settings.append("train.fsdp_cpu_offload=true")
        if s.lora_rank:
            settings += [f"model.lora_rank={s.lora_rank}", "model.dtype=bfloat16", "rollout.dtype=bfloat16"]
        return settings


def peak(spec: ModelSpec, setup: TrainingSetup) -> float:
    return estimate(spec, setup).components["peak_total"].bytes


def micro_batches(setup: TrainingSetup) -> list[int]:
    """Micro-batch sizes a process can run, largest first: the divisors of its share of the step's sequences."""
    share = setup.batch * setup.group // setup.gpus
    return [m for m in range(share, 0, -1) if share % m == 0]


def make_plan(spec: ModelSpec, base: TrainingSetup) -> Plan:
    """The first tier (in `tiers` order) with a micro-batch whose estimated peak fits `base`'s GPU;
    a UserError naming the smallest need when none does."""
    budget = HEADROOM * base.gpu_memory_gib * 2**30
    tried: list[str] = []
    for tier in tiers(base.gpus):
        shaped = tier.setup(base)
        for micro in micro_batches(shaped):
            candidate = replace(shaped, micro_batch=micro)
            result = estimate(spec, candidate)
            if result.components["peak_total"].bytes <= budget:
                return Plan(tier, result, budget, longest_completion(spec, candidate, budget), tried)
        smallest = replace(shaped, micro_batch=1)
        tried.append(f"{tier.label}, micro-batch 1: {format_bytes(peak(spec, smallest))}")
    raise UserError(
        f"no plan fits {base.gpus} GPU(s) of {base.gpu_memory_gib:g} GiB (a plan may use {HEADROOM:.0%}, "
        f"{format_bytes(budget)}): the smallest, {tried[-1]}. Use more or larger GPUs (--gpus, --gpu-memory), "
        f"or shorter sequences (--completion-len, --prompt-len) or a smaller batch (--batch, --group)"
    )


def longest_completion(spec: ModelSpec, setup: TrainingSetup, budget: float, limit: int = 1 << 17) -> int:
    """The largest completion length T (the prompt as given) whose estimate fits `budget`, by
    bisection (the peak grows with T); capped at the model's context or `limit`."""
    top = min(limit, spec.context - setup.prompt_len) if spec.context else limit
    low, high = setup.completion_len, top  # low fits (the plan was chosen at it)
    if peak(spec, replace(setup, completion_len=high)) <= budget:
        return high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if peak(spec, replace(setup, completion_len=mid)) <= budget else (low, mid)
    return low
