"""Capture one real update of the trainer with every intermediate, as a JSON-ready dict.

The capture runs the trainer's own step (engine/step.py ``run_step``) with a ``Recorder``: the
step's hooks hand it the rollouts, the reference log-probs, the advantages the loss is fed, the
log-probs each micro-batch's loss saw, and PPO's values and returns or DPO's pairs. Nothing of the
step is written again here, so what is shown is the update the trainer takes. The schema is in
docs/inspector.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from rlvr.algos import ALGORITHMS, tis_weights
from rlvr.diagnostics.terms import LossInputs, loss_terms
from rlvr.engine.context import Rollouts, StepContext, StepObserver
from rlvr.engine.step import run_step
from rlvr.engine.update import MicroBatch
from rlvr.types import Query, RolloutBatch

SCHEMA = "rlvr.inspect/2"
POLICY_DIR = "policy"
"""Beside capture.json: the policy weights the captured pass started from (save_pretrained; with
LoRA the adapters alone, the base being model.name)."""


class LogpRecorder:
    """Hook that stores the log-probs [n, t] each micro-batch's loss saw into one [N, T] tensor."""

    def __init__(self, batch: RolloutBatch):
        self.logp = torch.zeros_like(batch.old_logp)  # [N, T]

    def __call__(self, mb: MicroBatch, logp: torch.Tensor) -> None:
        self.logp[mb.rows, : mb.width] = logp.to(self.logp.dtype)


class Recorder(StepObserver):
    """Keeps what the step's hooks hand over; on the last pass over the batch, saves the policy the
    pass starts from and the log-probs its loss sees."""

    def __init__(self, context: StepContext, out_dir: Path):
        self.context, self.out_dir = context, out_dir
        self.ref_logp: torch.Tensor | None = None
        self.advantage_stats: dict[str, Any] = {}
        self.logp: LogpRecorder | None = None
        self.values = self.returns = self.gae = None
        self.pair_record: dict[str, torch.Tensor] | None = None

    def rollouts(self, rollouts: Rollouts) -> None:
        self.rollouts_seen = rollouts

    def reference(self, ref_logp: torch.Tensor | None) -> None:
        self.ref_logp = ref_logp

    def advantages(
        self, batch: RolloutBatch, advantages: torch.Tensor, mask: torch.Tensor, stats: dict[str, Any]
    ) -> None:
        self.loss_batch, self.loss_advantages, self.loss_mask, self.advantage_stats = batch, advantages, mask, stats

    def iteration(self, index: int, last: bool) -> None:
        if last:
            self.context.policy.save_pretrained(self.out_dir / POLICY_DIR)
            self.context.tokenizer.save_pretrained(self.out_dir / POLICY_DIR)
            self.logp = LogpRecorder(self.rollouts_seen.batch)

    def micro_batch(self, mb: MicroBatch, logp: torch.Tensor) -> None:
        if self.logp is not None:
            self.logp(mb, logp)

    def critic(self, values: torch.Tensor, returns: torch.Tensor, advantages: torch.Tensor) -> None:
        self.values, self.returns, self.gae = values, returns, advantages

    def pairs(self, record: dict[str, torch.Tensor]) -> None:
        self.pair_record = record


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


def capture_update(context: StepContext, step: int, out_dir: Path, recorded: Rollouts | None = None) -> dict[str, Any]:
    """Run step `step` (0-based) of a run's parts for real (``run_step``; on the flight recorder's
    batch `recorded` if given) and keep everything; saves the policy the captured pass starts from
    in out_dir/policy. With algo.num_iterations > 1 the last pass is the captured one (as in
    metrics.jsonl)."""
    recorder = Recorder(context, out_dir)
    metrics = run_step(context, step, recorder, recorded)
    rollouts, cfg = recorder.rollouts_seen, context.cfg
    record = {
        **batch_record(rollouts.batch, rollouts.scored, context.tokenizer),
        "rewards": to_json(rollouts.rewards),
        "loss": to_json(metrics["loss"]),  # NaN (a DPO step with no pair) is null, as everywhere in the file
        "stats": to_json({k: v for k, v in metrics.items() if k in STAT_KEYS}),
        "grad_norm": metrics["grad_norm"],
        "update_norm": metrics["update_norm"],
        "grad_noise": to_json({k: v for k, v in metrics.items() if k.startswith("grad/")}),
        "learning_rate": metrics["learning_rate"],
        "metrics": to_json(metrics),
    }
    update = ALGORITHMS[cfg.algo.algorithm].update
    if update == "preference":
        return {**record, **pairs_record(recorder)}
    record |= algorithm_record(cfg, recorder, rollouts)
    if update == "actor_critic":
        record |= {
            "values": to_json(recorder.values),
            "returns": to_json(recorder.returns),
            "gae_advantages": to_json(recorder.gae),
        }
    return record


STAT_KEYS = (
    "kl",
    "entropy",
    "ratio_mean",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "clip_ratio/region_mean",
    "rewards/chosen",
    "rewards/rejected",
    "rewards/accuracies",
    "rewards/margins",
    "logps/chosen",
    "logps/rejected",
)
"""The loss's own statistics among a step's metrics (TRL names)."""


def config_record(cfg) -> dict[str, Any]:
    a = cfg.algo
    return {
        "algorithm": a.algorithm,
        "epsilon": a.epsilon,
        "epsilon_high": a.epsilon if a.epsilon_high is None else a.epsilon_high,
        "beta": a.beta,
        "group_size": cfg.rollout.group_size,
        "aggregation": a.aggregation,
        "kl_estimator": a.kl_estimator,
        "scale_rewards": a.scale_rewards,
        "advantage_eps": a.advantage_eps,
        "num_iterations": a.num_iterations,
        "temperature": cfg.rollout.temperature,
        "max_new_tokens": cfg.rollout.max_new_tokens,
        "micro_batch_size": cfg.optim.micro_batch_size,
        "lora_rank": cfg.model.lora_rank,
    }


def batch_record(batch: RolloutBatch, scored, tokenizer) -> dict[str, Any]:
    """The batch's queries, completions and token ids; with tool rollouts also `tool_mask` [N][T]
    (1: the policy's token, 0: a tool observation) and `turns` [N] (rollout/tools.py)."""
    completions = []
    for i, text in enumerate(batch.texts):
        ids = batch.completion_ids[i][batch.completion_mask[i].bool()].tolist()
        correctness = scored[i].results.get("correctness")
        completions.append(
            {
                "query": i // batch.group_size,
                "text": text,
                "token_ids": ids,
                "tokens": [tokenizer.decode([t]) for t in ids],
                "finish_reason": batch.finish_reasons[i],
                "verdict": None if correctness is None else correctness.verdict.value,
                "detail": None if correctness is None else correctness.detail,
            }
        )
    record = {
        "prompts": [q.prompt for q in batch.queries],
        "queries": [{"id": q.id, "prompt": q.prompt, "verifier": q.verifier} for q in batch.queries],
        "completions": completions,
        "prompt_ids": to_json(batch.prompt_ids),
        "prompt_mask": to_json(batch.prompt_mask),
        "completion_ids": to_json(batch.completion_ids),
    }
    if batch.tool_mask is not None:  # tool rollouts (rollout.tools): which tokens are the policy's, and the turns
        record["tool_mask"] = to_json(batch.tool_mask)
        record["turns"] = to_json(batch.turns)
    if batch.versions is not None:  # rollout.max_staleness: the policy version that sampled each token
        record["versions"] = to_json(batch.versions)
    return record


def algorithm_record(cfg, recorder: Recorder, rollouts: Rollouts) -> dict[str, Any]:
    """The policy-gradient loss of the captured pass, tensor by tensor, recomputed from the exported
    tensors with the shipped loss (diagnostics/terms.py) as a check."""
    batch, stats = recorder.loss_batch, recorder.advantage_stats
    inputs = LossInputs(
        recorder.logp.logp,
        batch.old_logp,
        recorder.ref_logp,
        recorder.loss_advantages,
        recorder.loss_mask,
        cfg.rollout.max_new_tokens,
    )
    terms = loss_terms(cfg.algo, inputs)
    shape = rollouts.rewards.shape  # [B, G]
    if inputs.advantages.ndim == 1:
        per_completion = inputs.advantages.view(shape)  # [B, G]
    else:  # per token (KL in the reward, TIS, GAE): each completion's token mean, for the overview
        mask = inputs.mask.to(inputs.advantages.dtype)  # [N, T]
        per_completion = ((inputs.advantages * mask).sum(1) / mask.sum(1).clamp(min=1)).view(shape)  # [B, G]
    record = {
        "group_mean": to_json(stats.get("group_mean")),
        "group_std": to_json(stats.get("group_std")),
        "advantages": to_json(per_completion),
        "mask": to_json(inputs.mask),
        "completion_mask": to_json(batch.completion_mask),
        "logp": to_json(inputs.logp),
        "old_logp": to_json(inputs.old_logp),
        "ref_logp": to_json(inputs.ref_logp),
        **{k: to_json(terms[k]) for k in ("ratio", "clipped", "kl", "per_token_loss", "token_weight", "row_loss")},
        "counts": terms["counts"],
        "loss_recomputed": float(terms["loss"]),
    }
    if inputs.advantages.ndim == 2:
        record["token_advantages"] = to_json(inputs.advantages)  # [N, T], what the loss is fed
    if batch is not rollouts.batch:  # TIS: the loss's old_logp is π_θ_old's; the sampler's is kept too
        record["sampler_logp"] = to_json(rollouts.batch.old_logp)
        weight, _ = tis_weights(
            batch.old_logp, rollouts.batch.old_logp, batch.policy_mask, cap=cfg.algo.tis_cap, mode=cfg.algo.tis_mode
        )  # [N, T] the weight each token's surrogate got (folded into token_advantages)
        record["is_weight"] = to_json(weight)
        ratio = torch.exp(batch.old_logp.double() - rollouts.batch.old_logp.double())  # [N, T]
        record["is_cut"] = to_json((ratio > cfg.algo.tis_cap) & batch.policy_mask.bool())  # truncated or masked
    return record


def pairs_record(recorder: Recorder) -> dict[str, Any]:
    """DPO: the pairs the loss saw (row indices into completions), their sequence log-probs under
    π_θ and π_ref, and each pair's margin (log π_θ/π_ref of chosen − of rejected, before β)."""
    return {"pairs": to_json(recorder.pair_record or {})}


def rollout_batch(capture: dict[str, Any]) -> RolloutBatch:
    """The captured batch as the trainer held it (the inverse of `batch_record`)."""
    queries = [Query(q["id"], q["prompt"], q["verifier"]) for q in capture["queries"]]
    return RolloutBatch(
        queries=queries,
        group_size=capture["config"]["group_size"],
        prompt_ids=torch.tensor(capture["prompt_ids"], dtype=torch.long),
        prompt_mask=torch.tensor(capture["prompt_mask"], dtype=torch.long),
        completion_ids=torch.tensor(capture["completion_ids"], dtype=torch.long),
        completion_mask=torch.tensor(capture.get("completion_mask", capture["mask"]), dtype=torch.long),
        old_logp=torch.tensor(capture["old_logp"], dtype=torch.float32),
        texts=[c["text"] for c in capture["completions"]],
        finish_reasons=[c["finish_reason"] for c in capture["completions"]],
        # tool rollouts: the loss sees batch.policy_mask (observations left out), as in the trainer
        tool_mask=None if capture.get("tool_mask") is None else torch.tensor(capture["tool_mask"], dtype=torch.long),
        turns=capture.get("turns"),
    )


def rewards_tensor(capture: dict[str, Any]) -> torch.Tensor:
    return torch.tensor([[math.nan if r is None else r for r in row] for row in capture["rewards"]])  # [B, G]
