"""The named builders of a run: each takes its config section and returns one part.

    build_run(cfg, checkpoint) → RunParts: the step's context (engine/context.py) plus what the loop
    around it needs (held-out queries, prompt format, tool pool, device)

in the order the parts depend on one another: the process's place and seed, the task, the reward,
the policy, its reference, the critic, the sampler, the optimizer and the memory meter. The
trainer (engine/loop.py), `rlvr inspect` and `rlvr grad-variance` (diagnostics/) all build their
parts here, so a tool runs exactly the parts a run trains with.

On resume the policy is loaded once, from the checkpoint (with LoRA: the base model.name plus the
checkpoint's adapters); the frozen reference is the initial policy, model.name, loaded only when
the algorithm holds one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr import rundir
from rlvr.algos import ALGORITHMS
from rlvr.bases import resolve_model_path
from rlvr.config import RunConfig
from rlvr.engine.async_rollouts import RolloutProcess
from rlvr.engine.checkpoint import load_state, set_rng_state
from rlvr.engine.context import StepContext, batch_queries
from rlvr.engine.critic import Critic
from rlvr.engine.distributed import World, world
from rlvr.engine.exploration import ExplorationTracker
from rlvr.engine.reference import ReferencePolicy, reference_for
from rlvr.engine.rollout_parts import build_prompting, build_reward, build_sampler
from rlvr.engine.sampler_launch import start_early
from rlvr.engine.sharding import load_optimizer_shards, shard_policy
from rlvr.errors import UserError
from rlvr.meters.memory import MemoryMeter
from rlvr.models import load_policy
from rlvr.models.forward import Forward, forward_for
from rlvr.models.lora import add_lora, checkpoint_mismatch, load_adapter
from rlvr.models.sharded import is_sharded
from rlvr.rollout.backends import HFSampler
from rlvr.rollout.heldout import HeldoutResult
from rlvr.rollout.prompts import PromptFormat
from rlvr.rollout.tools import ToolUse
from rlvr.tasks import load_task
from rlvr.types import Query


@dataclass
class RunParts:
    """Everything one run holds: the step's context and what the loop around the steps needs."""

    context: StepContext
    eval_queries: list[Query]
    prompt_format: PromptFormat
    tools: ToolUse | None
    """rollout.tools: the sandbox pool for tool calls, or None."""
    device: str

    def begin(self, step: int) -> None:
        """The run starts at `step`: a sampler process (rollout.max_staleness) starts sampling its
        first batches now, while the trainer evaluates the base model."""
        if isinstance(self.context.sampler, RolloutProcess):
            self.context.sampler.begin(step)

    def close(self) -> None:
        """End the processes the run holds: the sampler process, the tool's sandbox pool and the process group."""
        if isinstance(self.context.sampler, RolloutProcess):
            self.context.sampler.close()
        if self.tools is not None:
            self.tools.close()
        self.context.dist.close()


def require_world_support(name: str, dist: World) -> None:
    """A UserError if `name` cannot train on `dist`'s processes: its update needs the whole batch in
    one place (a critic, pairs, or advantages normalised over the whole batch: REINFORCE++)."""
    if dist.enabled and not ALGORITHMS[name].multi_process:
        usable = ", ".join(n for n, a in ALGORITHMS.items() if a.multi_process)
        raise UserError(
            f"algo.algorithm={name} trains on one process only (its update needs the whole batch in "
            f"one place); launch it without accelerate/torchrun, or use one of: {usable}"
        )


def build_place(cfg: RunConfig) -> tuple[str, World]:
    """This process's device and place among the run's processes (accelerate/torchrun), with the
    torch thread count and seed set: rank 0 keeps the single-process stream."""
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    elif cfg.rollout.max_staleness:  # the sampler process takes rollout.sampler_threads of the cores
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) - cfg.rollout.sampler_threads))
    device = cfg.model.device
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("model.device=cuda but no CUDA device is visible; use model.device=cpu or auto")
    device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    dist = world()
    require_world_support(cfg.algo.algorithm, dist)
    torch.manual_seed(cfg.train.seed + dist.rank)
    return dist.place(device), dist


def build_policy(
    cfg: RunConfig, device: str, checkpoint: Path | None
) -> tuple[Forward, PreTrainedTokenizerBase, ReferencePolicy | None]:
    """π_θ (model.*, with LoRA adapters if model.lora_rank) with the forward pass it runs
    (model.forward, chosen here once: models/forward.py), its tokenizer, and the frozen reference
    when the algorithm holds one (none at β = 0: it would only cost memory; DPO always does)."""
    if checkpoint is not None and (mismatch := checkpoint_mismatch(checkpoint, cfg.model)):
        raise UserError(f"cannot resume from {checkpoint}: it {mismatch}; keep the run's model.lora_* settings")
    precision = {"dtype": cfg.model.dtype, "gradient_checkpointing": cfg.model.gradient_checkpointing}
    holds_reference = ALGORITHMS[cfg.algo.algorithm].holds_reference(cfg.algo.beta)
    full_resume = checkpoint is not None and not cfg.model.lora_rank
    source = resolve_model_path(str(checkpoint) if full_resume else cfg.model.name)  # may build a base (minutes)
    policy, tokenizer = load_policy(source, device, **precision)
    if cfg.model.lora_rank:  # only the adapters train; every process draws the same ones (models/lora.py)
        policy = add_lora(policy, cfg.model, seed=cfg.train.seed)
    if not holds_reference:
        reference = None
    elif full_resume:  # the reference is the initial policy, not the checkpoint's
        initial, _ = load_policy(resolve_model_path(cfg.model.name), device, **precision)
        reference = reference_for(initial, cfg.model.forward)
    else:
        reference = reference_for(policy, cfg.model.forward)
    if checkpoint is not None and cfg.model.lora_rank:
        load_adapter(policy, checkpoint)  # the checkpoint holds the adapters; the base is model.name
    return forward_for(policy, cfg.model.forward), tokenizer, reference


def build_rollout_process(
    cfg: RunConfig, policy: PreTrainedModel, train_queries: list[Query], dist: World, max_staleness: int | None = None
) -> RolloutProcess:
    """rollout.max_staleness >= 1: the sampler process (engine/async_rollouts.py), asked for each
    step's batch as the step would draw it (its B queries, this process's shard). `max_staleness`
    replaces the config's bound: 0 runs the process in lockstep with the trainer."""

    def schedule(step: int) -> list[Query]:
        return dist.shard(batch_queries(train_queries, step, cfg.train.batch_queries, cfg.train.seed))

    bound = cfg.rollout.max_staleness if max_staleness is None else max_staleness
    return RolloutProcess(cfg, policy, schedule, max_staleness=bound, rank=dist.rank)


def build_optimizer(cfg: RunConfig, policy: PreTrainedModel) -> torch.optim.Optimizer:
    """AdamW over the parameters that train (the adapters alone with LoRA)."""
    return torch.optim.AdamW(
        [p for p in policy.parameters() if p.requires_grad], lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay
    )


def build_memory(
    cfg: RunConfig,
    policy: Forward,
    reference: ReferencePolicy | None,
    optimizer: torch.optim.Optimizer,
    critic: Critic | None,
    sampler_copy: PreTrainedModel | None = None,
) -> MemoryMeter:
    """The memory meter (train.memory_metrics), told which tensors belong to which component and
    hooked to the policy's Forward, whose fused forward no module hook sees. `sampler_copy`: the
    HF sampler's own weights (a bfloat16 copy, or a sharded policy's whole one)."""
    models = {"policy": policy.model, "reference": reference.held_copy if reference else None, "sampler": sampler_copy}
    optimizers = {"policy": optimizer}
    if critic is not None:
        models["critic"], optimizers["critic"] = critic.model, critic.optimizer
    return MemoryMeter(
        enabled=cfg.train.memory_metrics, policy=policy.model, models=models, optimizers=optimizers, hooks=policy.hooks
    )


def sampler_copy(sampler) -> PreTrainedModel | None:
    """The weights an in-process HF sampler holds of its own, if any."""
    return sampler.model if isinstance(sampler, HFSampler) and sampler.holds_copy else None


def build_run(cfg: RunConfig, checkpoint: Path | None = None) -> RunParts:
    """Every part of a run, built from `cfg`; resuming from `checkpoint` if given (its optimizer,
    critic and RNG state too: see `restore`)."""
    device, dist = build_place(cfg)
    start_early(cfg)  # rollout.max_staleness: the sampler process loads while this one does (sampler_launch.py)
    train_queries, eval_queries = load_task(cfg.task)
    reward_fn, hacking = build_reward(cfg)
    forward, tokenizer, reference = build_policy(cfg, device, checkpoint)
    critic = Critic(forward.model, cfg.ppo) if ALGORITHMS[cfg.algo.algorithm].critic else None
    if cfg.rollout.max_staleness:  # the sampler runs in its own process; the held-out evaluation still needs these
        prompt_format, tools = build_prompting(cfg, tokenizer)
        sampler = build_rollout_process(cfg, forward.model, train_queries, dist)
    else:
        sharded = cfg.train.sharding == "fsdp2" and dist.enabled
        _refuse_sharding_options_unsharded(cfg, sharded)
        sampler, prompt_format, tools = build_sampler(cfg, forward, tokenizer, own_copy=sharded)
        if sharded:  # after the reference and the sampler took their whole copies
            forward = shard_policy(
                forward, mixed_precision=cfg.train.fsdp_mixed_precision, cpu_offload=cfg.train.fsdp_cpu_offload
            )
    optimizer = build_optimizer(cfg, forward.model)
    context = StepContext(
        cfg=cfg,
        forward=forward,
        tokenizer=tokenizer,
        optimizer=optimizer,
        reference=reference,
        critic=critic,
        sampler=sampler,
        reward_fn=reward_fn,
        train_queries=train_queries,
        hacking=hacking,
        exploration=ExplorationTracker(),
        memory=build_memory(cfg, forward, reference, optimizer, critic, sampler_copy(sampler)),
        dist=dist,
    )
    return RunParts(context, eval_queries, prompt_format, tools, device)


def _refuse_sharding_options_unsharded(cfg: RunConfig, sharded: bool) -> None:
    """One process shards nothing (train.sharding=fsdp2 trains as ddp), so the options of a sharded
    policy would be ignored: say so rather than train without them."""
    options = [] if sharded else cfg.train.sharding_options()
    if options:
        name = options[0][0]
        raise UserError(
            f"train.{name} applies to a policy sharded over several processes, and one process shards nothing: "
            f"launch with torchrun --nproc_per_node N (N >= 2), or leave train.{name} at its default"
        )


@dataclass
class Restored:
    """What a checkpoint says about the run besides its weights and optimizer."""

    step: int
    """The step it was saved after."""
    base_eval: HeldoutResult | None
    """The base model's held-out evaluation, recorded before the first step."""
    best: dict | None = None
    """train.keep_best: {"step", <score name>} of the model in best/ so far."""
    segments: list[dict] = field(default_factory=list)
    """The command runs that made the run so far, each {"from_step", "to_step", "wall_s"} (wall_s None
    where a checkpoint from before segments were recorded does not say)."""


def load_optimizer(context: StepContext, state: dict, checkpoint: Path) -> None:
    """The checkpoint's optimizer state: whole in its state file, or (train.sharding=fsdp2) as
    shards that DCP re-shards for this run's processes (engine/sharding.py)."""
    if state["optimizer"] is not None:
        if is_sharded(context.policy):
            raise UserError(f"{checkpoint} was written without train.sharding=fsdp2; resume it with train.sharding=ddp")
        context.optimizer.load_state_dict(state["optimizer"])
    else:
        load_optimizer_shards(context.policy, context.optimizer, checkpoint / rundir.OPTIMIZER_SHARDS)


def restore(context: StepContext, checkpoint: Path) -> Restored:
    """Load a checkpoint's optimizer, critic and RNG state into `context`, and say where it left off."""
    state = load_state(checkpoint)
    load_optimizer(context, state, checkpoint)
    set_rng_state(state["rng"])
    if context.critic is not None:
        context.critic.load_state_dict(state["critic"])
    if context.dist.is_main:  # rank 0's sets are the ones saved (engine/exploration.py)
        context.exploration.load(state.get("exploration"))
    earlier = state.get("segments") or [{"from_step": 0, "to_step": state["step"], "wall_s": None}]
    return Restored(state["step"], state["base_eval"], state.get("best"), earlier)
