"""One policy-gradient update over a batch of rollouts: micro-batched forward/backward, then AdamW.

The loss of each micro-batch is aggregated with whole-batch counts (sequences, tokens), so the
summed micro-batch gradients equal the gradient of one big batch (tests/engine/test_update.py).
Micro-batches group rows of similar length and drop their shared padding, which is where most of
a naive step's wasted compute goes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

from rlvr.algos import ALGORITHMS, entropy_bonus_loss
from rlvr.algos.gspo import SEQUENCE_STATS
from rlvr.config import AlgoConfig
from rlvr.models.logprobs import token_logprobs
from rlvr.types import RolloutBatch


@dataclass
class UpdateResult:
    loss: float
    stats: dict[str, float]
    """Token-weighted means over the whole batch: kl, clip ratios, ratio_mean, entropy."""


@dataclass
class MicroBatch:
    """Some rows of a RolloutBatch with the padding columns they all share cut off."""

    rows: torch.Tensor  # [n] indices into the batch
    prompt_ids: torch.Tensor  # [n, p] p <= P
    prompt_mask: torch.Tensor  # [n, p]
    completion_ids: torch.Tensor  # [n, t] t <= T
    completion_mask: torch.Tensor  # [n, t] every token the model attends to
    policy_mask: torch.Tensor  # [n, t] the policy's own tokens (tool observations left out)

    @property
    def width(self) -> int:
        return self.completion_ids.shape[1]


def micro_batches(batch: RolloutBatch, micro_batch_size: int) -> list[MicroBatch]:
    """Split the batch into micro-batches of rows of similar length, each trimmed to its longest row.

    Sorting by length first means little padding is left to trim, and padding is most of the
    compute a naive split wastes on short completions. Which rows go together does not change the
    loss or the gradient: aggregation uses whole-batch counts (algos/aggregation.py).
    """
    lengths = batch.prompt_mask.sum(dim=1) + batch.completion_mask.sum(dim=1)  # [N]
    order = torch.argsort(lengths, stable=True)  # [N]
    groups = order.split(micro_batch_size or batch.num_completions)
    return [_trim(batch, rows.sort().values) for rows in groups]


def _trim(batch: RolloutBatch, rows: torch.Tensor) -> MicroBatch:
    prompt_mask = batch.prompt_mask[rows]  # [n, P] left-padded
    completion_mask = batch.completion_mask[rows]  # [n, T] right-padded
    first = int(prompt_mask.any(dim=0).long().argmax())  # first column with a real prompt token
    width = int(completion_mask.sum(dim=1).max())  # longest completion among these rows
    return MicroBatch(
        rows=rows,
        prompt_ids=batch.prompt_ids[rows, first:],
        prompt_mask=prompt_mask[:, first:],
        completion_ids=batch.completion_ids[rows, :width],
        completion_mask=completion_mask[:, :width],
        policy_mask=batch.policy_mask[rows, :width],
    )


def micro_batch_logprobs(
    model: PreTrainedModel,
    mb: MicroBatch,
    *,
    temperature: float,
    with_entropy: bool = False,
    entropy_grad: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    return token_logprobs(
        model,
        mb.prompt_ids,
        mb.prompt_mask,
        mb.completion_ids,
        mb.completion_mask,
        temperature=temperature,
        with_entropy=with_entropy,
        entropy_grad=entropy_grad,
    )  # [n, t] each


@torch.no_grad()
def reference_logprobs(
    reference: PreTrainedModel, batch: RolloutBatch, *, temperature: float, micro_batch_size: int = 0
) -> torch.Tensor:
    """log π_ref of every sampled token, [N, T] (0 on padding), computed micro-batch by micro-batch."""
    ref_logp = torch.zeros_like(batch.old_logp)  # [N, T]
    for mb in micro_batches(batch, micro_batch_size):
        logp, _ = micro_batch_logprobs(reference, mb, temperature=temperature)  # [n, t]
        ref_logp[mb.rows, : mb.width] = logp.to(ref_logp.dtype)
    return ref_logp


def accumulate_policy_gradient(
    policy: PreTrainedModel,
    batch: RolloutBatch,
    advantages: torch.Tensor,  # [N] or [N, T]
    ref_logp: torch.Tensor | None,  # [N, T]
    algo: AlgoConfig,
    *,
    temperature: float,
    max_new_tokens: int,
    micro_batch_size: int = 0,
    on_micro_batch: Callable[[MicroBatch, torch.Tensor], None] | None = None,
    loss_mask: torch.Tensor | None = None,  # [N, T]
    global_counts: Callable[[dict[str, int]], dict[str, int]] | None = None,
) -> UpdateResult:
    """Backpropagate the policy loss (algo.algorithm) of the whole batch into .grad (no optimizer step).

    `advantages` is one value per completion, or one per token (KL in the reward, PPO's GAE).
    `loss_mask` (default: the policy's tokens, batch.policy_mask) removes tokens from the loss, the KL
    term, the entropy and their counts: tool observations, and DAPO's overlong filtering; the
    forward pass still sees every completion token.
    With `algo.kl_placement == "reward"` the KL is already in the advantages, so the loss gets β = 0.
    `on_micro_batch(mb, logp [n, t])`, if given, runs after each micro-batch's backward: the
    diagnostics read the per-micro-batch gradient (meters/grad_noise.py) and the log-probs
    the loss saw (diagnostics/inspector.py) there.
    `global_counts`, when the batch is one process's shard of the step (engine/distributed.py),
    turns this batch's counts into the whole step's; the loss and stats are then this shard's
    share of the step's, and their sums over processes are the step's.
    """
    policy_loss = ALGORITHMS[algo.algorithm].loss
    loss_mask = batch.policy_mask if loss_mask is None else loss_mask  # [N, T]
    num_tokens = int(loss_mask.sum())
    beta = algo.beta if algo.kl_placement == "loss" else 0.0
    counts = dict(num_sequences=batch.num_completions, num_tokens=num_tokens, max_tokens=max_new_tokens)
    if global_counts is not None:
        counts = global_counts(counts)
        num_tokens = counts["num_tokens"]
    totals: dict[str, float] = {}
    sequence_stats = SEQUENCE_STATS if ALGORITHMS[algo.algorithm].sequence_ratio else ()  # per sequence (TRL)
    loss_total = 0.0
    for mb in micro_batches(batch, micro_batch_size):
        logp, entropy = micro_batch_logprobs(
            policy, mb, temperature=temperature, with_entropy=True, entropy_grad=algo.entropy_coef > 0
        )  # [n, t]
        mb_mask = loss_mask[mb.rows, : mb.width]  # [n, t]
        mb_advantages = advantages[mb.rows] if advantages.ndim == 1 else advantages[mb.rows, : mb.width]
        loss, stats = policy_loss(
            logp,
            batch.old_logp[mb.rows, : mb.width],
            mb_advantages,
            mb_mask,
            ref_logp=None if ref_logp is None else ref_logp[mb.rows, : mb.width],
            epsilon_low=algo.epsilon,
            epsilon_high=algo.epsilon if algo.epsilon_high is None else algo.epsilon_high,
            beta=beta,
            aggregation=algo.aggregation,
            kl_estimator=algo.kl_estimator,
            **counts,
        )
        if algo.entropy_coef > 0:
            loss = loss + entropy_bonus_loss(
                entropy, mb_mask, coef=algo.entropy_coef, aggregation=algo.aggregation, **counts
            )  # []
        loss.backward()
        if on_micro_batch is not None:
            on_micro_batch(mb, logp.detach())
        loss_total += float(loss.detach())
        mb_tokens = float(mb_mask.sum())
        share = mb_tokens / max(num_tokens, 1)  # token share, to turn means into a batch mean
        sequence_share = len(mb.rows) / max(counts["num_sequences"], 1)  # the same for per-sequence means
        stats["entropy"] = float(torch.where(mb_mask.bool(), entropy.detach(), 0.0).sum()) / max(mb_tokens, 1.0)
        for key, value in stats.items():
            totals[key] = totals.get(key, 0.0) + (sequence_share if key in sequence_stats else share) * value
    return UpdateResult(loss=loss_total, stats=totals)


def optimizer_step(
    policy: PreTrainedModel, optimizer: torch.optim.Optimizer, max_grad_norm: float
) -> tuple[float, float]:
    """Clip, step, zero; returns (grad_norm before clipping, update_norm |Δθ|).

    |Δθ| is exact, θ after minus θ before, without copying the whole model first: the step runs
    on chunks of parameters (each param group's list is narrowed to one chunk at a time; every
    gradient stays in place), so only that chunk is copied. A chunk holds at most as many elements
    as the largest parameter tensor (with tied embeddings, the embedding), so the extra memory is
    one such tensor, not a second model. This is the same step for any optimizer that updates each
    parameter from its own gradient and state (SGD, Adam, AdamW); step hooks run once per chunk.
    """
    params = [p for p in policy.parameters() if p.requires_grad]
    norm_cap = max_grad_norm if max_grad_norm > 0 else float("inf")
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, norm_cap))
    groups = optimizer.param_groups
    saved = [group["params"] for group in groups]
    update_sq, stepped = 0.0, False
    try:
        for index, members in enumerate(saved):
            for chunk in _chunks_of_one_tensor([p for p in members if p.grad is not None]):
                for group in groups:
                    group["params"] = []
                groups[index]["params"] = chunk
                before = [p.detach().clone() for p in chunk]
                optimizer.step()
                stepped = True
                update_sq += sum(float(old.sub_(p.detach()).pow_(2).sum()) for old, p in zip(before, chunk))
    finally:
        for group, members in zip(groups, saved):
            group["params"] = members
    if not stepped:  # no gradient at all: one plain step, as an unchunked update would take
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return grad_norm, update_sq**0.5


def _chunks_of_one_tensor(params: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """`params` in consecutive chunks of at most max(numel) elements each."""
    budget = max((p.numel() for p in params), default=0)
    chunks: list[list[torch.Tensor]] = []
    size = 0
    for p in params:
        if not chunks or size + p.numel() > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(p)
        size += p.numel()
    return chunks
