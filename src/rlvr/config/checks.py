"""Checks that span fields (a bound on one field is declared on the field, config/schema.py) and
`validate`, which runs them all: the first problem found becomes a ConfigError naming the field and
the fix.

Cheap: nothing heavy is imported unless a setting needs it (vLLM is looked for only with
rollout.backend=vllm).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Callable, Iterable

from rlvr.config.schema import ConfigError, RunConfig, choice_problem, sections
from rlvr.tasks.registry import get_task, registered, task_names

Check = Callable[[RunConfig], "str | None"]
"""fn(cfg) -> what is wrong, or None."""


def _bounds(cfg: RunConfig) -> str | None:
    """The ranges declared on the fields (schema.py `positive`, `unit_interval`, ...)."""
    for section in sections():
        values = getattr(cfg, section)
        for f in dataclasses.fields(values):
            bound = f.metadata.get("bound")
            problem = bound and bound.problem(f"{section}.{f.name}", getattr(values, f.name))
            if problem:
                return problem
    return None


def _micro_batch(cfg: RunConfig) -> str | None:
    n = cfg.train.batch_queries * cfg.rollout.group_size
    mb = cfg.optim.micro_batch_size
    if mb and mb < n and n % mb:
        return (
            f"optim.micro_batch_size={mb} does not divide the batch of {n} completions "
            f"(train.batch_queries * rollout.group_size); pick a divisor of {n}, or 0 for one pass"
        )
    return None


def _health(cfg: RunConfig) -> str | None:
    low_high = cfg.health.entropy_range
    if len(low_high) != 2 or not 0 <= low_high[0] < 1 < low_high[1]:
        return (
            f"health.entropy_range={low_high}: give [low, high], multiples of the first step's entropy with "
            "0 <= low < 1 < high (e.g. [0.01, 3.0])"
        )
    return None


def _eval_ks(cfg: RunConfig) -> str | None:
    n = cfg.train.eval_samples
    bad = [k for k in cfg.train.eval_ks if not 2 <= k <= n]
    if bad:
        return (
            f"train.eval_ks={cfg.train.eval_ks}: each k must be from 2 to train.eval_samples={n} "
            f"(pass@k needs k of the n samples; pass@1 is always logged); got {bad[0]}"
        )
    return None


def _ray_backend(cfg: RunConfig) -> str | None:
    if cfg.reward.backend == "ray" and importlib.util.find_spec("ray") is None:
        return "reward.backend=ray needs the ray package: .venv/bin/pip install -e '.[ray]'"
    return None


TRACKER_PACKAGES: dict[str, tuple[str, str] | None] = {
    "jsonl": None,
    "tensorboard": ("tensorboard", "tensorboard"),
    "wandb": ("wandb", "wandb"),
}
"""The names train.trackers takes, with the (import name, pip extra) of the package each needs;
integrations/trackers.py builds them."""


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ValueError:  # already imported without a spec, or blocked (sys.modules[package] is None)
        return sys.modules.get(package) is not None


def tracker_problem(names: Iterable[str], *, setting: str | None = None) -> str | None:
    """Why these trackers cannot run (unknown name, missing package), or None. Cheap: find_spec only.
    ``setting`` names what asked for them when it is not train.trackers (e.g. train.tensorboard=true)."""
    for name in names:
        if name not in TRACKER_PACKAGES:
            return f"train.trackers: unknown tracker {name!r}; known: {', '.join(TRACKER_PACKAGES)}"
        needs = TRACKER_PACKAGES[name]
        if needs and not _installed(needs[0]):
            asker = setting or f"train.trackers includes {name!r}, which"
            return f"{asker} needs the {needs[0]} package: .venv/bin/pip install -e '.[{needs[1]}]'"
    return None


def _trackers(cfg: RunConfig) -> str | None:
    flag = tracker_problem(["tensorboard"], setting="train.tensorboard=true") if cfg.train.tensorboard else None
    return flag or tracker_problem(cfg.train.trackers)


def _system_prompt(cfg: RunConfig) -> str | None:
    t = cfg.task
    if t.system_prompt and t.prompt_format == "plain":
        return "task.system_prompt needs chat prompts, but task.prompt_format=plain; use prompt_format=chat or auto, or drop system_prompt"
    return None


def _tools(cfg: RunConfig) -> str | None:
    """Tool rollouts run on the hf sampler, and train with the updates whose masks take observations out."""
    r = cfg.rollout
    if r.tools == "none":
        return None
    if r.backend != "hf":
        return (
            f"rollout.tools={r.tools} runs on rollout.backend=hf only (multi-turn sampling on vLLM is not built: "
            "it cannot be tested without a GPU here); use rollout.backend=hf"
        )
    from rlvr.algos import ALGORITHMS  # the algorithm's traits; only where needed: torch loads with it

    algorithm = ALGORITHMS[cfg.algo.algorithm]
    if algorithm.update == "actor_critic":
        usable = ", ".join(name for name, a in ALGORITHMS.items() if a.update != "actor_critic")
        return (
            f"rollout.tools={r.tools} is not available with algo.algorithm={cfg.algo.algorithm}: its critic would "
            f"value tool observations the policy never chose; use one of {usable}, or rollout.tools=none"
        )
    return None


def _task(cfg: RunConfig) -> str | None:
    """task.name is a registered task, no other task's own fields are set, and the task's checks
    (tasks/registry.py) pass."""
    t = cfg.task
    problem = choice_problem("task.name", t.name, task_names())
    if problem:
        return problem
    for other in registered():
        if other.name != t.name and any(getattr(t, name) for name in other.exclusive_fields):
            fields = " / ".join(f"task.{name}" for name in other.exclusive_fields)
            return f"{fields} apply only with task.name={other.name} (got task.name={t.name})"
    task = get_task(t.name)
    for check in task.checks:
        problem = check(cfg)
        if problem:
            return problem
    if task.needs and not _installed(task.needs.module):
        return (
            f"task.name={t.name} needs the {task.needs.name} package: .venv/bin/pip install -e '.[{task.needs.extra}]'"
        )
    return None


def _reasoning(cfg: RunConfig) -> str | None:
    if cfg.reward.reasoning_weight and get_task(cfg.task.name).reasoning_checker is None:
        names = [task.name for task in registered() if task.reasoning_checker is not None]
        return (f"reward.reasoning_weight={cfg.reward.reasoning_weight} needs task.name={' or '.join(names)}, "
                f"the task{'s' if len(names) > 1 else ''} with a reasoning checker (got task.name={cfg.task.name})")  # fmt: skip
    return None


def _lora(cfg: RunConfig) -> str | None:
    m = cfg.model
    if m.lora_dropout != 0:
        return (f"model.lora_dropout must be 0 (got {m.lora_dropout}): rlvr runs the policy in eval mode, where "
                "dropout is off, so it would have no effect")  # fmt: skip
    if not m.lora_rank:
        return None
    if cfg.algo.algorithm == "ppo":
        return (
            f"model.lora_rank={m.lora_rank} is not supported with algo.algorithm=ppo (its critic is a full copy of the "
            "policy's backbone, not wired for adapters); use grpo, gspo, rloo, reinforce_pp or dpo, or model.lora_rank=0"
        )
    if m.forward == "lean":
        return "model.forward=lean reads the base weights and cannot see LoRA adapters; use model.forward=auto or hf with model.lora_rank > 0"
    if not m.lora_target_modules:
        return "model.lora_target_modules is empty; name the modules that get adapters, e.g. q_proj,v_proj"
    if not _installed("peft"):
        return "model.lora_rank > 0 needs the peft package: .venv/bin/pip install -e '.[lora]'"
    return None


def _precision(cfg: RunConfig) -> str | None:
    m = cfg.model
    if m.dtype == "bfloat16" and not m.lora_rank:
        return (
            "model.dtype=bfloat16 needs model.lora_rank > 0: without LoRA the trained weights would be bf16, "
            "which rounds away any update below about 1/500 of a weight (most AdamW steps at RL learning rates); "
            "train adapters (e.g. model.lora_rank=16), or use model.dtype=float32"
        )
    if m.dtype == "bfloat16" and cfg.rollout.dtype == "float32":
        return (
            "model.dtype=bfloat16 keeps the policy in bf16, so it cannot sample in float32 (rollout.dtype=float32); "
            "set rollout.dtype=bfloat16 (the hf sampler then samples with the policy itself, no copy)"
        )
    if m.gradient_checkpointing and m.forward == "lean":
        return (
            "model.gradient_checkpointing=true needs transformers' forward, which recomputes layers in the "
            "backward; model.forward=lean runs its own layers and cannot; use model.forward=auto or hf"
        )
    return None


def _overlong(cfg: RunConfig) -> str | None:
    a = cfg.algo
    if a.overlong_penalty and not 0 < a.overlong_cache <= cfg.rollout.max_new_tokens:
        return (
            f"algo.overlong_cache must be in [1, rollout.max_new_tokens={cfg.rollout.max_new_tokens}] "
            f"(got {a.overlong_cache}): it is the width of the penalty ramp before the length limit"
        )
    return None


def _kl_in_reward(cfg: RunConfig) -> str | None:
    if cfg.algo.kl_placement != "reward":
        return None
    from rlvr.algos import ALGORITHMS  # the algorithm's traits; only where needed: torch loads with it

    if ALGORITHMS[cfg.algo.algorithm].sequence_ratio:
        return (
            f"algo.kl_placement=reward needs per-token advantages, which {cfg.algo.algorithm}'s sequence ratio "
            "cannot use; use kl_placement=loss"
        )
    return None


def _asynchronous(cfg: RunConfig) -> str | None:
    if cfg.rollout.max_staleness and cfg.algo.dynamic_sampling:
        return (
            "algo.dynamic_sampling cannot run with rollout.max_staleness >= 1: DAPO's later sampling rounds "
            "depend on the first round's rewards, so they cannot be sampled ahead; set one of them to 0/false"
        )
    return None


_WEAKENED_ROW_TYPE = {"visible_only": "python", "lenient": "math"}
"""Fidelities that weaken one row type (verifiers/fidelity.py): that type."""


def _sharding(cfg: RunConfig) -> str | None:
    """fsdp2: each process samples, evaluates and exports from a whole copy of the policy in its
    own precision, gathered after every update by the HF sampler (engine/sharding.py)."""
    if cfg.train.sharding != "fsdp2":
        options = cfg.train.sharding_options()
        if not options:
            return None
        name, value, default = options[0]
        return f"train.{name}={value} applies to a sharded policy only: set train.sharding=fsdp2, or train.{name}={default}"
    if cfg.train.fsdp_mixed_precision != "none" and cfg.model.dtype != "float32":
        return (
            f"train.fsdp_mixed_precision={cfg.train.fsdp_mixed_precision} computes in it from float32 shards: "
            f"set model.dtype=float32 (it is {cfg.model.dtype}), or train.fsdp_mixed_precision=none"
        )
    if cfg.rollout.backend != "hf":
        return (
            "train.sharding=fsdp2 samples with rollout.backend=hf only (vLLM beside a sharded policy is not built yet)"
        )
    if cfg.rollout.max_staleness:
        return "train.sharding=fsdp2 runs synchronously only: set rollout.max_staleness=0 (or train.sharding=ddp)"
    if cfg.rollout.dtype != cfg.model.dtype:
        return (
            f"train.sharding=fsdp2 samples from a whole copy in the policy's precision: set rollout.dtype={cfg.model.dtype} "
            f"(model.dtype), or train.sharding=ddp to sample in rollout.dtype={cfg.rollout.dtype}"
        )
    return None


def _fidelity(cfg: RunConfig) -> str | None:
    r = cfg.reward
    noise = r.false_positive_rate or r.false_negative_rate
    if r.fidelity == "noisy" and not noise:
        return "reward.fidelity=noisy needs reward.false_positive_rate or reward.false_negative_rate > 0"
    if r.fidelity != "noisy" and noise:
        return "reward.false_positive_rate / false_negative_rate apply only with reward.fidelity=noisy"
    if r.fidelity == "random" and not r.correctness_weight:
        return "reward.fidelity=random replaces the correctness reward by a coin; set reward.correctness_weight > 0"
    row_type = get_task(cfg.task.name).row_type
    needed = _WEAKENED_ROW_TYPE.get(r.fidelity)
    if needed and row_type is not None and row_type != needed:
        example = next(task.name for task in registered() if task.row_type == needed)
        return (
            f"reward.fidelity={r.fidelity} weakens {needed} rows, but task {cfg.task.name!r} has "
            f"{row_type} rows; use it with a {needed} task (e.g. task.name={example}) or pick another fidelity"
        )
    return None


def sampling_problem(cfg: RunConfig) -> str | None:
    """What is wrong with the sampling settings (backend, precision, TIS), or None; no heavy import
    unless rollout.backend=vllm, which checks for vLLM and a CUDA device before any model loads, or
    algo.tis_cap, which reads the algorithm's traits."""
    r, cap = cfg.rollout, cfg.algo.tis_cap
    if cap > 0:
        from rlvr.algos import ALGORITHMS  # the algorithm's traits; only where needed: torch loads with it

        if not ALGORITHMS[cfg.algo.algorithm].tis:
            usable = ", ".join(name for name, algorithm in ALGORITHMS.items() if algorithm.tis)
            return (
                f"algo.tis_cap is not available with algo.algorithm={cfg.algo.algorithm} (truncated importance "
                f"sampling weights per-token advantages, which only {usable} take); use one of those, or algo.tis_cap=0"
            )
    if r.backend != "vllm":
        return None
    if cfg.model.device == "cpu":
        return "rollout.backend=vllm samples on a CUDA GPU, but model.device=cpu; use model.device=auto, or rollout.backend=hf"
    if importlib.util.find_spec("vllm") is None:
        return (
            "rollout.backend=vllm needs the vllm package, which is not installed; on a CUDA machine install it "
            "into its own venv (see docs/integrations.md, 'Rollouts on GPUs'), or use rollout.backend=hf"
        )
    import torch

    if not torch.cuda.is_available():
        return "rollout.backend=vllm needs a CUDA GPU and torch sees none; run it on a GPU machine, or use rollout.backend=hf"
    return None


_CHECKS: list[Check] = [
    _bounds,
    _tools,
    _system_prompt,
    _micro_batch,
    _eval_ks,
    _health,
    _task,
    _reasoning,
    _trackers,
    _ray_backend,
    _overlong,
    _kl_in_reward,
    _asynchronous,
    _sharding,
    _fidelity,
    sampling_problem,
    _lora,
    _precision,
]


def validate(cfg: RunConfig) -> RunConfig:
    """`cfg` itself when every check passes; else a ConfigError with the first problem."""
    for check in _CHECKS:
        problem = check(cfg)
        if problem:
            raise ConfigError(problem)
    return cfg
