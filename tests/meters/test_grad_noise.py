"""The gradient noise estimator (McCandlish et al. 2018, App. A) against brute force on synthetic
gradients with a known mean and covariance, and the in-loop micro-batch hook on the real model."""

import math

import pytest
import torch

from rlvr.config import AlgoConfig
from rlvr.engine.update import accumulate_policy_gradient
from rlvr.meters.grad_noise import GradientReader, MicroBatchNoise, estimate_from_batches, estimate_noise
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries


def test_hand_values():
    # |G_small|² = 5 at B = 1, |G_big|² = 2 at B = 4: tr Σ = (5 − 2) / (1 − 1/4) = 4,
    # |G|² = (4·2 − 1·5) / 3 = 1, so B_simple = 4 and the B = 4 gradient's variance is 4/4 = 1.
    found = estimate_noise(5.0, 2.0, 1, 4)
    assert found.trace == pytest.approx(4.0) and found.sq_norm == pytest.approx(1.0)
    assert found.noise_scale == pytest.approx(4.0) and found.variance == pytest.approx(1.0)
    assert math.isnan(estimate_noise(5.0, 0.5, 1, 4).noise_scale)  # |G|² estimate ≤ 0: undefined, not huge
    with pytest.raises(ValueError):
        estimate_noise(1.0, 1.0, 4, 4)


def test_equals_brute_force_sample_covariance():
    # With M small batches G_j of b samples: tr Σ estimate = b · tr(unbiased sample covariance of the G_j)
    # and |G|² estimate = |mean G_j|² − tr(sample cov)/M: the algebra of App. A, checked numerically.
    generator = torch.Generator().manual_seed(0)
    small = torch.randn(6, 5, generator=generator, dtype=torch.float64) + 0.3  # [M, D]
    found = estimate_from_batches(small, b_small=3)
    sample_cov = torch.cov(small.T)  # [D, D], divides by M − 1
    assert found.trace == pytest.approx(3 * float(sample_cov.trace()), rel=1e-12)
    assert found.sq_norm == pytest.approx(float(small.mean(0).pow(2).sum() - sample_cov.trace() / 6), rel=1e-12)


def test_unbiased_for_a_known_covariance():
    # Per-sample gradients g ~ N(μ, Σ) with |μ|² = 0.25 + 0.04 + 0.01 = 0.3, tr Σ = 1 + 2 + 0.5 = 3.5.
    generator = torch.Generator().manual_seed(1)
    mu = torch.tensor([0.5, -0.2, 0.1], dtype=torch.float64)  # [D]
    chol = torch.linalg.cholesky(torch.tensor([[1.0, 0.3, 0.0], [0.3, 2.0, 0.2], [0.0, 0.2, 0.5]], dtype=torch.float64))
    trials, m, b = 4000, 4, 8
    samples = mu + torch.randn(trials, m, b, 3, generator=generator, dtype=torch.float64) @ chol.T  # [trials, M, b, D]
    estimates = [estimate_from_batches(samples[k].mean(dim=1), b_small=b) for k in range(trials)]
    trace = sum(e.trace for e in estimates) / trials
    sq_norm = sum(e.sq_norm for e in estimates) / trials
    assert trace == pytest.approx(3.5, rel=0.03)
    assert sq_norm == pytest.approx(0.3, abs=0.02)
    assert trace / sq_norm == pytest.approx(3.5 / 0.3, rel=0.1)  # B_simple from the averaged parts


def test_subset_reader_is_an_unbiased_rescaled_norm(random_policy):
    model, _ = random_policy
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    whole = GradientReader(model)
    part = GradientReader(model, max_coords=1000)
    assert whole.scale == 1.0 and len(whole.read()) == sum(p.numel() for p in model.parameters())
    assert len(part.read()) <= 1100 and part.scale > 1
    assert part.sq_norm(part.read()) == pytest.approx(whole.sq_norm(whole.read()), rel=1e-6)  # all-ones: exact


def test_micro_batch_hook_matches_separate_backward_passes(base_policy):
    # The hook reads per-micro-batch gradients by differencing the accumulated .grad; each must equal
    # that micro-batch's own gradient, so the estimate equals estimate_from_batches on those.
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(4, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    advantages = torch.linspace(-1.0, 1.0, 16)  # [N]
    algo = AlgoConfig(beta=0.0)
    noise = MicroBatchNoise(model)
    seen = []
    accumulate_policy_gradient(
        model,
        batch,
        advantages,
        None,
        algo,
        temperature=1.0,
        max_new_tokens=40,
        micro_batch_size=4,
        on_micro_batch=lambda mb, logp: (noise(mb, logp), seen.append(mb)),
    )
    reader = GradientReader(model)
    own = []
    for mb in seen:  # each micro-batch's gradient alone, with the same whole-batch counts
        model.zero_grad(set_to_none=True)
        accumulate_policy_gradient(
            model,
            batch,
            advantages * _indicator(mb.rows, 16),
            None,
            algo,
            temperature=1.0,
            max_new_tokens=40,
            micro_batch_size=4,
        )
        own.append(4 * reader.read())  # G_j = M · g_j
    expected = estimate_from_batches(torch.stack(own), b_small=4)
    found = noise.estimate()
    assert found is not None and found.trace > 0
    assert found.trace == pytest.approx(expected.trace, rel=1e-4)
    assert found.sq_norm == pytest.approx(expected.sq_norm, rel=1e-3, abs=1e-7)
    metrics = noise.metrics()
    assert metrics["grad/variance"] == pytest.approx(found.trace / 16)


def _indicator(rows: torch.Tensor, n: int) -> torch.Tensor:
    keep = torch.zeros(n)  # [N]
    keep[rows] = 1.0
    return keep


def test_one_micro_batch_logs_null(base_policy):
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    noise = MicroBatchNoise(model)
    accumulate_policy_gradient(
        model,
        batch,
        torch.linspace(-1, 1, 8),
        None,
        AlgoConfig(beta=0.0),
        temperature=1.0,
        max_new_tokens=40,
        micro_batch_size=0,
        on_micro_batch=noise,
    )
    assert noise.estimate() is None
    assert all(math.isnan(v) for v in noise.metrics().values())


def test_the_trainer_logs_both_metrics_every_step(base_model_dir, tmp_path):
    from rlvr.config import load_config
    from rlvr.engine.loop import Trainer

    small = [
        f"model.name={base_model_dir}",
        "train.batch_queries=4",
        "rollout.group_size=4",
        "task.num_train=40",
        "task.num_eval=8",
        "algo.beta=0",
    ]
    metrics = Trainer(load_config(None, [*small, "optim.micro_batch_size=4"]), tmp_path).step(0)
    assert metrics["grad/variance"] > 0 and math.isfinite(metrics["grad/variance"])
    assert metrics["grad/trace_cov"] == pytest.approx(16 * metrics["grad/variance"])  # tr Σ / N, N = 16
    single = Trainer(load_config(None, [*small, "optim.micro_batch_size=0"]), tmp_path).step(0)
    assert math.isnan(single["grad/variance"]) and math.isnan(single["grad/noise_scale"])
