"""DPO's loss (Rafailov et al. 2023, eq. 7) and the online pair builder on tiny hand-made tensors."""

import math

import pytest
import torch

from rlvr.algos import ALGORITHMS, dpo_loss, preference_pairs, sequence_logprobs

NAN = float("nan")


def _log1p_exp(x: float) -> float:
    return math.log1p(math.exp(x))  # −log σ(−x) = log(1 + e^x)


def test_loss_and_stats_by_hand():
    # β = 0.5. Pair 0: chosen log-ratio −1 − (−2) = 1, rejected −3 − (−2) = −1
    #   → implicit rewards 0.5 and −0.5, margin 1, loss −log σ(1) = log(1 + e^−1) ≈ 0.3133.
    # Pair 1: chosen log-ratio 0, rejected −1 − (−2) = 1 → rewards 0 and 0.5, margin −0.5,
    #   loss −log σ(−0.5) = log(1 + e^0.5) ≈ 0.9741.  Mean loss ≈ 0.6437.
    loss, stats = dpo_loss(
        torch.tensor([-1.0, -2.0]),
        torch.tensor([-3.0, -1.0]),
        torch.tensor([-2.0, -2.0]),
        torch.tensor([-2.0, -2.0]),
        beta=0.5,
    )
    expected = (_log1p_exp(-1.0) + _log1p_exp(0.5)) / 2
    assert math.isclose(float(loss), expected, rel_tol=1e-6)
    assert math.isclose(stats["rewards/chosen"], (0.5 + 0.0) / 2, abs_tol=1e-7)
    assert math.isclose(stats["rewards/rejected"], (-0.5 + 0.5) / 2, abs_tol=1e-7)
    assert math.isclose(stats["rewards/margins"], (1.0 - 0.5) / 2, abs_tol=1e-7)
    assert stats["rewards/accuracies"] == 0.5  # pair 0 ranks the chosen higher, pair 1 does not
    assert stats["logps/chosen"] == -1.5 and stats["logps/rejected"] == -2.0


def test_policy_equal_to_reference_gives_log_two_for_any_beta():
    # every margin is 0, so every pair costs −log σ(0) = log 2
    logp = torch.tensor([-4.0, -7.5, -1.0])
    for beta in (0.01, 0.1, 3.0):
        loss, stats = dpo_loss(logp, logp - 1.0, logp, logp - 1.0, beta=beta)
        assert math.isclose(float(loss), math.log(2), rel_tol=1e-6)
        assert stats["rewards/margins"] == 0.0 and stats["rewards/accuracies"] == 0.0


def test_gradient_matches_finite_differences():
    torch.manual_seed(0)
    inputs = [torch.randn(5, dtype=torch.float64, requires_grad=True) for _ in range(4)]

    def loss_only(*tensors):
        return dpo_loss(*tensors, beta=0.7)[0]

    assert torch.autograd.gradcheck(loss_only, inputs, eps=1e-6, atol=1e-6)


def test_gradient_by_hand():
    # d/d(chosen_logp) of −log σ(β·h) is −β·σ(−β·h); with h = 1, β = 0.5 and one pair:
    # −0.5·σ(−0.5) ≈ −0.18757; the rejected side gets the opposite sign; refs get the same with flipped signs.
    chosen = torch.tensor([-1.0], requires_grad=True)
    rejected = torch.tensor([-2.0], requires_grad=True)
    loss, _ = dpo_loss(chosen, rejected, torch.tensor([-1.0]), torch.tensor([-1.0]), beta=0.5)
    loss.backward()
    expected = -0.5 / (1 + math.exp(0.5))
    assert math.isclose(float(chosen.grad), expected, rel_tol=1e-6)
    assert math.isclose(float(rejected.grad), -expected, rel_tol=1e-6)


def test_pair_micro_batches_add_up_to_the_full_loss():
    torch.manual_seed(1)
    tensors = [torch.randn(6) for _ in range(4)]
    full, _ = dpo_loss(*tensors, beta=0.2)
    parts = [dpo_loss(*(t[i : i + 2] for t in tensors), beta=0.2, num_pairs=6)[0] for i in (0, 2, 4)]
    assert torch.allclose(sum(parts), full)


def test_extreme_margins_stay_finite():
    # margin +1000 → loss ≈ 0; margin −1000 → loss ≈ 1000 (log σ is computed stably, no inf/NaN)
    loss, _ = dpo_loss(torch.tensor([0.0, -1e4]), torch.tensor([-1e4, 0.0]), torch.zeros(2), torch.zeros(2), beta=0.1)
    assert math.isclose(float(loss), 1000.0 / 2, rel_tol=1e-6)


def test_beta_must_be_positive():
    with pytest.raises(ValueError, match="beta > 0"):
        dpo_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1), beta=0.0)


def test_sequence_logprobs_sum_real_tokens_only():
    # row 0: −1 − 2 (third token is padding holding −inf); row 1: fully masked → 0
    token_logp = torch.tensor([[-1.0, -2.0, -math.inf], [NAN, NAN, NAN]])
    mask = torch.tensor([[1, 1, 0], [0, 0, 0]])
    assert torch.equal(sequence_logprobs(token_logp, mask), torch.tensor([-3.0, 0.0]))


def test_pairs_in_index_order_each_completion_once():
    # passing 0, 2 and failing 1, 3 → pairs (0, 1), (2, 3)
    chosen, rejected, stats = preference_pairs(torch.tensor([[1.0, 0.0, 1.0, 0.0]]))
    assert chosen.tolist() == [0, 2] and rejected.tolist() == [1, 3]
    assert stats == {"pairs": 2, "groups_no_pass": 0, "groups_no_fail": 0}
    # three passes, one fail → one pair: the fail can only be used once
    chosen, rejected, _ = preference_pairs(torch.tensor([[1.0, 1.0, 1.0, 0.0]]))
    assert chosen.tolist() == [0] and rejected.tolist() == [3]


def test_pairs_use_flat_indices_across_groups():
    # G = 2: group 0 has its pass at g = 1 (row 1), group 1 at g = 0 (row 2)
    chosen, rejected, _ = preference_pairs(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert chosen.tolist() == [1, 2] and rejected.tolist() == [0, 3]


def test_groups_without_a_pass_or_a_fail_give_no_pair_and_are_counted():
    outcomes = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [NAN, NAN, NAN], [1.0, NAN, 0.0]])
    chosen, rejected, stats = preference_pairs(outcomes)
    # only group 3 pairs (its NaN is never used); group 2 (nothing judged) has no pass
    assert chosen.tolist() == [9] and rejected.tolist() == [11]
    assert stats == {"pairs": 1, "groups_no_pass": 2, "groups_no_fail": 1}


def test_no_pair_at_all_gives_empty_index_tensors():
    chosen, rejected, stats = preference_pairs(torch.ones(2, 4))
    assert chosen.shape == (0,) and rejected.shape == (0,) and chosen.dtype == torch.long
    assert stats["pairs"] == 0 and stats["groups_no_fail"] == 2


def test_cap_on_pairs_per_group():
    chosen, rejected, _ = preference_pairs(torch.tensor([[1.0, 0.0, 1.0, 0.0]]), max_pairs_per_group=1)
    assert chosen.tolist() == [0] and rejected.tolist() == [1]
    with pytest.raises(ValueError, match="max_pairs_per_group"):
        preference_pairs(torch.ones(1, 2), max_pairs_per_group=-1)


def test_random_outcomes_pair_a_pass_with_a_fail_of_the_same_query():
    generator = torch.Generator().manual_seed(0)
    group_size = 6
    outcomes = torch.randint(0, 2, (50, group_size), generator=generator).float()  # [B, G]
    outcomes[torch.rand(50, group_size, generator=generator) < 0.1] = NAN
    chosen, rejected, stats = preference_pairs(outcomes)
    flat = outcomes.flatten()
    assert bool((flat[chosen] == 1).all()) and bool((flat[rejected] == 0).all())
    assert torch.equal(chosen // group_size, rejected // group_size)  # same query
    used = torch.cat([chosen, rejected])
    assert len(set(used.tolist())) == len(used)  # no completion twice
    per_group = [min(int((r == 1).sum()), int((r == 0).sum())) for r in outcomes]
    assert stats["pairs"] == sum(per_group)


def test_dpo_is_registered_as_a_preference_algorithm():
    assert ALGORITHMS["dpo"].update == "preference"
    assert ALGORITHMS["dpo"].loss is dpo_loss and ALGORITHMS["dpo"].pairs is preference_pairs


def test_tools_built_on_advantages_refuse_dpo_by_name():
    from rlvr.algos.registry import NotPolicyGradientError, require_policy_gradient

    assert require_policy_gradient("grpo", "rlvr inspect") is ALGORITHMS["grpo"]
    with pytest.raises(NotPolicyGradientError, match="rlvr inspect works on advantages.*algo.algorithm=dpo"):
        require_policy_gradient("dpo", "rlvr inspect")
