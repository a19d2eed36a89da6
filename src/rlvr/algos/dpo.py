"""DPO: Direct Preference Optimization (Rafailov et al. 2023, arXiv:2305.18290), eq. 7,

    L_DPO(π_θ; π_ref) = −E_{(x, y_w, y_l)} [ log σ( β log π_θ(y_w|x)/π_ref(y_w|x)
                                                   − β log π_θ(y_l|x)/π_ref(y_l|x) ) ],

with the preference pairs built online from verifier verdicts: for each query, G completions are
sampled from the current policy, and a passing completion is preferred (y_w) over a failing one
(y_l) of the same query. log π(y|x) is a sequence log-prob: the sum of the per-token log-probs
over the completion's tokens (EOS included), as in the paper and TRL's DPOTrainer.

β here is the paper's β: the inverse temperature of the implicit reward r̂ = β log(π_θ/π_ref)
(§4, eq. 5), which in the RLHF objective DPO is derived from (eq. 3) is the KL weight. In rlvr it
is its own field, `algo.dpo_beta`, because GRPO's `algo.beta` is a per-token penalty added to the
loss (β = 0 there means "no KL, no reference"), whereas DPO's β sits inside the sigmoid and β = 0
would give a constant loss log 2 with zero gradient.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def sequence_logprobs(token_logp: Tensor, mask: Tensor) -> Tensor:
    """log π(y|x) = Σ_t log π(y_t | x, y_<t) over real tokens, [N]; NaN/inf on padding never leaks."""
    mask = mask.bool()  # [N, T]
    return torch.where(mask, token_logp, torch.zeros_like(token_logp)).sum(dim=1)  # [N]


def preference_pairs(outcomes: Tensor, *, max_pairs_per_group: int = 0) -> tuple[Tensor, Tensor, dict[str, int]]:
    """Pair passing with failing completions of the same query.

    Args:
        outcomes: [B, G] 1.0 where the completion passed its verifier, 0.0 where it failed, NaN
            where the verifier could not judge it (never paired: a broken verifier is no
            preference).
        max_pairs_per_group: at most this many pairs per query (0 = no cap).

    Pairing rule: in group b, with passing completions p_1 < p_2 < ... and failing ones
    f_1 < f_2 < ... (by index), the pairs are (p_1, f_1), (p_2, f_2), ..., min(#pass, #fail)
    of them (then capped). Each completion is in at most one pair, so pairs are independent
    samples; the G completions of a group are i.i.d. draws, so taking them in index order is as
    good as a random choice and needs no RNG. A group with no pass or no fail gives no pair.

    Returns:
        chosen [M], rejected [M]: flat row indices b·G + g of y_w and y_l, pair i is
        (chosen[i], rejected[i]); and counts: "pairs" (M), "groups_no_pass" (groups without a
        passing completion), "groups_no_fail" (groups with a pass but no failing completion).
    """
    if outcomes.ndim != 2:
        raise ValueError(f"outcomes must be [B, G], got shape {tuple(outcomes.shape)}")
    if max_pairs_per_group < 0:
        raise ValueError(f"max_pairs_per_group must be >= 0, got {max_pairs_per_group}")
    group_size = outcomes.shape[1]
    chosen: list[int] = []
    rejected: list[int] = []
    no_pass = no_fail = 0
    for b, row in enumerate(outcomes.tolist()):
        passing = [b * group_size + g for g, o in enumerate(row) if o == 1.0]
        failing = [b * group_size + g for g, o in enumerate(row) if o == 0.0]  # NaN equals nothing
        if not passing:
            no_pass += 1
        elif not failing:
            no_fail += 1
        count = min(len(passing), len(failing))
        if max_pairs_per_group:
            count = min(count, max_pairs_per_group)
        chosen += passing[:count]
        rejected += failing[:count]
    stats = {"pairs": len(chosen), "groups_no_pass": no_pass, "groups_no_fail": no_fail}
    return torch.tensor(chosen, dtype=torch.long), torch.tensor(rejected, dtype=torch.long), stats


def dpo_loss(
    chosen_logp: Tensor,
    rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    *,
    beta: float,
    num_pairs: int | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """The DPO loss of eq. 7 summed over these pairs and divided by `num_pairs`.

    Args:
        chosen_logp, rejected_logp: [M] log π_θ(y_w|x), log π_θ(y_l|x) (carry the gradient).
        ref_chosen_logp, ref_rejected_logp: [M] the same under the frozen reference.
        beta: β > 0 of eq. 7.
        num_pairs: pairs in the whole optimizer step (default M), so that the losses of
            micro-batches of pairs add up to the full-batch mean loss and gradient.

    Returns:
        loss (scalar), and float stats, means over these M pairs, named as TRL's DPOTrainer:
        "rewards/chosen" (β log π_θ/π_ref of y_w), "rewards/rejected", "rewards/margins"
        (chosen − rejected), "rewards/accuracies" (share of pairs with chosen > rejected),
        "logps/chosen", "logps/rejected" (policy sequence log-probs).
    """
    if beta <= 0:
        raise ValueError(f"DPO needs beta > 0 (got {beta}); beta = 0 makes the loss constant")
    chosen_reward = beta * (chosen_logp - ref_chosen_logp)  # [M] implicit reward r̂(x, y_w), eq. 5
    rejected_reward = beta * (rejected_logp - ref_rejected_logp)  # [M] r̂(x, y_l)
    margin = chosen_reward - rejected_reward  # [M]
    per_pair_loss = -F.logsigmoid(margin)  # [M] −log σ(·): stable for any margin
    loss = per_pair_loss.sum() / max(chosen_logp.shape[0] if num_pairs is None else num_pairs, 1)  # []
    with torch.no_grad():
        stats = {
            "rewards/chosen": float(chosen_reward.mean()),
            "rewards/rejected": float(rejected_reward.mean()),
            "rewards/margins": float(margin.mean()),
            "rewards/accuracies": float((margin > 0).float().mean()),
            "logps/chosen": float(chosen_logp.mean()),
            "logps/rejected": float(rejected_logp.mean()),
        }
    return loss, stats
