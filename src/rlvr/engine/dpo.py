"""Online DPO's update (Rafailov et al. 2023, eq. 7, with pairs labelled by the verifier), run by
the one step function (engine/step.py) for algorithms whose `update` is "preference":

    the step's verified rollouts → pair a passing with a failing completion of each query
    (algos/dpo.py) → sequence log-probs under π_ref (frozen) and π_θ → DPO loss → AdamW

The sampling and verification are those of the GRPO step; only what is learned from the verdicts
differs. The frozen reference is the initial policy, held for the whole run. The formula lives in
algos/dpo.py; this module only moves tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rlvr.algos import ALGORITHMS, sequence_logprobs
from rlvr.config import AlgoConfig
from rlvr.engine.context import Rollouts, StepContext, StepObserver, Timer
from rlvr.engine.optimize import optimize
from rlvr.engine.reference import ReferencePolicy
from rlvr.engine.update import PartLoss, backward_in_parts, micro_batch_logprobs, micro_batches
from rlvr.models.forward import Runnable
from rlvr.types import RolloutBatch
from rlvr.verifiers import ScoredCompletion


def verdict_tensor(scored: list[ScoredCompletion], num_queries: int, group_size: int) -> torch.Tensor:
    """[B, G] 1.0 pass, 0.0 fail, NaN where the correctness verifier could not judge."""
    values = [float(s.correct) if s.results["correctness"].scorable else float("nan") for s in scored]
    return torch.tensor(values, dtype=torch.float32).view(num_queries, group_size)  # [B, G]


def select_rows(batch: RolloutBatch, rows: torch.Tensor) -> RolloutBatch:
    """The completions `rows` of a batch, in that order, as a batch of their own (groups of one)."""
    return batch.select(rows.tolist(), group_size=1)


@dataclass
class DpoUpdate:
    loss: float
    stats: dict[str, float]
    """Pair-weighted means over the step's pairs (TRL DPOTrainer names)."""
    policy_logp: torch.Tensor | None = None
    """log π_θ(y|x) of the chosen then the rejected completions [2M], as the loss saw them."""


def accumulate_dpo_gradient(
    policy: Runnable,
    batch: RolloutBatch,
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    algo: AlgoConfig,
    *,
    temperature: float,
    micro_batch_size: int = 0,
) -> DpoUpdate:
    """Backpropagate the mean DPO loss over all M pairs into .grad, a few pairs at a time.

    A micro-batch holds both completions of each of its pairs (the loss couples them); its loss
    is divided by the whole step's M, so the summed micro-batch gradients equal the full-batch one.
    """
    dpo = ALGORITHMS[algo.algorithm]
    num_pairs = chosen.shape[0]
    pairs_per_micro = max(1, micro_batch_size // 2) if micro_batch_size else num_pairs
    policy_logp = torch.empty(2 * num_pairs)  # [2M]

    def loss_of(start: int) -> PartLoss:
        part = slice(start, start + pairs_per_micro)
        m = chosen[part].shape[0]
        pair_batch = select_rows(batch, torch.cat([chosen[part], rejected[part]]))  # rows: m chosen, m rejected
        (mb,) = micro_batches(pair_batch, 0)  # one micro-batch, padding trimmed
        logp, _ = micro_batch_logprobs(policy, mb, temperature=temperature)  # [2m, t]
        seq_logp = torch.empty(2 * m, dtype=logp.dtype, device=logp.device)  # [2m]
        seq_logp[mb.rows] = sequence_logprobs(logp, mb.policy_mask)
        loss, stats = dpo.loss(
            seq_logp[:m], seq_logp[m:], ref_chosen[part], ref_rejected[part], beta=algo.dpo_beta, num_pairs=num_pairs
        )
        policy_logp[start : start + m] = seq_logp[:m].detach().float()
        policy_logp[num_pairs + start : num_pairs + start + m] = seq_logp[m:].detach().float()
        return PartLoss(loss, {key: value * m / num_pairs for key, value in stats.items()})

    update = backward_in_parts(range(0, num_pairs, pairs_per_micro), loss_of)
    return DpoUpdate(loss=update.loss, stats=update.stats, policy_logp=policy_logp)


@torch.no_grad()
def reference_sequence_logprobs(
    reference: ReferencePolicy,
    batch: RolloutBatch,
    rows: torch.Tensor,
    *,
    temperature: float,
    micro_batch_size: int,
) -> torch.Tensor:
    """log π_ref(y|x) of the completions `rows`, [len(rows)]."""
    picked = select_rows(batch, rows)
    token_logp = reference.logprobs(picked, temperature=temperature, micro_batch_size=micro_batch_size)  # [n, T]
    return sequence_logprobs(token_logp, picked.policy_mask)  # [n] the policy's own tokens


def preference_update(
    ctx: StepContext, rollouts: Rollouts, ref_logp: torch.Tensor | None, timer: Timer, observer: StepObserver
) -> dict[str, float]:
    """Pairs from the verdicts, then the DPO loss and AdamW; returns the update's metrics. The
    token-level ``ref_logp`` of the policy-gradient kinds is not used: only the pairs' sequences
    are scored under π_ref."""
    cfg, batch = ctx.cfg, rollouts.batch
    outcomes = verdict_tensor(rollouts.scored, len(batch.queries), batch.group_size)  # [B, G]
    chosen, rejected, counts = ALGORITHMS[cfg.algo.algorithm].pairs(
        outcomes, max_pairs_per_group=cfg.algo.dpo_pairs_per_group
    )  # [M], [M]
    update, norms = DpoUpdate(float("nan"), {}), {"grad_norm": 0.0, "update_norm": 0.0}
    if counts["pairs"]:  # no pair, no preference: the policy is left as it is
        with timer.phase("reference"):
            ref = reference_sequence_logprobs(
                ctx.reference,
                batch,
                torch.cat([chosen, rejected]),
                temperature=cfg.rollout.temperature,
                micro_batch_size=cfg.optim.micro_batch_size,
            )  # [2M]

        def accumulate() -> DpoUpdate:
            return accumulate_dpo_gradient(
                ctx.forward,
                batch,
                chosen,
                rejected,
                ref[: len(chosen)],
                ref[len(chosen) :],
                cfg.algo,
                temperature=cfg.rollout.temperature,
                micro_batch_size=cfg.optim.micro_batch_size,
            )

        update, norms = optimize(ctx, timer, observer, accumulate)
        m = len(chosen)
        margins = (update.policy_logp[:m] - ref[:m].float()) - (update.policy_logp[m:] - ref[m:].float())  # [M]
        observer.pairs(
            {
                "chosen": chosen,
                "rejected": rejected,
                "policy_chosen": update.policy_logp[:m],
                "policy_rejected": update.policy_logp[m:],
                "ref_chosen": ref[:m],
                "ref_rejected": ref[m:],
                "margins": margins,
            }
        )
    return {
        "loss": update.loss,
        **update.stats,
        "dpo/pairs": counts["pairs"],
        "dpo/groups_no_pass": counts["groups_no_pass"],
        "dpo/groups_no_fail": counts["groups_no_fail"],
        **norms,
    }
