"""Capture one real update of the trainer with every intermediate, as a JSON-ready dict.

The capture walks the same calls as `Trainer.step` in train/loop.py, in the same order (so the
random draws match too): the step's queries, `sample_completions`, the reward function, the
algorithm's advantages, `reference_logprobs`, `accumulate_policy_gradient` (with a hook that keeps
the log-probs each micro-batch's loss saw) and `optimizer_step`. The schema is in docs/inspector.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import torch

from rlvr.algos import ALGORITHMS
from rlvr.diagnostics.grad_noise import MicroBatchNoise
from rlvr.diagnostics.terms import LossInputs, loss_terms
from rlvr.rollout.hf import sample_completions
from rlvr.train.loop import Trainer, batch_queries, reward_tensor
from rlvr.train.update import MicroBatch, accumulate_policy_gradient, optimizer_step, reference_logprobs
from rlvr.types import Query, RolloutBatch

SCHEMA = "rlvr.inspect/1"
POLICY_DIR = "policy"
"""Beside capture.json: the policy weights the captured pass started from (save_pretrained)."""


class LogpRecorder:
    """Hook that stores the log-probs [n, t] each micro-batch's loss saw into one [N, T] tensor."""

    def __init__(self, batch: RolloutBatch):
        self.logp = torch.zeros_like(batch.old_logp)  # [N, T]

    def __call__(self, mb: MicroBatch, logp: torch.Tensor) -> None:
        self.logp[mb.rows, : mb.width] = logp.to(self.logp.dtype)


def chain(*hooks: Callable[[MicroBatch, torch.Tensor], None]) -> Callable[[MicroBatch, torch.Tensor], None]:
    def run(mb: MicroBatch, logp: torch.Tensor) -> None:
        for hook in hooks:
            hook(mb, logp)

    return run


def to_json(values: Any) -> Any:
    """Tensors to nested lists; NaN (an unscorable reward) to null."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        values = values.double().tolist() if values.is_floating_point() else values.tolist()
    if isinstance(values, float):
        return None if math.isnan(values) else values
    if isinstance(values, list):
        return [to_json(v) for v in values]
    if isinstance(values, dict):
        return {k: to_json(v) for k, v in values.items()}
    return values


def capture_update(trainer: Trainer, step: int, out_dir: Path) -> dict[str, Any]:
    """Run loop step `step` (0-based) of `trainer` for real, keep everything; saves the policy the
    captured pass starts from in out_dir/policy. With algo.num_iterations > 1 the last pass is the
    captured one (as in metrics.jsonl)."""
    cfg = trainer.cfg
    queries = batch_queries(trainer.train_queries, step, cfg.train.batch_queries, cfg.train.seed)  # [B]
    batch = sample_completions(
        trainer.policy, trainer.tokenizer, queries, group_size=cfg.rollout.group_size,
        max_new_tokens=cfg.rollout.max_new_tokens, temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
    )
    scored = trainer.reward_fn.score_batch([(batch.query_of(i), t) for i, t in enumerate(batch.texts)])
    rewards = reward_tensor(scored, len(queries), cfg.rollout.group_size)  # [B, G]
    advantages, adv_stats = ALGORITHMS[cfg.algo.algorithm].advantages(
        rewards, eps=cfg.algo.advantage_eps, scale_by_std=cfg.algo.scale_rewards
    )  # [B, G]
    ref_logp = None
    if trainer.reference is not None:
        ref_logp = reference_logprobs(trainer.reference, batch, temperature=cfg.rollout.temperature,
                                      micro_batch_size=cfg.optim.micro_batch_size)  # [N, T]
    for group in trainer.optimizer.param_groups:
        group["lr"] = trainer._learning_rate(step)
    for iteration in range(cfg.algo.num_iterations):
        if iteration == cfg.algo.num_iterations - 1:
            trainer.policy.save_pretrained(out_dir / POLICY_DIR)
            trainer.tokenizer.save_pretrained(out_dir / POLICY_DIR)
        recorder, noise = LogpRecorder(batch), MicroBatchNoise(trainer.policy)
        update = accumulate_policy_gradient(
            trainer.policy, batch, advantages.flatten(), ref_logp, cfg.algo,
            temperature=cfg.rollout.temperature, max_new_tokens=cfg.rollout.max_new_tokens,
            micro_batch_size=cfg.optim.micro_batch_size, on_micro_batch=chain(recorder, noise),
        )
        grad_norm, update_norm = optimizer_step(trainer.policy, trainer.optimizer, cfg.optim.max_grad_norm)
    inputs = LossInputs(recorder.logp, batch.old_logp, ref_logp, advantages.flatten(), batch.completion_mask,
                        cfg.rollout.max_new_tokens)
    return {
        **batch_record(batch, scored, trainer.tokenizer),
        **algorithm_record(cfg, rewards, advantages, adv_stats, inputs),
        "loss": update.loss,
        "stats": to_json(update.stats),
        "grad_norm": grad_norm,
        "update_norm": update_norm,
        "grad_noise": to_json(noise.metrics()),
        "learning_rate": trainer._learning_rate(step),
    }


def config_record(cfg) -> dict[str, Any]:
    a = cfg.algo
    return {
        "algorithm": a.algorithm, "epsilon": a.epsilon,
        "epsilon_high": a.epsilon if a.epsilon_high is None else a.epsilon_high,
        "beta": a.beta, "group_size": cfg.rollout.group_size, "aggregation": a.aggregation,
        "kl_estimator": a.kl_estimator, "scale_rewards": a.scale_rewards, "advantage_eps": a.advantage_eps,
        "num_iterations": a.num_iterations, "temperature": cfg.rollout.temperature,
        "max_new_tokens": cfg.rollout.max_new_tokens, "micro_batch_size": cfg.optim.micro_batch_size,
    }


def batch_record(batch: RolloutBatch, scored, tokenizer) -> dict[str, Any]:
    completions = []
    for i, text in enumerate(batch.texts):
        ids = batch.completion_ids[i][batch.completion_mask[i].bool()].tolist()
        correctness = scored[i].results.get("correctness")
        completions.append({
            "query": i // batch.group_size, "text": text, "token_ids": ids,
            "tokens": [tokenizer.decode([t]) for t in ids], "finish_reason": batch.finish_reasons[i],
            "verdict": None if correctness is None else correctness.verdict.value,
            "detail": None if correctness is None else correctness.detail,
        })
    return {
        "prompts": [q.prompt for q in batch.queries],
        "queries": [{"id": q.id, "prompt": q.prompt, "verifier": q.verifier} for q in batch.queries],
        "completions": completions,
        "prompt_ids": to_json(batch.prompt_ids), "prompt_mask": to_json(batch.prompt_mask),
        "completion_ids": to_json(batch.completion_ids),
    }


def algorithm_record(cfg, rewards, advantages, adv_stats, inputs: LossInputs) -> dict[str, Any]:
    terms = loss_terms(cfg.algo, inputs)
    return {
        "rewards": to_json(rewards), "group_mean": to_json(adv_stats["group_mean"]),
        "group_std": to_json(adv_stats["group_std"]), "advantages": to_json(advantages),
        "mask": to_json(inputs.mask), "logp": to_json(inputs.logp), "old_logp": to_json(inputs.old_logp),
        "ref_logp": to_json(inputs.ref_logp),
        **{k: to_json(terms[k]) for k in ("ratio", "clipped", "kl", "per_token_loss", "token_weight", "row_loss")},
        "counts": terms["counts"],
        "loss_recomputed": float(terms["loss"]),
    }


def rollout_batch(capture: dict[str, Any]) -> RolloutBatch:
    """The captured batch as the trainer held it (the inverse of `batch_record`)."""
    queries = [Query(q["id"], q["prompt"], q["verifier"]) for q in capture["queries"]]
    return RolloutBatch(
        queries=queries, group_size=capture["config"]["group_size"],
        prompt_ids=torch.tensor(capture["prompt_ids"], dtype=torch.long),
        prompt_mask=torch.tensor(capture["prompt_mask"], dtype=torch.long),
        completion_ids=torch.tensor(capture["completion_ids"], dtype=torch.long),
        completion_mask=torch.tensor(capture["mask"], dtype=torch.long),
        old_logp=torch.tensor(capture["old_logp"], dtype=torch.float32),
        texts=[c["text"] for c in capture["completions"]],
        finish_reasons=[c["finish_reason"] for c in capture["completions"]],
    )


def rewards_tensor(capture: dict[str, Any]) -> torch.Tensor:
    return torch.tensor([[math.nan if r is None else r for r in row] for row in capture["rewards"]])  # [B, G]
