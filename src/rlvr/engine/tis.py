"""Truncated importance sampling in a training step (algo.tis_cap > 0; the math is algos/tis.py).

The sampler's log-probs (RolloutBatch.old_logp) are of π_sampler. Before the update, one no-grad
forward of the policy gives log π_θ_old of the same tokens under the same weights; the clipped
ratio then uses that as its denominator, and each token's advantage is weighted by
w = min(π_θ_old / π_sampler, C).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import torch

from rlvr.algos.tis import tis_advantages, tis_weights
from rlvr.engine.context import Timer
from rlvr.engine.update import reference_logprobs
from rlvr.types import RolloutBatch

if TYPE_CHECKING:
    from rlvr.config import RunConfig
    from rlvr.models.forward import Runnable


def tis_correction(
    cfg: RunConfig, policy: Runnable, batch: RolloutBatch, advantages: torch.Tensor, timer: Timer
) -> tuple[RolloutBatch, torch.Tensor, dict[str, float]]:
    """(batch with old_logp = log π_θ_old, advantages [N, T] weighted by w, sampling/* metrics);
    the inputs unchanged and no metrics when algo.tis_cap = 0."""
    cap = cfg.algo.tis_cap
    if cap <= 0:
        return batch, advantages, {}
    with timer.phase("tis_forward"):
        trainer_logp = reference_logprobs(
            policy,
            batch,
            temperature=cfg.rollout.temperature,
            micro_batch_size=cfg.optim.micro_batch_size,
        )  # [N, T] log π_θ_old: the weights that sampled, or with rollout.max_staleness the newer ones the update starts from
    weight, stats = tis_weights(
        trainer_logp, batch.old_logp, batch.policy_mask, cap=cap, mode=cfg.algo.tis_mode
    )  # [N, T]
    corrected = dataclasses.replace(batch, old_logp=trainer_logp)
    return corrected, tis_advantages(advantages, weight), stats  # advantages [N, T]
