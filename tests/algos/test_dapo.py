"""DAPO's dynamic-sampling filter, soft overlong punishment (eq. 13) and overlong filtering."""

import pytest
import torch

from rlvr.algos import group_advantages, groups_with_signal, overlong_filter_mask, overlong_penalty

NAN = float("nan")


def test_groups_with_signal_keeps_exactly_the_groups_with_nonzero_advantage():
    rewards = torch.tensor(
        [
            [1.0, 1.0, 1.0, 1.0],  # all right: accuracy 1, dropped
            [0.0, 0.0, 0.0, 0.0],  # all wrong: accuracy 0, dropped
            [1.0, 0.0, 0.0, 0.0],  # mixed: kept
            [1.0, NAN, NAN, NAN],  # one judged sample: no spread, dropped
            [0.5, 0.5, NAN, 0.4],  # partial credit that differs: kept
            [0.0, 1.0, NAN, NAN],  # two judged samples that differ: kept
        ]
    )
    keep = groups_with_signal(rewards)
    assert keep.tolist() == [False, False, True, False, True, True]
    advantages, _ = group_advantages(rewards)
    assert torch.equal(keep, advantages.abs().sum(dim=1) > 0)  # the same groups GRPO learns from


@pytest.mark.parametrize(
    "length, expected",
    [
        # L_max = 40, L_cache = 8: no penalty up to 40 − 8 = 32 tokens
        (10, 0.0),
        (32, 0.0),
        (33, -1 / 8),  # (32 − 33) / 8
        (36, -0.5),  # (32 − 36) / 8
        (40, -1.0),  # (32 − 40) / 8: the ramp reaches −1 exactly at L_max
        (41, -1.0),  # beyond L_max: −1
    ],
)
def test_overlong_penalty_eq13_by_hand(length, expected):
    penalty = overlong_penalty(torch.tensor([length]), max_length=40, cache_length=8)
    assert penalty.item() == pytest.approx(expected)


def test_overlong_penalty_is_monotone_and_bounded():
    lengths = torch.arange(0, 60)  # [60]
    penalty = overlong_penalty(lengths, max_length=50, cache_length=20)  # [60]
    assert (penalty.diff() <= 0).all() and penalty.max() == 0 and penalty.min() == -1
    with pytest.raises(ValueError, match="cache_length"):
        overlong_penalty(lengths, max_length=10, cache_length=0)


def test_overlong_filter_masks_only_truncated_rows():
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1]])
    truncated = torch.tensor([True, False, False])
    filtered = overlong_filter_mask(mask, truncated)
    assert filtered.tolist() == [[0, 0, 0], [1, 1, 0], [1, 1, 1]] and filtered.dtype == mask.dtype
