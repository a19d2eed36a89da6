"""One policy-gradient update over a batch of rollouts: micro-batched forward/backward, then AdamW.

The loss of each micro-batch is aggregated with whole-batch counts (sequences, tokens), so the
summed micro-batch gradients equal the gradient of one big batch (tests/engine/test_update.py).
Micro-batches group rows of similar length and drop their shared padding, which is where most of
a naive step's wasted compute goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import torch
from transformers import PreTrainedModel

from rlvr.algos import ALGORITHMS, entropy_bonus_loss
from rlvr.algos.gspo import SEQUENCE_STATS
from rlvr.config import AlgoConfig, RunConfig
from rlvr.models.forward import Forward, Runnable
from rlvr.models.logprobs import token_logprobs
from rlvr.models.sharded import full, local, passes_behind, sum_over_shards
from rlvr.types import RolloutBatch

P = TypeVar("P")


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
    model: Runnable,
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
    reference: Runnable, batch: RolloutBatch, *, temperature: float, micro_batch_size: int = 0
) -> torch.Tensor:
    """log π_ref of every sampled token, [N, T] (0 on padding), computed micro-batch by micro-batch."""
    ref_logp = torch.zeros_like(batch.old_logp)  # [N, T]
    for mb in micro_batches(batch, micro_batch_size):
        logp, _ = micro_batch_logprobs(reference, mb, temperature=temperature)  # [n, t]
        ref_logp[mb.rows, : mb.width] = logp.to(ref_logp.dtype)
    return ref_logp


@dataclass
class PartLoss:
    """One part of a batch's loss (a micro-batch, a few DPO pairs): the loss to backpropagate, its
    stats already weighted by the part's share of the batch, and what to run after its backward."""

    loss: torch.Tensor
    stats: dict[str, float]
    after_backward: Callable[[], None] | None = None


def backward_in_parts(parts: Iterable[P], loss_of: Callable[[P], PartLoss]) -> UpdateResult:
    """The one accumulation loop: backpropagate each part's loss into .grad (no optimizer step),
    summing the losses and the weighted stats. Each loss is already divided by whole-batch counts,
    so the summed gradient is the whole batch's (algos/aggregation.py)."""
    loss_total, totals = 0.0, {}
    for part in parts:
        piece = loss_of(part)
        piece.loss.backward()
        if piece.after_backward is not None:
            piece.after_backward()
        loss_total += float(piece.loss.detach())
        for key, value in piece.stats.items():
            totals[key] = totals.get(key, 0.0) + value
    return UpdateResult(loss=loss_total, stats=totals)


def accumulate_policy_gradient(
    policy: Runnable,
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
    loss_mask = batch.policy_mask if loss_mask is None else loss_mask  # [N, T]
    counts = dict(num_sequences=batch.num_completions, num_tokens=int(loss_mask.sum()), max_tokens=max_new_tokens)
    if global_counts is not None:
        counts = global_counts(counts)
    advantages = advantages.to(loss_mask.device)  # computed from the rewards on the CPU; rows index on the device
    loss = PolicyLoss(batch, advantages, ref_logp, loss_mask, algo, counts, temperature, on_micro_batch)
    parts = micro_batches(batch, micro_batch_size)
    behind = passes_behind(len(parts), policy.model if isinstance(policy, Forward) else policy)  # before any pass
    result = backward_in_parts(parts, lambda mb: loss.of(policy, mb))
    for _ in range(behind):
        idle_pass(policy, parts[0], temperature)
    return result


def idle_pass(policy: Runnable, mb: MicroBatch, temperature: float) -> None:
    """A forward/backward pass that adds nothing to any gradient: a sharded policy's process with
    fewer micro-batches than another (DAPO's dynamic sampling keeps unequal numbers of groups on
    each process) takes these until every process has taken as many passes (models/sharded.py)."""
    one = MicroBatch(**{field.name: getattr(mb, field.name)[:1] for field in fields(mb)})  # its first row
    logp, _ = micro_batch_logprobs(policy, one, temperature=temperature)  # [1, t]
    (logp.sum() * 0.0).backward()  # every gradient += 0, and the collectives of one pass run


def accumulate_run_gradient(
    cfg: RunConfig,
    policy: Runnable,
    batch: RolloutBatch,
    advantages: torch.Tensor,  # [N] or [N, T]
    ref_logp: torch.Tensor | None,  # [N, T]
    **options: Any,
) -> UpdateResult:
    """`accumulate_policy_gradient` with a run's settings: algo.*, the rollout temperature and
    length, optim.micro_batch_size; `options` are its loss_mask, on_micro_batch, global_counts."""
    return accumulate_policy_gradient(
        policy,
        batch,
        advantages,
        ref_logp,
        cfg.algo,
        temperature=cfg.rollout.temperature,
        max_new_tokens=cfg.rollout.max_new_tokens,
        micro_batch_size=cfg.optim.micro_batch_size,
        **options,
    )


@dataclass
class PolicyLoss:
    """The clipped policy loss (algo.algorithm) of one batch, micro-batch by micro-batch."""

    batch: RolloutBatch
    advantages: torch.Tensor  # [N] or [N, T]
    ref_logp: torch.Tensor | None  # [N, T]
    mask: torch.Tensor  # [N, T]
    algo: AlgoConfig
    counts: dict[str, int]
    """Whole-batch (or whole-step) sequences, tokens and max_tokens: what each part divides by."""
    temperature: float
    on_micro_batch: Callable[[MicroBatch, torch.Tensor], None] | None = None

    def of(self, policy: Runnable, mb: MicroBatch) -> PartLoss:
        algo, rows, width = self.algo, mb.rows, mb.width
        logp, entropy = micro_batch_logprobs(
            policy, mb, temperature=self.temperature, with_entropy=True, entropy_grad=algo.entropy_coef > 0
        )  # [n, t]
        mb_mask = self.mask[rows, :width]  # [n, t]
        loss, stats = ALGORITHMS[algo.algorithm].loss(
            logp,
            self.batch.old_logp[rows, :width],
            self.advantages[rows] if self.advantages.ndim == 1 else self.advantages[rows, :width],
            mb_mask,
            ref_logp=None if self.ref_logp is None else self.ref_logp[rows, :width],
            epsilon_low=algo.epsilon,
            epsilon_high=algo.epsilon if algo.epsilon_high is None else algo.epsilon_high,
            beta=algo.beta if algo.kl_placement == "loss" else 0.0,
            aggregation=algo.aggregation,
            kl_estimator=algo.kl_estimator,
            **self.counts,
        )
        if algo.entropy_coef > 0:
            bonus = entropy_bonus_loss(
                entropy, mb_mask, coef=algo.entropy_coef, aggregation=algo.aggregation, **self.counts
            )
            loss = loss + bonus  # []
        mb_tokens = float(mb_mask.sum())
        stats["entropy"] = float(torch.where(mb_mask.bool(), entropy.detach(), 0.0).sum()) / max(mb_tokens, 1.0)
        share = mb_tokens / max(self.counts["num_tokens"], 1)  # token share, to turn means into a batch mean
        sequence_share = len(rows) / max(self.counts["num_sequences"], 1)  # the same for per-sequence means
        per_sequence = SEQUENCE_STATS if ALGORITHMS[algo.algorithm].sequence_ratio else ()  # per sequence (TRL)
        weighted = {k: (sequence_share if k in per_sequence else share) * v for k, v in stats.items()}
        after = None if self.on_micro_batch is None else lambda: self.on_micro_batch(mb, logp.detach())
        return PartLoss(loss, weighted, after)


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
    grad_norm = float(full(torch.nn.utils.clip_grad_norm_(params, norm_cap)))  # sharded: the whole gradient's
    groups = optimizer.param_groups
    saved = [group["params"] for group in groups]
    update_sq, stepped = 0.0, False
    try:
        for index, members in enumerate(saved):
            for chunk in _chunks_of_one_tensor([p for p in members if p.grad is not None]):
                for group in groups:
                    group["params"] = []
                groups[index]["params"] = chunk
                before = [local(p.detach()).clone() for p in chunk]
                optimizer.step()
                stepped = True
                update_sq += sum(float(old.sub_(local(p.detach())).pow_(2).sum()) for old, p in zip(before, chunk))
    finally:
        for group, members in zip(groups, saved):
            group["params"] = members
    if not stepped:  # no gradient at all: one plain step, as an unchunked update would take
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return grad_norm, sum_over_shards(update_sq, policy) ** 0.5


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
