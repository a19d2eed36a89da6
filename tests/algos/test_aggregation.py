"""Loss aggregation modes: hand values, masking, micro-batch additivity."""

import pytest
import torch

from rlvr.algos import AGGREGATIONS

# Losses 1..6 with row 0 keeping 2 tokens and row 1 keeping 1: real tokens are 1, 2 | 4.
LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # [N=2, T=3]
MASK = torch.tensor([[1, 1, 0], [1, 0, 0]])  # [N, T]


def aggregate(name, loss, mask, **counts):
    defaults = dict(num_sequences=loss.shape[0], num_tokens=int(mask.sum()), max_tokens=loss.shape[1])
    return AGGREGATIONS[name](loss, mask, **{**defaults, **counts})


@pytest.mark.parametrize(
    "name, expected",
    [
        ("sequence_mean", 2.75),  # row means (1+2)/2 = 1.5 and 4/1 = 4 → (1.5 + 4)/2 = 2.75
        ("token_mean", 7 / 3),  # (1 + 2 + 4) / 3 tokens
        ("constant", 7 / 6),  # (1 + 2 + 4) / (2 sequences · 3 max tokens)
        ("sequence_sum", 3.5),  # row sums 1+2 = 3 and 4 → (3 + 4) / 2 sequences
    ],
)
def test_hand_values(name, expected):
    assert aggregate(name, LOSS, MASK).item() == pytest.approx(expected)


def test_constant_uses_max_tokens_not_padded_width():
    # Dr. GRPO divides by the generation limit: 7 / (2 · 10) = 0.35.
    assert aggregate("constant", LOSS, MASK, max_tokens=10).item() == pytest.approx(0.35)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("sequence_mean", (1.5 + 4 + 0) / 3),  # the empty row counts as a sequence but adds 0
        ("token_mean", 7 / 3),  # still 3 real tokens
        ("constant", 7 / 9),  # 3 sequences · 3 max tokens
        ("sequence_sum", 7 / 3),  # the empty row counts as a sequence but adds 0
    ],
)
def test_fully_masked_row_contributes_nothing(name, expected):
    # A third row of NaN/inf garbage, entirely masked, must not leak into the loss.
    loss = torch.cat([LOSS, torch.tensor([[float("nan"), float("inf"), 7.0]])])  # [3, 3]
    mask = torch.cat([MASK, torch.zeros(1, 3, dtype=MASK.dtype)])  # [3, 3]
    assert aggregate(name, loss, mask).item() == pytest.approx(expected)


@pytest.mark.parametrize("name", sorted(AGGREGATIONS))
def test_empty_mask_gives_zero_not_nan(name):
    loss = aggregate(name, LOSS, torch.zeros_like(MASK), num_tokens=0)  # []
    assert loss.item() == 0.0


@pytest.mark.parametrize("name", sorted(AGGREGATIONS))
def test_row_split_sums_to_whole(name):
    loss = torch.randn(7, 5)  # [N, T]
    mask = (torch.rand(7, 5) > 0.3).long()  # [N, T]
    counts = dict(num_sequences=7, num_tokens=int(mask.sum()), max_tokens=5)
    whole = aggregate(name, loss, mask, **counts)  # []
    parts = sum(aggregate(name, loss[rows], mask[rows], **counts) for rows in (slice(0, 2), slice(2, 7)))
    torch.testing.assert_close(parts, whole)


def test_modes_weigh_lengths_differently():
    # Guard against two modes silently being the same function.
    values = {name: aggregate(name, LOSS, MASK).item() for name in AGGREGATIONS}
    assert len(set(values.values())) == len(AGGREGATIONS)
