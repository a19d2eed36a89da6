"""How a per-token loss [N, T] becomes one scalar: the normalisation GRPO variants argue about.

Every mode has the signature

    fn(per_token_loss [N, T], mask [N, T], *, num_sequences, num_tokens, max_tokens) -> scalar

where `num_sequences` and `num_tokens` (= mask.sum()) count the WHOLE batch of one optimizer
step, not the rows passed in. Each mode is then a plain sum over rows divided by a constant, so a
caller that splits the N rows into micro-batches and adds up the micro-batch losses gets exactly
the full-batch loss and gradient (tests/algos/test_aggregation.py checks this).

| mode            | formula                                    | paper                 | TRL loss_type  |
|-----------------|--------------------------------------------|-----------------------|----------------|
| "sequence_mean" | Σ_i (Σ_t l·m / Σ_t m) / num_sequences      | DeepSeekMath eq. 3    | "grpo"         |
| "token_mean"    | Σ_i Σ_t l·m / num_tokens                   | DAPO eq. 8            | "bnpo", "dapo" |
| "constant"      | Σ_i Σ_t l·m / (num_sequences · max_tokens) | Dr. GRPO §3.1         | "dr_grpo"      |
| "sequence_sum"  | Σ_i Σ_t l·m / num_sequences                | RLOO eq. 5            | (RLOOTrainer)  |

TRL's "bnpo" divides by the tokens of the local (per-device, per-micro-batch) batch and "dapo" by
the tokens of the whole accumulated global batch; both are "token_mean" here, with `num_tokens`
being whichever count the caller passes (the whole step's count reproduces "dapo"). For
"constant", TRL's `max_completion_length` is the generation limit (max_new_tokens), not the
padded width T; pass it as `max_tokens`. "sequence_sum" is not a GRPOTrainer loss_type: it is how
TRL's RLOOTrainer aggregates, summing each completion's token log-probs into one sequence
log-prob and averaging the per-sequence losses over sequences.

Masked positions are selected out with `torch.where`, not multiplied by 0, so a NaN or inf there
(padding garbage) never reaches the loss; a fully masked row contributes exactly 0.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor


class Aggregation(Protocol):
    def __call__(
        self,
        per_token_loss: Tensor,
        mask: Tensor,
        *,
        num_sequences: int,
        num_tokens: int,
        max_tokens: int,
    ) -> Tensor: ...


def _masked(per_token_loss: Tensor, mask: Tensor) -> Tensor:
    """The loss on real tokens, exactly 0 elsewhere (NaN-safe)."""
    return torch.where(mask.bool(), per_token_loss, torch.zeros_like(per_token_loss))  # [N, T]


def sequence_mean(
    per_token_loss: Tensor, mask: Tensor, *, num_sequences: int, num_tokens: int, max_tokens: int
) -> Tensor:
    """DeepSeekMath eq. 3: 1/G Σ_i 1/|o_i| Σ_t l_{i,t}, i.e. mean over each sequence's tokens,
    then mean over the whole batch's sequences. Long answers weigh less per token."""
    sequence_sum = _masked(per_token_loss, mask).sum(dim=1)  # [N]
    sequence_length = mask.sum(dim=1).clamp(min=1)  # [N]; a fully masked row divides 0 by 1
    return (sequence_sum / sequence_length).sum() / max(num_sequences, 1)  # []


def token_mean(per_token_loss: Tensor, mask: Tensor, *, num_sequences: int, num_tokens: int, max_tokens: int) -> Tensor:
    """DAPO (Yu et al. 2025, arXiv:2503.14476) eq. 8, token-level policy gradient loss:
    Σ_i Σ_t l_{i,t} / Σ_i |o_i|. Every token weighs the same, whatever its sequence's length."""
    return _masked(per_token_loss, mask).sum() / max(num_tokens, 1)  # []


def constant(per_token_loss: Tensor, mask: Tensor, *, num_sequences: int, num_tokens: int, max_tokens: int) -> Tensor:
    """Dr. GRPO (Liu et al. 2025, arXiv:2503.20783) §3.1: drop 1/|o_i| (the length bias) and
    divide by a constant, num_sequences · max_tokens, instead."""
    return _masked(per_token_loss, mask).sum() / max(num_sequences * max_tokens, 1)  # []


def sequence_sum(
    per_token_loss: Tensor, mask: Tensor, *, num_sequences: int, num_tokens: int, max_tokens: int
) -> Tensor:
    """RLOO (Ahmadian et al. 2024, arXiv:2402.14740) eq. 5: 1/k Σ_i Â_i ∇ log π(y_i|x), the whole
    completion being one action, so log π(y_i|x) = Σ_t log π(y_{i,t}|x, y_{i,<t}): the sum over each
    sequence's tokens, then the mean over the batch's sequences. Every token weighs the same, and a
    long answer carries more of the gradient than a short one (no 1/|o_i|). TRL's RLOOTrainer
    (trl 1.16.0, trl/trainer/rloo_trainer.py lines 1822-1833) aggregates the same way:
    `logps = (per_token_logps * completion_mask).sum(1)`, then `per_sequence_loss.mean()`."""
    return _masked(per_token_loss, mask).sum() / max(num_sequences, 1)  # []


AGGREGATIONS: dict[str, Aggregation] = {
    "sequence_mean": sequence_mean,
    "token_mean": token_mean,
    "constant": constant,
    "sequence_sum": sequence_sum,
}
