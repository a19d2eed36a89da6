"""Group advantages, DeepSeekMath §4.1.2: hand values and invariants."""

import math

import pytest
import torch

from rlvr.algos import group_advantages

NAN = float("nan")


def test_hand_values_bessel():
    # rewards 1,0,0,1: μ = 0.5; Bessel σ = sqrt(4·0.25 / 3) = sqrt(1/3) = 0.57735
    # → A = ±0.5 / 0.57735 = ±0.86603 (population σ = 0.5 would give ±1).
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0]])  # [1, 4]
    advantages, stats = group_advantages(rewards, eps=0.0)  # [1, 4]
    a = 0.5 / math.sqrt(1 / 3)
    torch.testing.assert_close(advantages, torch.tensor([[a, -a, -a, a]]))
    torch.testing.assert_close(stats["group_mean"], torch.tensor([0.5]))
    torch.testing.assert_close(stats["group_std"], torch.tensor([math.sqrt(1 / 3)]))


def test_two_samples_use_unbiased_std():
    # rewards 0,1: μ = 0.5, Bessel σ = sqrt(0.5) = 0.7071 → A = ∓0.5/0.7071 = ∓0.7071, not ∓1.
    advantages, stats = group_advantages(torch.tensor([[0.0, 1.0]]), eps=0.0)  # [1, 2]
    torch.testing.assert_close(advantages, torch.tensor([[-math.sqrt(0.5), math.sqrt(0.5)]]))
    torch.testing.assert_close(stats["group_std"], torch.tensor([0.0, 1.0]).std(dim=0, keepdim=True))


def test_eps_is_added_to_std():
    # σ = sqrt(0.5), ε = 0.1 → A = 0.5 / (0.7071 + 0.1) = 0.6195
    advantages, _ = group_advantages(torch.tensor([[0.0, 1.0]]), eps=0.1)  # [1, 2]
    a = 0.5 / (math.sqrt(0.5) + 0.1)
    torch.testing.assert_close(advantages, torch.tensor([[-a, a]]))


def test_each_group_sums_to_zero():
    rewards = torch.rand(5, 8)  # [B, G]
    advantages, _ = group_advantages(rewards)  # [B, G]
    torch.testing.assert_close(advantages.sum(dim=1), torch.zeros(5), atol=1e-5, rtol=0)


@pytest.mark.parametrize("value", [0.0, 1.0, 0.1, 0.7])
def test_zero_variance_group_is_exactly_zero(value):
    # μ = 3·0.1/3 rounds to 0.10000000000000002 ≠ 0.1 in float64: the max == min test, not
    # σ ≈ 0, is what makes the advantage exactly 0 rather than ~1e-13.
    rewards = torch.tensor([[value] * 3, [1.0, 0.0, 1.0]], dtype=torch.float64)  # [2, 3]
    advantages, stats = group_advantages(rewards)  # [2, 3]
    assert torch.equal(advantages[0], torch.zeros(3, dtype=torch.float64))
    assert not torch.isnan(advantages).any()
    assert stats["group_std"][0] == 0.0
    assert stats["frac_zero_std"] == pytest.approx(0.5)


def test_nan_rewards_are_excluded_from_baseline():
    # valid rewards 1,0,0: μ = 1/3; σ² = ((2/3)² + 2·(1/3)²)/2 = 1/3
    # → A = (2/3)/0.57735 = 1.1547, NaN → 0, (−1/3)/0.57735 = −0.57735.
    rewards = torch.tensor([[1.0, NAN, 0.0, 0.0]])  # [1, 4]
    advantages, stats = group_advantages(rewards, eps=0.0)  # [1, 4]
    s = math.sqrt(1 / 3)
    torch.testing.assert_close(advantages, torch.tensor([[(2 / 3) / s, 0.0, -(1 / 3) / s, -(1 / 3) / s]]))
    torch.testing.assert_close(stats["group_mean"], torch.tensor([1 / 3]))
    assert stats["num_valid"].tolist() == [3]


def test_fewer_than_two_valid_samples_give_zero():
    rewards = torch.tensor([[NAN, 1.0, NAN], [NAN, NAN, NAN], [0.0, 1.0, 1.0]])  # [3, 3]
    advantages, stats = group_advantages(rewards)  # [3, 3]
    assert torch.equal(advantages[:2], torch.zeros(2, 3))
    assert advantages[2].abs().sum() > 0
    torch.testing.assert_close(stats["group_mean"][:2], torch.tensor([1.0, 0.0]))
    assert torch.equal(stats["group_std"][:2], torch.zeros(2))
    assert stats["frac_zero_std"] == pytest.approx(2 / 3)
    for value in stats.values():
        assert not torch.isnan(value).any()


def test_dr_grpo_does_not_scale_by_std():
    # Dr. GRPO: A = r − μ = ±0.5 for rewards 1,0,0,1.
    advantages, _ = group_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), scale_by_std=False)  # [1, 4]
    torch.testing.assert_close(advantages, torch.tensor([[0.5, -0.5, -0.5, 0.5]]))


def test_integer_rewards_are_accepted():
    advantages, _ = group_advantages(torch.tensor([[1, 0]]), eps=0.0)  # [1, 2]
    torch.testing.assert_close(advantages, torch.tensor([[math.sqrt(0.5), -math.sqrt(0.5)]]))


def test_rejects_flat_rewards():
    with pytest.raises(ValueError, match=r"\[B, G\]"):
        group_advantages(torch.zeros(6))
