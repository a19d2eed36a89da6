"""RLOO, REINFORCE++ and GSPO on tiny hand-made tensors, and their invariants."""

import math

import pytest
import torch

from rlvr.algos import ALGORITHMS, batch_normalized_advantages, grpo_loss, gspo_loss, rloo_advantages, sequence_ratio

NAN = float("nan")


def test_rloo_by_hand():
    # rewards [1, 0, 0, 1]: sample 0's baseline is mean(0, 0, 1) = 1/3, so A_0 = 2/3;
    # sample 1's baseline is mean(1, 0, 1) = 2/3, so A_1 = -2/3.
    adv, _ = rloo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]))
    assert torch.allclose(adv, torch.tensor([[2 / 3, -2 / 3, -2 / 3, 2 / 3]]))
    # = n/(n-1) * (r - mean): 4/3 * (1 - 0.5) = 2/3
    assert math.isclose(float(adv.sum()), 0.0, abs_tol=1e-6)


def test_rloo_excludes_unscorable_and_lonely_samples():
    # group 0: valid [1, 0] (the NaN is out): baselines 0 and 1 -> A = [1, -1, 0]
    # group 1: one valid sample has no leave-one-out baseline -> all 0
    adv, _ = rloo_advantages(torch.tensor([[1.0, 0.0, NAN], [1.0, NAN, NAN]]))
    assert torch.equal(adv, torch.tensor([[1.0, -1.0, 0.0], [0.0, 0.0, 0.0]]))


def test_batch_normalised_advantages_by_hand():
    # rewards over the whole batch: [1, 0, 0, 0]; mean 0.25, Bessel std sqrt(0.25) = 0.5
    # A = (1 - 0.25) / 0.5 = 1.5 and (0 - 0.25) / 0.5 = -0.5 (eps 0 to keep the arithmetic exact)
    adv, _ = batch_normalized_advantages(torch.tensor([[1.0, 0.0], [0.0, 0.0]]), eps=0.0)
    assert torch.allclose(adv, torch.tensor([[1.5, -0.5], [-0.5, -0.5]]))
    # unlike GRPO, the all-zero group 1 still gets a (negative) advantage: the baseline is the batch
    same, _ = batch_normalized_advantages(torch.tensor([[1.0, 1.0], [1.0, NAN]]))
    assert torch.equal(same, torch.zeros(2, 2))


def test_sequence_ratio_is_the_geometric_mean_of_token_ratios():
    # token log-ratios [ln 2, ln 8] -> mean ln 4 -> s = 4^(1/1)... i.e. sqrt(2 * 8) = 4
    logp = torch.tensor([[math.log(2.0), math.log(8.0), 5.0]])
    old = torch.zeros(1, 3)
    mask = torch.tensor([[1, 1, 0]])
    assert math.isclose(float(sequence_ratio(logp, old, mask)), 4.0, rel_tol=1e-6)


def test_gspo_by_hand_and_clipping():
    # one sequence of two tokens, s = 4 as above, A = +1, eps 0.2: clipped to 1.2 -> loss -1.2
    logp = torch.tensor([[math.log(2.0), math.log(8.0)]], requires_grad=True)
    loss, stats = gspo_loss(
        logp,
        torch.zeros(1, 2),
        torch.tensor([1.0]),
        torch.ones(1, 2),
        ref_logp=None,
        epsilon_low=0.2,
        epsilon_high=0.2,
        beta=0.0,
    )
    assert math.isclose(float(loss.detach()), -1.2, rel_tol=1e-6)
    assert stats["clip_ratio/high_mean"] == 1.0
    loss.backward()
    assert torch.equal(logp.grad, torch.zeros(1, 2))  # clipped: no gradient


def test_gspo_equals_grpo_on_one_token_sequences():
    torch.manual_seed(0)
    logp = torch.randn(6, 1, dtype=torch.float64, requires_grad=True)
    old = logp.detach() + 0.1 * torch.randn(6, 1, dtype=torch.float64)
    adv = torch.randn(6, dtype=torch.float64)
    ref = logp.detach() - 0.05
    kwargs = dict(ref_logp=ref, epsilon_low=0.2, epsilon_high=0.28, beta=0.04)
    a, _ = gspo_loss(logp, old, adv, torch.ones(6, 1), **kwargs)
    b, _ = grpo_loss(logp, old, adv, torch.ones(6, 1), **kwargs)
    assert torch.allclose(a, b)


def test_gspo_gradient_matches_finite_differences():
    torch.manual_seed(1)
    logp = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    old = logp.detach() + 0.01 * torch.randn(4, 3, dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]])
    ref = logp.detach() - 0.1

    def f(x):
        return gspo_loss(x, old, adv, mask, ref_logp=ref, epsilon_low=0.2, epsilon_high=0.2, beta=0.1)[0]

    assert torch.autograd.gradcheck(f, (logp,))


@pytest.mark.parametrize("name", sorted(n for n, a in ALGORITHMS.items() if a.update == "policy_gradient"))
def test_every_algorithm_gives_zero_mean_group_signal_and_a_finite_loss(name):
    algorithm = ALGORITHMS[name]
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    adv, stats = algorithm.advantages(rewards, eps=1e-4, scale_by_std=True)
    assert adv.shape == (2, 4) and torch.isfinite(adv).all()
    assert "group_std" in stats and "frac_zero_std" in stats
    logp = torch.randn(8, 5, requires_grad=True)
    loss, _ = algorithm.loss(
        logp, logp.detach(), adv.flatten(), torch.ones(8, 5), ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0
    )
    loss.backward()
    assert torch.isfinite(loss) and logp.grad.abs().sum() > 0


def test_the_config_offers_exactly_the_registry_algorithms():
    # algo.algorithm's choices are written as a Literal so that --help lists them without importing
    # torch; the registry is where each algorithm is defined. They must name the same set.
    import typing

    from rlvr.config import AlgoConfig

    assert set(typing.get_args(typing.get_type_hints(AlgoConfig)["algorithm"])) == set(ALGORITHMS)
