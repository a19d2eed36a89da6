"""One policy-gradient update over a batch of rollouts: micro-batched forward/backward, then AdamW.

The loss of each micro-batch is aggregated with whole-batch counts (sequences, tokens), so the
summed micro-batch gradients equal the gradient of one big batch (tests/train/test_update.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

from rlvr.algos import grpo_loss
from rlvr.config import AlgoConfig
from rlvr.models.logprobs import token_logprobs
from rlvr.types import RolloutBatch


@dataclass
class UpdateResult:
    loss: float
    stats: dict[str, float]
    """Token-weighted means over the whole batch: kl, clip ratios, ratio_mean, entropy."""


def micro_batches(num_rows: int, micro_batch_size: int) -> list[slice]:
    size = micro_batch_size or num_rows
    return [slice(start, min(start + size, num_rows)) for start in range(0, num_rows, size)]


def accumulate_policy_gradient(
    policy: PreTrainedModel,
    batch: RolloutBatch,
    advantages: torch.Tensor,  # [N]
    ref_logp: torch.Tensor | None,  # [N, T]
    algo: AlgoConfig,
    *,
    temperature: float,
    max_new_tokens: int,
    micro_batch_size: int = 0,
) -> UpdateResult:
    """Backpropagate the GRPO loss of the whole batch into policy .grad (no optimizer step)."""
    mask = batch.completion_mask  # [N, T]
    num_tokens = int(mask.sum())
    totals: dict[str, float] = {}
    loss_total = 0.0
    for rows in micro_batches(batch.num_completions, micro_batch_size):
        logp, entropy = token_logprobs(
            policy, batch.prompt_ids[rows], batch.prompt_mask[rows],
            batch.completion_ids[rows], mask[rows], temperature=temperature, with_entropy=True,
        )  # [n, T] each
        loss, stats = grpo_loss(
            logp, batch.old_logp[rows], advantages[rows], mask[rows],
            ref_logp=None if ref_logp is None else ref_logp[rows],
            epsilon_low=algo.epsilon,
            epsilon_high=algo.epsilon if algo.epsilon_high is None else algo.epsilon_high,
            beta=algo.beta, aggregation=algo.aggregation, kl_estimator=algo.kl_estimator,
            num_sequences=batch.num_completions, num_tokens=num_tokens, max_tokens=max_new_tokens,
        )
        loss.backward()
        loss_total += float(loss.detach())
        share = float(mask[rows].sum()) / max(num_tokens, 1)  # token share, to turn means into a batch mean
        stats["entropy"] = float(entropy.sum()) / max(float(mask[rows].sum()), 1.0)
        for key, value in stats.items():
            totals[key] = totals.get(key, 0.0) + share * value
    return UpdateResult(loss=loss_total, stats=totals)


def optimizer_step(
    policy: PreTrainedModel, optimizer: torch.optim.Optimizer, max_grad_norm: float
) -> tuple[float, float]:
    """Clip, step, zero; returns (grad_norm before clipping, update_norm |Δθ|)."""
    params = [p for p in policy.parameters() if p.requires_grad]
    norm_cap = max_grad_norm if max_grad_norm > 0 else float("inf")
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, norm_cap))
    before = [p.detach().clone() for p in params]
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    update_sq = sum(float((p.detach() - b).pow(2).sum()) for p, b in zip(params, before))
    return grad_norm, update_sq**0.5
