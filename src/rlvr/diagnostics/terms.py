"""Every per-token quantity of one loss evaluation, from the shipped loss function itself.

The inspector and the replay never write a loss formula: they call `ALGORITHMS[name].loss` (the
function engine/update.py calls) with `return_token_stats=True` and differentiate its output with
respect to the log-probs. The per-token weight w_{i,t} = ∂loss/∂logp_{i,t} is then exactly how
hard the update pushes up (w < 0) or down (w > 0) each sampled token, with clipping, KL and
aggregation all folded in.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rlvr.algos import AGGREGATIONS, ALGORITHMS
from rlvr.config import AlgoConfig


@dataclass
class LossInputs:
    """The tensors a policy loss takes, for the whole batch of one step."""

    logp: torch.Tensor  # [N, T] log π_θ (as the trainer's micro-batches computed it)
    old_logp: torch.Tensor  # [N, T] log π_old, from the sampler
    ref_logp: torch.Tensor | None  # [N, T] log π_ref, None when β = 0 and no reference is held
    advantages: torch.Tensor  # [N], or [N, T] with KL in the reward or TIS weights
    mask: torch.Tensor  # [N, T] the loss's tokens
    max_tokens: int
    """rollout.max_new_tokens (the "constant" aggregation's normaliser)."""


def loss_kwargs(algo: AlgoConfig, inputs: LossInputs) -> dict:
    """The keyword arguments engine/update.py passes to the loss, with whole-batch counts."""
    return dict(
        ref_logp=inputs.ref_logp,
        epsilon_low=algo.epsilon,
        epsilon_high=algo.epsilon if algo.epsilon_high is None else algo.epsilon_high,
        beta=algo.beta if algo.kl_placement == "loss" else 0.0,  # in the reward, the KL is in the advantages
        aggregation=algo.aggregation,
        kl_estimator=algo.kl_estimator,
        num_sequences=inputs.logp.shape[0],
        num_tokens=int(inputs.mask.sum()),
        max_tokens=inputs.max_tokens,
    )


def loss_terms(algo: AlgoConfig, inputs: LossInputs) -> dict[str, torch.Tensor]:
    """loss [], stats, per-token tensors [N, T] (per_token_loss, ratio, clipped, kl, ...),
    token_weight [N, T] = ∂loss/∂logp, and row_loss [N]: each completion's share of the loss."""
    logp = inputs.logp.detach().clone().requires_grad_(True)  # [N, T]
    kwargs = loss_kwargs(algo, inputs)
    loss, stats, tokens = ALGORITHMS[algo.algorithm].loss(
        logp, inputs.old_logp, inputs.advantages, inputs.mask, **kwargs, return_token_stats=True
    )
    (token_weight,) = torch.autograd.grad(loss, logp)  # [N, T]
    aggregate = AGGREGATIONS[algo.aggregation]
    counts = {k: kwargs[k] for k in ("num_sequences", "num_tokens", "max_tokens")}
    # Every aggregation is a sum over rows divided by a constant, so the rows' shares add up to the loss.
    row_loss = torch.stack(
        [aggregate(tokens["per_token_loss"][i : i + 1], inputs.mask[i : i + 1], **counts) for i in range(logp.shape[0])]
    )  # [N]
    return {
        "loss": loss.detach(),
        "stats": stats,
        **tokens,
        "token_weight": token_weight,
        "row_loss": row_loss,
        "counts": counts,
    }
