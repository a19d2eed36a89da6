"""Truncated importance sampling (algos/tis.py) on hand-made tensors."""

import math

import pytest
import torch

from rlvr.algos import grpo_loss, grpo_per_token_loss, kl_k3, tis_advantages, tis_weights


def test_weights_and_stats_by_hand():
    # token 0: π_old/π_sampler = 0.5/0.25 = 2 → cut to the cap 1.5; token 1: 0.2/0.4 = 0.5; token 2 is padding
    trainer = torch.tensor([[math.log(0.5), math.log(0.2), 0.0]])
    sampler = torch.tensor([[math.log(0.25), math.log(0.4), 7.0]])
    mask = torch.tensor([[1, 1, 0]])
    weight, stats = tis_weights(trainer, sampler, mask, cap=1.5)
    assert torch.allclose(weight, torch.tensor([[1.5, 0.5, 1.0]]))
    assert stats["sampling/sampling_logp_difference/mean"] == pytest.approx(math.log(2))  # |log 2| both
    assert stats["sampling/sampling_logp_difference/max"] == pytest.approx(math.log(2))
    assert stats["sampling/importance_sampling_ratio/min"] == pytest.approx(0.5)
    assert stats["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0)  # (1.5 + 0.5) / 2
    assert stats["sampling/importance_sampling_ratio/max"] == pytest.approx(1.5)
    assert stats["sampling/truncated_frac"] == pytest.approx(0.5)
    # k3 = r − 1 − log r: r = 2 gives 1 − log 2 = 0.3069, r = 0.5 gives log 2 − 0.5 = 0.1931; mean 0.25
    assert stats["sampling/mismatch_kl"] == pytest.approx(0.25)


def test_masked_mode_drops_tokens_above_the_cap_and_keeps_the_raw_ratio_below():
    # ratios 2, 0.5, 1.25 (TRL's "token_mask"): 2 > 1.5 leaves the surrogate (w = 0), the others keep theirs
    trainer = torch.tensor([[math.log(0.5), math.log(0.2), math.log(0.5)]])
    sampler = torch.tensor([[math.log(0.25), math.log(0.4), math.log(0.4)]])
    weight, stats = tis_weights(trainer, sampler, torch.ones(1, 3), cap=1.5, mode="mask")
    assert torch.allclose(weight, torch.tensor([[0.0, 0.5, 1.25]]))
    assert stats["sampling/truncated_frac"] == pytest.approx(1 / 3)  # the share masked
    assert stats["sampling/importance_sampling_ratio/max"] == pytest.approx(1.25)
    assert stats["sampling/importance_sampling_ratio/p50"] == pytest.approx(1.25)  # of the raw ratios 0.5, 1.25, 2
    assert stats["sampling/importance_sampling_ratio/p10"] == pytest.approx(0.5 + 0.2 * 0.75)  # linear interpolation
    truncated, _ = tis_weights(trainer, sampler, torch.ones(1, 3), cap=1.5)
    assert torch.allclose(truncated, torch.tensor([[1.5, 0.5, 1.25]]))
    with pytest.raises(ValueError, match="mode"):
        tis_weights(trainer, sampler, torch.ones(1, 3), cap=1.5, mode="clip")


def test_identical_log_probs_give_weight_one_and_zero_mismatch():
    logp = torch.tensor([[-0.3, -2.0], [-1.0, -0.1]])
    weight, stats = tis_weights(logp, logp.clone(), torch.ones(2, 2), cap=2.0)
    assert torch.equal(weight, torch.ones(2, 2))
    assert stats["sampling/mismatch_kl"] == 0.0 and stats["sampling/truncated_frac"] == 0.0


def test_a_missing_sampler_log_prob_gets_no_correction_and_bad_caps_are_refused():
    weight, _ = tis_weights(
        torch.tensor([[-1.0, -1.0]]), torch.tensor([[float("nan"), -2.0]]), torch.ones(1, 2), cap=2.0
    )
    assert weight[0, 0] == 1.0 and weight[0, 1] == 2.0  # NaN → 1; e^1 = 2.72 is cut to the cap 2
    with pytest.raises(ValueError, match="cap"):
        tis_weights(torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1), cap=0.0)
    _, stats = tis_weights(torch.zeros(1, 2), torch.ones(1, 2), torch.zeros(1, 2), cap=2.0)  # empty mask
    assert set(stats.values()) == {0.0}


def test_weighted_advantages_give_w_times_the_clipped_surrogate_by_hand():
    # One sequence, two tokens, A = 1, ε = 0.2, β = 0:
    # token 0: ρ = e^0.5 = 1.65 → min(1.65, 1.2) = 1.2; w = 0.5 → −0.6
    # token 1: ρ = 1 → 1; w = 2 → −2.   Sequence mean: (−0.6 − 2) / 2 = −1.3
    logp = torch.tensor([[0.5, 0.0]]) - 1.0
    old = torch.tensor([[0.0, 0.0]]) - 1.0
    adv = tis_advantages(torch.tensor([1.0]), torch.tensor([[0.5, 2.0]]))  # [1, 2]
    assert adv.tolist() == [[0.5, 2.0]]
    loss, _ = grpo_loss(logp, old, adv, torch.ones(1, 2), ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0)
    assert float(loss) == pytest.approx(-1.3)


def test_weight_multiplies_the_surrogate_but_not_the_kl_term():
    torch.manual_seed(0)
    logp, old, ref = (torch.randn(3, 4) * 0.3 - 1.0 for _ in range(3))
    advantages = torch.tensor([1.0, -0.5, 2.0])  # [N]
    weight = torch.tensor([[0.5, 1.0, 2.0, 1.5], [1.0, 0.2, 0.9, 2.0], [1.1, 1.0, 0.3, 0.7]])  # [N, T]
    beta = 0.1
    got, stats = grpo_loss(
        logp,
        old,
        tis_advantages(advantages, weight),
        torch.ones(3, 4),
        ref_logp=ref,
        epsilon_low=0.2,
        epsilon_high=0.2,
        beta=beta,
    )
    surrogate_loss, plain = grpo_per_token_loss(
        logp, old, advantages, ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0
    )  # [N, T] −min(ρA, clip(ρ)A)
    expected = (weight * surrogate_loss + beta * kl_k3(logp, ref)).mean(dim=1).mean()  # sequence_mean
    assert float(got) == pytest.approx(float(expected), rel=1e-6)
    # w > 0 never flips an advantage's sign, so the clip indicators are those of the unweighted loss
    assert stats["clip_ratio/region_mean"] == pytest.approx(float(plain["clipped"].float().mean()))
