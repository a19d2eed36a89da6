"""KL estimators k1, k2, k3 (Schulman 2020; DeepSeekMath eq. 4)."""

import math

import pytest
import torch

from rlvr.algos import KL_ESTIMATORS, kl_k1, kl_k2, kl_k3


def test_hand_values():
    # π_θ = 0.5, π_ref = 0.25: log r = log(π_ref/π_θ) = log 0.5 = −0.69315
    # k1 = −log r = 0.69315; k2 = ½·0.69315² = 0.24023; k3 = 0.5 + 0.69315 − 1 = 0.19315.
    logp = torch.tensor([[math.log(0.5)]], dtype=torch.float64)  # [1, 1]
    ref_logp = torch.tensor([[math.log(0.25)]], dtype=torch.float64)  # [1, 1]
    log2 = math.log(2)
    assert kl_k1(logp, ref_logp).item() == pytest.approx(log2)
    assert kl_k2(logp, ref_logp).item() == pytest.approx(0.5 * log2**2)
    assert kl_k3(logp, ref_logp).item() == pytest.approx(0.5 + log2 - 1)


def test_k3_other_direction():
    # π_θ = 0.25, π_ref = 0.5: r = 2 → k3 = 2 − log 2 − 1 = 0.30685; k1 = −log 2 (negative).
    logp = torch.tensor([[math.log(0.25)]], dtype=torch.float64)  # [1, 1]
    ref_logp = torch.tensor([[math.log(0.5)]], dtype=torch.float64)  # [1, 1]
    assert kl_k3(logp, ref_logp).item() == pytest.approx(1 - math.log(2))
    assert kl_k1(logp, ref_logp).item() == pytest.approx(-math.log(2))


@pytest.mark.parametrize("name", ["k1", "k2", "k3"])
def test_equal_policies_give_zero(name):
    logp = torch.randn(3, 4)  # [N, T]
    assert torch.equal(KL_ESTIMATORS[name](logp, logp), torch.zeros(3, 4))


def test_k2_k3_are_nonnegative():
    logp, ref_logp = torch.randn(64, 32) * 3, torch.randn(64, 32) * 3  # [N, T] each
    assert (kl_k3(logp, ref_logp) >= 0).all()
    assert (kl_k2(logp, ref_logp) >= 0).all()


def test_k1_k3_unbiased_in_exact_expectation():
    # Σ_x π_θ(x)·k(x) over a whole vocabulary is the exact expectation under x ~ π_θ:
    # for k1 it is KL by definition; for k3 the Σ π_θ·(π_ref/π_θ − 1) part is 1 − 1 = 0.
    # k2 is biased, so its expectation differs.
    p = torch.softmax(torch.randn(50, dtype=torch.float64), dim=0)  # [V]
    q = torch.softmax(torch.randn(50, dtype=torch.float64), dim=0)  # [V]
    logp, ref_logp = p.log()[None], q.log()[None]  # [1, V] each
    true_kl = (p * (p.log() - q.log())).sum()  # []
    torch.testing.assert_close((p * kl_k1(logp, ref_logp)[0]).sum(), true_kl)
    torch.testing.assert_close((p * kl_k3(logp, ref_logp)[0]).sum(), true_kl)
    assert not torch.isclose((p * kl_k2(logp, ref_logp)[0]).sum(), true_kl)


def test_registry_names():
    assert KL_ESTIMATORS == {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}
