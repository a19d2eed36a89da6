"""The parts that sample and score rollouts, built from a run's config: by the trainer
(engine/build.py) and, with rollout.max_staleness >= 1, by the sampler process
(engine/async_rollouts.py), which samples and verifies with parts of its own."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from rlvr.config import RunConfig
from rlvr.meters.hacking import HackingMonitor
from rlvr.models.forward import Forward
from rlvr.rollout.backends import make_sampler
from rlvr.rollout.prompts import PromptFormat, resolve_style
from rlvr.rollout.sampler import Sampler, SamplerSetup
from rlvr.rollout.tools import ToolUse
from rlvr.verifiers import RewardFunction
from rlvr.verifiers.fidelity import training_verifier_for


def build_reward(cfg: RunConfig) -> tuple[RewardFunction, HackingMonitor | None]:
    """The reward (reward.*: gold, or weakened per reward.fidelity) and, for a weakened one, the
    monitor that re-scores a sample of rollouts with the gold verifier (docs/hacking.md)."""
    weights = {"correctness": cfg.reward.correctness_weight, "format": cfg.reward.format_weight}
    if cfg.reward.reasoning_weight:  # computed only when it counts
        weights["reasoning"] = cfg.reward.reasoning_weight
    gold_for = None  # the local registry: this machine's sandbox pool and worker pools
    if cfg.reward.backend == "ray":
        from rlvr.integrations.ray_verify import ray_verifiers_for_run

        gold_for = ray_verifiers_for_run(cfg.reward.ray_address)
    verifier_for = training_verifier_for(cfg.reward, gold_for)
    hacking = HackingMonitor.for_run(cfg.reward, weights, verifier_for, cfg.train.seed)
    watchdog = cfg.reward.verifier_timeout_s or None
    return RewardFunction(weights, verifier_for=verifier_for, timeout_s=watchdog), hacking


def build_prompting(cfg: RunConfig, tokenizer: PreTrainedTokenizerBase) -> tuple[PromptFormat, ToolUse | None]:
    """The prompt format rollouts are encoded with (checked against the tokenizer before any
    sampling), and the tool pool when rollout.tools is set: what sampling and held-out evaluation
    share."""
    prompt_format = PromptFormat.of(cfg.task)
    resolve_style(tokenizer, prompt_format, cfg.model.name)
    return prompt_format, ToolUse.of(cfg.rollout)


def build_sampler(
    cfg: RunConfig, policy: Forward, tokenizer: PreTrainedTokenizerBase, *, own_copy: bool = False
) -> tuple[Sampler, PromptFormat, ToolUse | None]:
    """The rollout backend (rollout.backend), with the prompt format and tool pool it samples with
    (`build_prompting`); `own_copy`: a whole copy of the policy to sample from, which is about to be
    sharded (engine/sharding.py)."""
    prompt_format, tools = build_prompting(cfg, tokenizer)
    setup = SamplerSetup(
        tokenizer, cfg.train.seed, prompt_format=prompt_format, tools=tools, forward=policy, own_copy=own_copy
    )
    sampler = make_sampler(cfg.rollout, policy.model, setup)
    return sampler, prompt_format, tools
