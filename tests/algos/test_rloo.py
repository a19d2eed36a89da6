"""The rloo preset is the RLOO paper's sequence-level REINFORCE (Ahmadian et al. 2024, arXiv:2402.14740, eq. 5)."""

from pathlib import Path

import pytest
import torch

from rlvr.algos import ALGORITHMS
from rlvr.config import load_config

PRESET = Path(__file__).resolve().parents[2] / "configs" / "rloo.yaml"


def test_rloo_preset_loss_is_the_papers_estimator():
    cfg = load_config(PRESET)
    assert cfg.algo.algorithm == "rloo" and cfg.algo.aggregation == "sequence_sum"
    algorithm = ALGORITHMS["rloo"]
    # One query, k = 3 completions, rewards [1, 0, 0]; leave-one-out baselines 0, 1/2, 1/2:
    # A = [1, -1/2, -1/2]. Completion lengths 2, 1, 2 (padding holds garbage).
    adv, _ = algorithm.advantages(
        torch.tensor([[1.0, 0.0, 0.0]]), eps=cfg.algo.advantage_eps, scale_by_std=cfg.algo.scale_rewards
    )
    advantages = adv.flatten().double()  # [N=3]
    torch.testing.assert_close(advantages, torch.tensor([1.0, -0.5, -0.5], dtype=torch.float64))
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 0]])  # [N, T]
    values = torch.tensor([[-0.5, -1.0, 7.0], [-2.0, 7.0, 7.0], [-0.1, -0.2, 7.0]], dtype=torch.float64)
    logp = values.clone().requires_grad_()  # [N, T]
    # On-policy (old = current, every ratio 1; β = 0: the paper puts no KL in this loss):
    loss, _ = algorithm.loss(
        logp,
        logp.detach(),
        advantages,
        mask,
        ref_logp=None,
        epsilon_low=cfg.algo.epsilon,
        epsilon_high=cfg.algo.epsilon,
        beta=0.0,
        aggregation=cfg.algo.aggregation,
    )
    loss.backward()
    # the surrogate's value is -1/k Σ_i A_i |o_i| = -(1·2 - 0.5·1 - 0.5·2) / 3 = -1/6
    # (the per-sequence mean of the old preset gave -(1 - 0.5 - 0.5) / 3 = 0)
    assert loss.item() == pytest.approx(-1 / 6)
    # The paper's estimator, independently: ∇ of -1/k Σ_i A_i log π(y_i|x), log π(y|x) = Σ_t log π(y_t|...)
    paper_logp = values.clone().requires_grad_()  # [N, T]
    sequence_logp = torch.where(mask.bool(), paper_logp, 0.0).sum(dim=1)  # [N]
    (-(advantages * sequence_logp).mean()).backward()
    torch.testing.assert_close(logp.grad, paper_logp.grad)
    # by hand: -A_i / 3 on each real token: -1/3 (row 0), +1/6 (rows 1, 2), 0 on padding
    expected = torch.tensor([[-1 / 3, -1 / 3, 0], [1 / 6, 0, 0], [1 / 6, 1 / 6, 0]], dtype=torch.float64)
    torch.testing.assert_close(logp.grad, expected)
