"""GSPO's logged clip fractions count sequences, as TRL's GRPOTrainer with importance_sampling_level="sequence"."""

import pytest
import torch

from rlvr.algos.gspo import gspo_loss

# Three sequences of 3, 1 and 2 real tokens (6 tokens), eps 0.2 on both sides, old log-probs 0:
#   row 0: log-ratios 0.3 -> s = e^0.3 ≈ 1.35 > 1.2 with A = +1: high-clipped (3 tokens)
#   row 1: log-ratio -0.5 -> s = e^-0.5 ≈ 0.61 < 0.8 with A = -1: low-clipped (1 token)
#   row 2: log-ratios 0   -> s = 1, unclipped (2 tokens)
LOGP = torch.tensor([[0.3, 0.3, 0.3], [-0.5, 9.0, 9.0], [0.0, 0.0, 9.0]])  # [N=3, T=3]; 9.0 is padding
MASK = torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 0]])  # [N, T]
ADVANTAGES = torch.tensor([1.0, -1.0, 1.0])  # [N]
KNOBS = dict(ref_logp=None, epsilon_low=0.2, epsilon_high=0.2, beta=0.0)


def test_clip_fractions_are_per_sequence_not_per_token():
    _, stats = gspo_loss(LOGP, torch.zeros(3, 3), ADVANTAGES, MASK, **KNOBS)
    # one clipped sequence of three on each side: 1/3 (a token mean would say 3/6 high, 1/6 low)
    assert stats["clip_ratio/high_mean"] == pytest.approx(1 / 3)
    assert stats["clip_ratio/low_mean"] == pytest.approx(1 / 3)
    assert stats["clip_ratio/region_mean"] == pytest.approx(2 / 3)


def test_a_fully_masked_row_counts_as_an_unclipped_sequence_as_in_trl():
    # TRL divides by x.shape[0], every row of the batch; a row with no real token has s = 1.
    logp = torch.cat([LOGP, torch.full((1, 3), 5.0)])  # [4, 3]
    mask = torch.cat([MASK, torch.zeros(1, 3, dtype=MASK.dtype)])  # [4, 3]
    _, stats = gspo_loss(logp, torch.zeros(4, 3), torch.cat([ADVANTAGES, torch.tensor([1.0])]), mask, **KNOBS)
    assert stats["clip_ratio/high_mean"] == pytest.approx(1 / 4)
    assert stats["clip_ratio/region_mean"] == pytest.approx(2 / 4)


def test_kl_and_ratio_mean_stay_token_means():
    # ratio_mean: (3 e^0.3 + e^-0.5 + 2 · 1) / 6 real tokens; kl is per token in TRL too
    _, stats, tokens = gspo_loss(LOGP, torch.zeros(3, 3), ADVANTAGES, MASK, **KNOBS, return_token_stats=True)
    expected = (3 * torch.tensor(0.3).exp() + torch.tensor(-0.5).exp() + 2) / 6
    assert stats["ratio_mean"] == pytest.approx(float(expected), rel=1e-6)
    # the per-token tensors for the inspector still mark every token of a clipped sequence
    assert tokens["clipped"].sum() == 3 + 1
