"""How the policy gradient's noise depends on the group size G, at an equal number of prompts.

For each G, the same policy samples G completions for each of the same B prompts; each prompt's
group is one sample of the estimator: its gradient G_b is the loss of that group alone (the
trainer's loss function and aggregation, over its G completions), and the step's gradient is
their mean. McCandlish et al.'s two-batch-size estimate (grad_noise.py) with B_small = 1 prompt
and B_big = B prompts then gives, in units of prompts, tr(Σ_G) (the per-prompt covariance with G
samples per prompt), |G|², the variance of the step's gradient tr(Σ_G)/B and B_simple. Following
the paper, tr(Σ) and |G|² are averaged over the batches before they are divided.

The batches come from the trainer's own step code (engine/step.py): ``collect_rollouts`` with the
configured sampler, dynamic sampling and overlong penalty, ``reference_logp``, and
``policy_gradient_inputs`` (advantages, KL in the reward, TIS, overlong filter), so each G_b is
the gradient of the loss the trainer would take on that group. Only the optimizer step is left
out: this measures gradients, it does not train.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

import torch
from tqdm import tqdm

from rlvr.config import RunConfig
from rlvr.diagnostics.capture import to_json
from rlvr.engine.build import build_run
from rlvr.engine.context import StepContext, Timer, batch_queries
from rlvr.engine.rollouts import collect_rollouts
from rlvr.engine.step import LossInputs, policy_gradient_inputs, reference_logp
from rlvr.engine.update import accumulate_run_gradient
from rlvr.meters.grad_noise import GradientReader, estimate_noise
from rlvr.types import RolloutBatch


@dataclass
class GroupSizeRow:
    group_size: int
    trace: float
    """tr(Σ) per prompt, averaged over batches."""
    sq_norm: float
    """Unbiased |G|², averaged over batches."""
    prompts: int
    batches: int
    reward: float
    frac_zero_std: float

    @property
    def variance(self) -> float:
        return self.trace / self.prompts

    @property
    def noise_scale(self) -> float:
        return self.trace / self.sq_norm if self.sq_norm > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "variance": self.variance, "noise_scale": self.noise_scale}


def select_rows(batch: RolloutBatch, query: int) -> RolloutBatch:
    """The G rows of one query, as a batch of its own."""
    g = batch.group_size
    return batch.select(list(range(query * g, (query + 1) * g)))


def _rows(tensor: torch.Tensor | None, rows: slice) -> torch.Tensor | None:
    return None if tensor is None else tensor[rows]


def prompt_gradients(
    ctx: StepContext, inputs: LossInputs, reader: GradientReader, ref_logp: torch.Tensor | None
) -> tuple[float, torch.Tensor]:
    """(mean_b |G_b|², mean_b G_b [D]) over the batch's prompts, one backward per prompt."""
    cfg, policy, batch = ctx.cfg, ctx.forward, inputs.batch
    sq_total, total = 0.0, None
    for b in range(len(batch.queries)):
        rows = slice(b * batch.group_size, (b + 1) * batch.group_size)
        ctx.policy.zero_grad(set_to_none=True)
        accumulate_run_gradient(
            cfg,
            policy,
            select_rows(batch, b),
            inputs.advantages[rows],
            _rows(ref_logp, rows),
            loss_mask=_rows(inputs.mask, rows),
        )
        gradient = reader.read().double()  # [D]
        sq_total += reader.sq_norm(gradient)
        total = gradient if total is None else total + gradient
    ctx.policy.zero_grad(set_to_none=True)
    count = len(batch.queries)
    return sq_total / count, total / count


def measure_group_size(context: StepContext, group_size: int, batches: int) -> GroupSizeRow:
    ctx = dataclasses.replace(context, cfg=copy.deepcopy(context.cfg))
    ctx.cfg.rollout.group_size = group_size
    cfg = ctx.cfg
    reader = GradientReader(ctx.policy)
    traces, sq_norms, rewards, zero_std = [], [], [], []
    for index in range(batches):
        torch.manual_seed(cfg.train.seed * 7919 + index)  # the same draws for every G at this batch index
        queries = batch_queries(ctx.train_queries, index, cfg.train.batch_queries, cfg.train.seed)  # [B]
        timer = Timer()
        rollouts = collect_rollouts(ctx, index, queries, timer)
        ref_logp = reference_logp(ctx, rollouts, timer)  # [N, T] or None
        inputs = policy_gradient_inputs(ctx.cfg, ctx.forward, rollouts, ref_logp, timer)
        small_sq, mean_gradient = prompt_gradients(ctx, inputs, reader, ref_logp)
        found = estimate_noise(small_sq, reader.sq_norm(mean_gradient), 1, len(inputs.batch.queries))
        traces.append(found.trace)
        sq_norms.append(found.sq_norm)
        rewards.append(float(rollouts.rewards.nanmean()))
        zero_std.append(float(inputs.stats["frac_zero_std"]))
    return GroupSizeRow(
        group_size, fmean(traces), fmean(sq_norms), cfg.train.batch_queries, batches, fmean(rewards), fmean(zero_std)
    )


def measure_group_sizes(
    cfg: RunConfig, group_sizes: list[int], batches: int, *, progress: bool = True
) -> list[GroupSizeRow]:
    """One row per G, all from the policy of `cfg` (model.name) on the same prompts."""
    parts = build_run(copy.deepcopy(cfg))
    try:
        return [
            measure_group_size(parts.context, group_size, batches)
            for group_size in tqdm(group_sizes, desc="group sizes", unit="G", disable=not progress)
        ]
    finally:
        parts.close()


def write_report(cfg: RunConfig, rows: list[GroupSizeRow], path: str | Path) -> None:
    """The JSON report of `rlvr grad-variance`: the model, algorithm, whole config and one row per G
    (a NaN, e.g. B_simple with |G|^2 = 0, is written as null)."""
    report = {
        "model": cfg.model.name,
        "algorithm": cfg.algo.algorithm,
        "config": cfg.to_dict(),
        "rows": [row.to_dict() for row in rows],
    }
    Path(path).write_text(json.dumps(to_json(report), indent=2) + "\n")


def format_table(rows: list[GroupSizeRow]) -> str:
    lines = [
        f"{'G':>4} {'prompts':>7} {'completions':>11} {'tr(Sigma)/prompt':>16} {'|G|^2':>10} "
        f"{'variance':>10} {'B_simple':>9} {'reward':>7} {'zero-std':>8}"
    ]
    for r in rows:
        lines.append(
            f"{r.group_size:>4} {r.prompts:>7} {r.prompts * r.group_size:>11} {r.trace:>16.5f} "
            f"{r.sq_norm:>10.5f} {r.variance:>10.6f} {r.noise_scale:>9.2f} {r.reward:>7.3f} "
            f"{r.frac_zero_std:>8.3f}"
        )
    return "\n".join(lines)
