"""One step's rollouts: sample G completions per query, verify, shape rewards; with DAPO's dynamic
sampling (Yu et al. 2025, arXiv:2503.14476, §3.2), sample further rounds of queries until the
batch holds B groups whose rewards are not all equal.

The filter and the length penalty are pure functions in algos/dapo.py; this module only decides
which queries to sample and stitches the kept groups into one RolloutBatch.
"""

from __future__ import annotations

import random
from contextlib import nullcontext
from typing import TYPE_CHECKING

import torch

from rlvr.algos import groups_with_signal, overlong_filter_mask, overlong_penalty
from rlvr.engine.context import Rollouts, StepContext, Timer
from rlvr.types import Query, RolloutBatch
from rlvr.verifiers import RewardFunction, ScoredCompletion
from rlvr.verifiers.fidelity import coins

if TYPE_CHECKING:
    from rlvr.config import RunConfig
    from rlvr.meters.memory import MemoryMeter
    from rlvr.rollout.sampler import Sampler


def select_groups(batch: RolloutBatch, scored: list[ScoredCompletion], groups: list[int]) -> tuple[RolloutBatch, list]:
    """The rows of the given groups (query indices), in order; tensors keep their padded width."""
    g = batch.group_size
    rows = [q * g + i for q in groups for i in range(g)]
    return batch.select(rows), [scored[r] for r in rows]


def _pad_to(x: torch.Tensor, width: int, value: int | float, *, left: bool) -> torch.Tensor:
    extra = width - x.shape[1]
    pad = torch.full((x.shape[0], extra), value, dtype=x.dtype, device=x.device)  # [n, extra]
    return torch.cat([pad, x] if left else [x, pad], dim=1)


def concat_batches(batches: list[RolloutBatch], pad_id: int) -> RolloutBatch:
    """Stack batches of one group size: prompts re-padded on the left, completions on the right."""
    p = max(b.prompt_ids.shape[1] for b in batches)
    t = max(b.completion_ids.shape[1] for b in batches)
    return RolloutBatch(
        queries=[q for b in batches for q in b.queries],
        group_size=batches[0].group_size,
        prompt_ids=torch.cat([_pad_to(b.prompt_ids, p, pad_id, left=True) for b in batches]),  # [N, P]
        prompt_mask=torch.cat([_pad_to(b.prompt_mask, p, 0, left=True) for b in batches]),  # [N, P]
        completion_ids=torch.cat([_pad_to(b.completion_ids, t, pad_id, left=False) for b in batches]),  # [N, T]
        completion_mask=torch.cat([_pad_to(b.completion_mask, t, 0, left=False) for b in batches]),  # [N, T]
        old_logp=torch.cat([_pad_to(b.old_logp, t, 0.0, left=False) for b in batches]),  # [N, T]
        texts=[x for b in batches for x in b.texts],
        finish_reasons=[x for b in batches for x in b.finish_reasons],
        tool_mask=None
        if batches[0].tool_mask is None
        else torch.cat([_pad_to(b.tool_mask, t, 0, left=False) for b in batches]),  # [N, T]
        turns=None if batches[0].turns is None else [x for b in batches for x in b.turns],
        versions=None
        if batches[0].versions is None
        else torch.cat([_pad_to(b.versions, t, -1, left=False) for b in batches]),  # [N, T]
    )


def loss_mask(batch: RolloutBatch, overlong_filter: bool) -> torch.Tensor | None:
    """The tokens the loss sees: the policy's (tool observations left out) with truncated samples
    removed (DAPO overlong filtering), or None (= batch.policy_mask)."""
    if not overlong_filter:
        return None
    truncated = torch.tensor([r == "length" for r in batch.finish_reasons])  # [N]
    return overlong_filter_mask(batch.policy_mask, truncated)  # [N, T]


def reward_tensor(scored: list[ScoredCompletion], num_queries: int, group_size: int) -> torch.Tensor:
    """[B, G] rewards; NaN where the verifier could not judge (kept out of the group baseline)."""
    values = [float("nan") if s.reward is None else s.reward for s in scored]
    return torch.tensor(values, dtype=torch.float32).view(num_queries, group_size)  # [B, G]


def sample_round(
    cfg: RunConfig,
    sampler: Sampler,
    reward_fn: RewardFunction,
    queries: list[Query],
    timer: Timer,
    key: str,
    *,
    rank: int = 0,
    memory: MemoryMeter | None = None,
) -> Rollouts:
    """Sample and verify one round (`key`: its step and round; `rank`: the training process's) with
    `sampler` and `reward_fn`: the trainer's own, or the sampler process's (engine/async_rollouts.py);
    rewards [B, G] with DAPO's overlong penalty if configured, the correctness part a coin per
    rollout with reward.fidelity=random."""
    with timer.phase("generate"), memory.rollout() if memory is not None else nullcontext():
        batch = sampler.sample(  # rollout.backend: rollout/backends.py
            queries,
            group_size=cfg.rollout.group_size,
            max_new_tokens=cfg.rollout.max_new_tokens,
            temperature=cfg.rollout.temperature,
            top_p=cfg.rollout.top_p,
        )
    with timer.phase("verify"):
        items = [(batch.query_of(i), t) for i, t in enumerate(batch.texts)]
        coin = None
        if cfg.reward.fidelity == "random":  # each process its own coins; rank 0 keeps the one-process key
            suffix = f"/rank{rank}" if rank else ""
            coin = coins(cfg.train.seed, key + suffix, len(items), cfg.reward.random_rate)
        scored = reward_fn.score_batch(items, coin)
    rewards = reward_tensor(scored, len(queries), cfg.rollout.group_size)  # [B, G]
    if cfg.algo.overlong_penalty:
        lengths = batch.completion_mask.sum(dim=1)  # [N]
        penalty = overlong_penalty(
            lengths, max_length=cfg.rollout.max_new_tokens, cache_length=cfg.algo.overlong_cache
        )  # [N]
        rewards = rewards + penalty.view_as(rewards)  # [B, G]; NaN (unscorable) stays NaN
    return Rollouts(batch, scored, rewards)


def _round(ctx: StepContext, queries: list[Query], timer: Timer, key: str) -> Rollouts:
    """One round sampled and verified by the trainer's own sampler and reward."""
    return sample_round(ctx.cfg, ctx.sampler, ctx.reward_fn, queries, timer, key, rank=ctx.dist.rank, memory=ctx.memory)


def collect_rollouts(ctx: StepContext, step: int, queries: list[Query], timer: Timer) -> Rollouts:
    """The step's rollouts; with `algo.dynamic_sampling`, DAPO's over-sample-and-filter loop.

    Round 0 samples the step's own queries; each further round samples B other training queries,
    drawn from a stream that is a pure function of (seed, step, round), so resumed runs repeat it.
    Groups whose rewards are all equal are dropped; sampling stops once B groups are kept or after
    `algo.max_sampling_rounds` rounds. If the cap is hit the step trains on the groups it kept
    (fewer than B); if it kept none, on round 0's batch, whose advantages are all 0.
    """
    cfg = ctx.cfg
    first = _round(ctx, queries, timer, f"{step}-0")
    if not cfg.algo.dynamic_sampling:
        return first
    wanted, kept, generated, rounds = len(queries), [], 0, 0
    current = first
    while True:
        keep = groups_with_signal(current.rewards).nonzero().flatten().tolist()  # group indices
        generated, rounds = generated + len(current.batch.queries), rounds + 1
        if keep:
            batch, scored = select_groups(current.batch, current.scored, keep)
            kept.append(Rollouts(batch, scored, current.rewards[keep]))
        if sum(len(k.batch.queries) for k in kept) >= wanted or rounds >= cfg.algo.max_sampling_rounds:
            break
        pool = random.Random(f"{cfg.train.seed}-{step}-{rounds}")
        current = _round(ctx, pool.sample(ctx.train_queries, wanted), timer, f"{step}-{rounds}")
    result = _merge(kept, wanted, ctx.tokenizer.pad_token_id) if kept else first
    result.metrics = {
        "dynamic_sampling/rounds": rounds,
        "dynamic_sampling/generated_groups": generated,
        "dynamic_sampling/kept_groups": len(result.batch.queries) if kept else 0,
    }
    return result


def _merge(kept: list[Rollouts], wanted: int, pad_id: int) -> Rollouts:
    """The first `wanted` kept groups, in sampling order, as one batch."""
    batch = concat_batches([k.batch for k in kept], pad_id)
    scored = [s for k in kept for s in k.scored]
    rewards = torch.cat([k.rewards for k in kept])  # [B', G]
    if len(batch.queries) > wanted:
        batch, scored = select_groups(batch, scored, list(range(wanted)))
        rewards = rewards[:wanted]  # [B, G]
    return Rollouts(batch, scored, rewards)
