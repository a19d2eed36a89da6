"""GRPO loss, DeepSeekMath eq. 3: hand values, an independent loop reference, gradients,
micro-batching."""

import math

import pytest
import torch

from rlvr.algos import AGGREGATIONS, group_advantages, grpo_loss, grpo_per_token_loss

E = math.e


def one_token(log_ratio, advantage, *, epsilon_low=0.2, epsilon_high=0.2):
    """Per-token loss and stats of a single token with log ρ = log_ratio, β = 0."""
    old_logp = torch.tensor([[-1.0]], dtype=torch.float64)  # [1, 1]
    logp = old_logp + log_ratio  # [1, 1]
    advantages = torch.tensor([advantage], dtype=torch.float64)  # [1]
    return grpo_per_token_loss(
        logp, old_logp, advantages, ref_logp=None, epsilon_low=epsilon_low, epsilon_high=epsilon_high, beta=0.0
    )


@pytest.mark.parametrize(
    "log_ratio, advantage, eps_high, expected, low, high",
    [
        (1.0, 1.0, 0.2, -1.2, False, True),  # ρ = e, A = +1: min(e, 1.2) = 1.2 → loss −1.2
        (1.0, -1.0, 0.2, E, False, False),  # ρ = e, A = −1: min(−e, −1.2) = −e → loss e (unclipped)
        (-1.0, -1.0, 0.2, 0.8, True, False),  # ρ = 1/e, A = −1: min(−0.368, −0.8) = −0.8 → loss 0.8
        (-1.0, 1.0, 0.2, -1 / E, False, False),  # ρ = 1/e, A = +1: min(0.368, 0.8) = 0.368 → loss −1/e
        (math.log(1.25), 1.0, 0.28, -1.25, False, False),  # clip-higher ε_high = 0.28: 1.25 < 1.28, kept
        (math.log(1.25), 1.0, 0.2, -1.2, False, True),  # symmetric ε = 0.2: 1.25 clipped to 1.2
        (math.log(0.75), -1.0, 0.28, 0.8, True, False),  # lower side uses ε_low = 0.2: 0.75 → 0.8
        (1.0, 0.0, 0.2, 0.0, False, False),  # A = 0: no gradient either way, so not counted as clipped
        (-1.0, 0.0, 0.2, 0.0, False, False),
    ],
)
def test_clipping_hand_values(log_ratio, advantage, eps_high, expected, low, high):
    loss, stats = one_token(log_ratio, advantage, epsilon_high=eps_high)  # [1, 1]
    assert loss.item() == pytest.approx(expected)
    assert stats["ratio"].item() == pytest.approx(math.exp(log_ratio))
    assert stats["is_low_clipped"].item() is low
    assert stats["is_high_clipped"].item() is high
    assert stats["clipped"].item() is (low or high)


def test_clipped_token_has_no_gradient_and_unclipped_one_does():
    # loss = −ρA with ρ = exp(logp − old): d/dlogp = −ρA. Clipped (ρ = e, A = +1): 0.
    # Unclipped (ρ = e, A = −1): d/dlogp = e.
    old_logp = torch.zeros(2, 1, dtype=torch.float64)  # [2, 1]
    logp = torch.ones(2, 1, dtype=torch.float64, requires_grad=True)  # [2, 1]
    advantages = torch.tensor([1.0, -1.0], dtype=torch.float64)  # [2]
    loss, _ = grpo_per_token_loss(
        logp, old_logp, advantages, ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0
    )  # [2, 1]
    loss.sum().backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[0.0], [E]], dtype=torch.float64))


@pytest.mark.parametrize(
    "advantage, estimator, expected",
    [
        # ρ = 1 so the surrogate is A; π_θ = 0.5, π_ref = 0.25: k3 = 0.5 + log 2 − 1 = 0.19315.
        (0.0, "k3", 0.04 * (0.5 + math.log(2) - 1)),  # loss = 0 + β·k3
        (1.0, "k3", -1.0 + 0.04 * (0.5 + math.log(2) - 1)),  # loss = −1 + β·k3
        (1.0, "k1", -1.0 + 0.04 * math.log(2)),  # k1 = log 2
        (1.0, "k2", -1.0 + 0.04 * 0.5 * math.log(2) ** 2),  # k2 = ½ log² 2
    ],
)
def test_beta_times_kl_is_added(advantage, estimator, expected):
    logp = torch.tensor([[math.log(0.5)]], dtype=torch.float64)  # [1, 1]
    ref_logp = torch.tensor([[math.log(0.25)]], dtype=torch.float64)  # [1, 1]
    advantages = torch.tensor([advantage], dtype=torch.float64)  # [1]
    loss, stats = grpo_per_token_loss(
        logp,
        logp,
        advantages,
        ref_logp=ref_logp,
        epsilon_low=0.2,
        epsilon_high=0.2,
        beta=0.04,
        kl_estimator=estimator,
    )  # [1, 1]
    assert loss.item() == pytest.approx(expected)
    assert stats["kl"].item() == pytest.approx((expected + advantage) / 0.04)


def test_beta_zero_ignores_kl_but_reports_it():
    logp, ref_logp = torch.zeros(1, 1), torch.full((1, 1), -1.0)  # [1, 1] each
    loss, stats = grpo_per_token_loss(
        logp, logp, torch.ones(1), ref_logp=ref_logp, epsilon_low=0.2, epsilon_high=0.2, beta=0.0
    )  # [1, 1]
    assert loss.item() == pytest.approx(-1.0)
    assert stats["kl"].item() == pytest.approx(math.exp(-1) + 1 - 1)  # k3 with log r = −1


def test_errors_name_the_choices():
    logp, mask, advantages = torch.zeros(2, 3), torch.ones(2, 3), torch.zeros(2)  # [N, T], [N, T], [N]
    common = dict(ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0)
    with pytest.raises(ValueError, match="sequence_mean"):
        grpo_loss(logp, logp, advantages, mask, **common, aggregation="mean")
    with pytest.raises(ValueError, match="k3"):
        grpo_loss(logp, logp, advantages, mask, **common, kl_estimator="k4")
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(logp, logp, advantages, mask, **{**common, "beta": 0.1})
    with pytest.raises(ValueError, match=r"\[N\] or \[N, T\]"):
        grpo_loss(logp, logp, torch.zeros(3), mask, **common)  # N = 2, not 3
    with pytest.raises(ValueError, match=r"\[N\] or \[N, T\]"):
        grpo_loss(logp, logp, torch.zeros(2, 4), mask, **common)  # per-token, but T = 3, not 4


def test_stats_are_token_means_over_real_tokens():
    # Row 0, A = +1: ρ = e (high-clipped), ρ = 1. Row 1, A = −1: ρ = 1/e (low-clipped), then a
    # padded token. Over the 3 real tokens: low 1/3, high 1/3, region 2/3, ratio (e+1+1/e)/3.
    old_logp = torch.zeros(2, 2)  # [2, 2]
    logp = torch.tensor([[1.0, 0.0], [-1.0, 5.0]])  # [2, 2]
    mask = torch.tensor([[1, 1], [1, 0]])  # [2, 2]
    _, stats = grpo_loss(
        logp, old_logp, torch.tensor([1.0, -1.0]), mask, ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0
    )
    assert stats["clip_ratio/low_mean"] == pytest.approx(1 / 3)
    assert stats["clip_ratio/high_mean"] == pytest.approx(1 / 3)
    assert stats["clip_ratio/region_mean"] == pytest.approx(2 / 3)
    assert stats["ratio_mean"] == pytest.approx((E + 1 + 1 / E) / 3, rel=1e-6)
    assert stats["kl"] == 0.0
    assert all(isinstance(value, float) for value in stats.values())


def random_batch(num_queries=3, group_size=4, max_len=6, seed=0):
    """Rewards [B, G], log-probs [N, T] with garbage (−inf, NaN) on padding, lengths [N] ≥ 0."""
    gen = torch.Generator().manual_seed(seed)
    n = num_queries * group_size
    rewards = torch.randint(0, 2, (num_queries, group_size), generator=gen).double()  # [B, G]
    rewards[0] = torch.rand(group_size, generator=gen, dtype=torch.float64)  # partial credit
    old_logp = -torch.rand(n, max_len, generator=gen, dtype=torch.float64) * 3  # [N, T]
    logp = old_logp + 0.3 * torch.randn(n, max_len, generator=gen, dtype=torch.float64)  # [N, T]
    ref_logp = old_logp + 0.3 * torch.randn(n, max_len, generator=gen, dtype=torch.float64)  # [N, T]
    lengths = torch.randint(1, max_len + 1, (n,), generator=gen)  # [N]
    lengths[-1] = 0  # one completion with no tokens at all
    mask = torch.arange(max_len)[None, :] < lengths[:, None]  # [N, T]
    old_logp[~mask] = float("-inf")  # padding garbage must not leak
    ref_logp[~mask] = float("nan")
    return rewards, logp, old_logp, ref_logp, mask, lengths


def reference_grpo_loss(rewards, logp, old_logp, ref_logp, lengths, *, eps_low, eps_high, beta, adv_eps):
    """−J(θ) of DeepSeekMath eq. 3 with §4.1.2 advantages and eq. 4's KL, written as plain loops:
    −1/B Σ_q 1/G Σ_i 1/|o_i| Σ_t [min(ρA, clip(ρ)A) − β(π_ref/π_θ − log(π_ref/π_θ) − 1)].
    An empty completion contributes 0 (its 1/|o_i| Σ_t is taken as 0)."""
    rewards, logp, old_logp, ref_logp = rewards.tolist(), logp.tolist(), old_logp.tolist(), ref_logp.tolist()
    num_queries, group_size = len(rewards), len(rewards[0])
    objective = 0.0
    for q in range(num_queries):
        group = rewards[q]
        mean = sum(group) / group_size
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (group_size - 1))  # Bessel
        query_objective = 0.0
        for g in range(group_size):
            advantage = 0.0 if std == 0 else (group[g] - mean) / (std + adv_eps)
            i = q * group_size + g
            completion_objective = 0.0
            for t in range(int(lengths[i])):
                rho = math.exp(logp[i][t] - old_logp[i][t])
                clipped_rho = min(max(rho, 1 - eps_low), 1 + eps_high)
                surrogate = min(rho * advantage, clipped_rho * advantage)
                ref_over_policy = math.exp(ref_logp[i][t] - logp[i][t])
                kl = ref_over_policy - math.log(ref_over_policy) - 1
                completion_objective += surrogate - beta * kl
            if lengths[i] > 0:
                query_objective += completion_objective / int(lengths[i])
        objective += query_objective / group_size
    return -objective / num_queries


@pytest.mark.parametrize(
    "seed, eps_low, eps_high, beta", [(0, 0.2, 0.2, 0.04), (1, 0.2, 0.28, 0.0), (2, 0.1, 0.3, 0.5)]
)
def test_matches_loop_reference(seed, eps_low, eps_high, beta):
    rewards, logp, old_logp, ref_logp, mask, lengths = random_batch(seed=seed)
    advantages, _ = group_advantages(rewards, eps=1e-4)  # [B, G]
    loss, _ = grpo_loss(
        logp,
        old_logp,
        advantages.reshape(-1),
        mask,
        ref_logp=ref_logp,
        epsilon_low=eps_low,
        epsilon_high=eps_high,
        beta=beta,
    )
    expected = reference_grpo_loss(
        rewards, logp, old_logp, ref_logp, lengths, eps_low=eps_low, eps_high=eps_high, beta=beta, adv_eps=1e-4
    )
    assert loss.item() == pytest.approx(expected, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("aggregation", sorted(AGGREGATIONS))
def test_gradient_matches_finite_differences(aggregation):
    rewards, logp, old_logp, ref_logp, mask, _ = random_batch(seed=3)
    advantages, _ = group_advantages(rewards)  # [B, G]

    def loss_of(policy_logp):
        return grpo_loss(
            policy_logp,
            old_logp,
            advantages.reshape(-1),
            mask,
            ref_logp=ref_logp,
            epsilon_low=0.2,
            epsilon_high=0.28,
            beta=0.1,
            aggregation=aggregation,
        )[0]

    assert torch.autograd.gradcheck(loss_of, (logp.clone().requires_grad_(),))


def test_fully_masked_row_gets_no_gradient_and_no_say():
    rewards, logp, old_logp, ref_logp, mask, _ = random_batch(seed=4)
    advantages = group_advantages(rewards)[0].reshape(-1)  # [N]
    common = dict(ref_logp=ref_logp, epsilon_low=0.2, epsilon_high=0.2, beta=0.04)
    logp = logp.clone().requires_grad_()  # [N, T]
    loss, _ = grpo_loss(logp, old_logp, advantages, mask, **common)
    loss.backward()
    assert not mask[-1].any()
    assert torch.equal(logp.grad[-1], torch.zeros_like(logp.grad[-1]))
    assert torch.equal(logp.grad[~mask], torch.zeros_like(logp.grad[~mask]))  # padding, too
    assert torch.isfinite(logp.grad).all()
    changed = logp.detach().clone()  # [N, T]
    changed[~mask] = 123.0
    assert grpo_loss(changed, old_logp, advantages, mask, **common)[0].item() == loss.item()


@pytest.mark.parametrize("aggregation", sorted(AGGREGATIONS))
def test_micro_batches_sum_to_full_batch(aggregation):
    rewards, logp, old_logp, ref_logp, mask, _ = random_batch(seed=5)
    advantages = group_advantages(rewards)[0].reshape(-1)  # [N]
    counts = dict(num_sequences=logp.shape[0], num_tokens=int(mask.sum()), max_tokens=8)
    common = dict(epsilon_low=0.2, epsilon_high=0.28, beta=0.04, aggregation=aggregation)

    b_logp = logp.clone().requires_grad_()  # [N, T]
    b_loss, _ = grpo_loss(b_logp, old_logp, advantages, mask, ref_logp=ref_logp, **common, **counts)
    b_loss.backward()

    mb_logp = logp.clone().requires_grad_()  # [N, T]
    total = 0.0
    for rows in (slice(0, 5), slice(5, 7), slice(7, None)):
        mb_loss, _ = grpo_loss(
            mb_logp[rows], old_logp[rows], advantages[rows], mask[rows], ref_logp=ref_logp[rows], **common, **counts
        )
        mb_loss.backward()
        total = total + mb_loss.detach()
    torch.testing.assert_close(total, b_loss.detach())
    torch.testing.assert_close(mb_logp.grad, b_logp.grad)
    assert b_logp.grad.abs().sum() > 0
