"""PPO's per-token rewards, GAE, whitening and clipped value loss; KL as a reward penalty; the
entropy bonus. Expected values are derived in the comments."""

import pytest
import torch

from rlvr.algos import (
    clipped_value_loss,
    entropy_bonus_loss,
    gae,
    grpo_loss,
    kl_in_reward_advantages,
    token_rewards,
    whiten,
)


def test_token_rewards_put_the_score_on_the_last_real_token_and_subtract_beta_kl():
    scores = torch.tensor([1.0, 0.0, 2.0])  # [3]
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]])  # row 2 is empty: nowhere to put its score
    kl = torch.full((3, 3), 0.5)  # [3, 3]
    rewards = token_rewards(scores, mask, kl, beta=0.1)
    # row 0: −0.05 on each token, +1 on token 2; row 1: its only token gets 0 − 0.05; padding 0
    expected = torch.tensor([[-0.05, -0.05, 0.95], [-0.05, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert torch.allclose(rewards, expected)


def test_gae_by_hand():
    # One row of 3 real tokens + 1 pad; γ = 0.5, λ = 0.5 (γλ = 0.25). Rewards r = [0, 0, 1],
    # values V = [0.2, 0.4, 0.8] (the pad's 9.0 must be ignored: V after the last token is 0).
    #   δ_2 = 1 + 0.5·0 − 0.8   = 0.2          Â_2 = 0.2
    #   δ_1 = 0 + 0.5·0.8 − 0.4 = 0.0          Â_1 = 0.0 + 0.25·0.2 = 0.05
    #   δ_0 = 0 + 0.5·0.4 − 0.2 = 0.0          Â_0 = 0.0 + 0.25·0.05 = 0.0125
    # returns R = Â + V = [0.2125, 0.45, 1.0]
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    values = torch.tensor([[0.2, 0.4, 0.8, 9.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0]])
    advantages, returns = gae(rewards, values, mask, gamma=0.5, lam=0.5)
    torch.testing.assert_close(advantages, torch.tensor([[0.0125, 0.05, 0.2, 0.0]], dtype=torch.float64))
    torch.testing.assert_close(returns, torch.tensor([[0.2125, 0.45, 1.0, 0.0]], dtype=torch.float64))


def test_gae_with_lambda_zero_is_the_one_step_td_error():
    # λ = 0: Â_t = δ_t = r_t + γ V_{t+1} − V_t. γ = 1, r = [0, 1], V = [0.5, 0.25]:
    # δ_0 = 0 + 0.25 − 0.5 = −0.25, δ_1 = 1 + 0 − 0.25 = 0.75
    advantages, _ = gae(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.25]]), torch.ones(1, 2), gamma=1.0, lam=0.0)
    assert torch.allclose(advantages, torch.tensor([[-0.25, 0.75]]))


def test_gae_with_gamma_and_lambda_one_is_return_minus_value():
    torch.manual_seed(0)
    rewards = torch.randn(5, 7, dtype=torch.float64)  # [5, 7]
    values = torch.randn(5, 7, dtype=torch.float64)  # [5, 7]
    mask = (torch.arange(7)[None, :] < torch.tensor([7, 4, 1, 0, 6])[:, None]).long()  # [5, 7] prefixes
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    masked_rewards = rewards * mask  # [5, 7]
    reward_to_go = masked_rewards.flip(1).cumsum(1).flip(1)  # [5, 7] Σ_{t' ≥ t} r_t'
    torch.testing.assert_close(advantages, (reward_to_go - values) * mask)
    torch.testing.assert_close(returns, reward_to_go * mask)


def test_whiten_over_real_tokens_only():
    values = torch.tensor([[1.0, 3.0, 100.0], [2.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    # real values [1, 3, 2]: mean 2, Bessel std 1 → [−1, 1, 0]; padding stays 0
    torch.testing.assert_close(whiten(values, mask, eps=0.0), torch.tensor([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    assert torch.equal(whiten(torch.ones(2, 2), torch.ones(2, 2)), torch.zeros(2, 2))  # no spread: zeros, not NaN


@pytest.mark.parametrize(
    "value, old_value, target, expected, clipped",
    [
        # V = 1.0, V_old = 0.5, R = 0.0, ε_v = 0.2: V_clip = 0.5 + 0.2 = 0.7;
        # max((1 − 0)², (0.7 − 0)²) = 1 → ½ = 0.5 (the unclipped term wins: gradient kept)
        (1.0, 0.5, 0.0, 0.5, False),
        # V = 1.0, V_old = 0.5, R = 2.0: V_clip = 0.7; max((1 − 2)², (0.7 − 2)²) = 1.69 → 0.845 (clipped)
        (1.0, 0.5, 2.0, 0.845, True),
        # inside the clip range V_clip = V: ½ (0.6 − 1)² = 0.08
        (0.6, 0.5, 1.0, 0.08, False),
    ],
)
def test_clipped_value_loss_by_hand(value, old_value, target, expected, clipped):
    values = torch.tensor([[value]], dtype=torch.float64, requires_grad=True)
    loss, stats = clipped_value_loss(
        values,
        torch.tensor([[old_value]], dtype=torch.float64),
        torch.tensor([[target]], dtype=torch.float64),
        torch.ones(1, 1),
        clip_range=0.2,
    )
    assert loss.item() == pytest.approx(expected)
    assert stats["critic/clip_frac"] == float(clipped)
    loss.backward()
    # clipped: the loss is constant in V (the clipped value does not move), so the gradient is 0;
    # otherwise d/dV ½ (V − R)² = V − R
    assert values.grad.item() == pytest.approx(0.0 if clipped else value - target)


def test_clipped_value_loss_ignores_padding_and_matches_finite_differences():
    torch.manual_seed(0)
    values = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    old = values.detach() + 0.3 * torch.randn(3, 4, dtype=torch.float64)
    returns = torch.randn(3, 4, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]])
    assert torch.autograd.gradcheck(lambda v: clipped_value_loss(v, old, returns, mask, clip_range=0.2)[0], (values,))
    loss, _ = clipped_value_loss(values, old, returns, mask, clip_range=0.2)
    loss.backward()
    assert (values.grad[mask == 0] == 0).all()  # 6 padded positions get no gradient


def test_kl_in_reward_advantages_subtract_the_kl_still_to_come():
    # A = 1, KL = [0.1, 0.2, 0.3] on 3 real tokens, β = 0.5:
    # KL to go = [0.6, 0.5, 0.3] → Â = 1 − 0.5·[0.6, 0.5, 0.3] = [0.7, 0.75, 0.85]; the pad stays 0
    kl = torch.tensor([[0.1, 0.2, 0.3, 5.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0]])
    advantages = kl_in_reward_advantages(torch.tensor([1.0], dtype=torch.float64), kl, mask, beta=0.5)
    torch.testing.assert_close(advantages, torch.tensor([[0.7, 0.75, 0.85, 0.0]], dtype=torch.float64))


def test_kl_in_reward_equals_gae_with_unit_gamma_lambda_and_zero_values():
    # The REINFORCE++ form is GAE(γ = λ = 1) over rewards −β·KL_t plus the outcome on the last
    # token, with V = 0: two shipped functions, one identity.
    torch.manual_seed(0)
    kl = torch.rand(4, 5, dtype=torch.float64)
    mask = (torch.arange(5)[None, :] < torch.tensor([5, 3, 1, 4])[:, None]).long()
    scores = torch.tensor([1.0, -0.5, 0.0, 2.0], dtype=torch.float64)
    per_token = kl_in_reward_advantages(scores, kl, mask, beta=0.2)
    via_gae, _ = gae(
        token_rewards(scores, mask, kl, beta=0.2), torch.zeros(4, 5, dtype=torch.float64), mask, gamma=1.0, lam=1.0
    )
    torch.testing.assert_close(per_token, via_gae)


def test_per_token_advantages_in_the_grpo_loss_by_hand_and_by_finite_differences():
    # ρ = 1 (first pass): loss = −mean over real tokens of Â_t under token_mean: −(1 + 2 + 3) / 3 = −2
    logp = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
    per_token = torch.tensor([[1.0, 2.0, 3.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0]])
    loss, _ = grpo_loss(
        logp,
        logp.detach(),
        per_token,
        mask,
        ref_logp=None,
        epsilon_low=0.2,
        epsilon_high=0.2,
        beta=0.0,
        aggregation="token_mean",
    )
    assert loss.item() == pytest.approx(-2.0)
    torch.manual_seed(0)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    old = x.detach() + 0.05 * torch.randn(3, 4, dtype=torch.float64)
    adv = torch.randn(3, 4, dtype=torch.float64)
    ref = x.detach() - 0.1
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    for aggregation in ("sequence_mean", "token_mean", "constant"):
        assert torch.autograd.gradcheck(
            lambda v: grpo_loss(
                v, old, adv, mask, ref_logp=ref, epsilon_low=0.2, epsilon_high=0.28, beta=0.1, aggregation=aggregation
            )[0],
            (x,),
        )


def test_entropy_bonus_by_hand_and_by_finite_differences():
    # token entropies [1, 2 | 3, pad]: token mean = 6 / 3 = 2 → loss −0.01·2 = −0.02;
    # sequence mean = (1.5 + 3) / 2 = 2.25 → −0.0225
    entropy = torch.tensor([[1.0, 2.0], [3.0, 7.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1], [1, 0]])
    counts = dict(num_sequences=None, num_tokens=None, max_tokens=None)
    token = entropy_bonus_loss(entropy, mask, coef=0.01, aggregation="token_mean", **counts)
    sequence = entropy_bonus_loss(entropy, mask, coef=0.01, aggregation="sequence_mean", **counts)
    assert token.item() == pytest.approx(-0.02) and sequence.item() == pytest.approx(-0.0225)
    logits = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)

    def f(z):
        logp = torch.log_softmax(z, dim=-1)  # [2, 3, 5]
        h = -(logp.exp() * logp).sum(-1)  # [2, 3] entropy of each position
        return entropy_bonus_loss(h, torch.tensor([[1, 1, 0], [1, 1, 1]]), coef=0.1, aggregation="token_mean", **counts)

    assert torch.autograd.gradcheck(f, (logits,))
    assert float(f(logits).detach()) < 0  # entropy > 0, so the bonus lowers the loss
