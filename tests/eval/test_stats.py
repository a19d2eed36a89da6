"""The one statistics helper the studies share: mean ± sd over seeds and a seeded bootstrap."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest

from rlvr.eval.stats import Spread, _quantile, bootstrap_ci, finite, mean_sd, paired_bootstrap_ci


def test_mean_and_sample_sd_shown_by_hand() -> None:
    # mean (1 + 2 + 3) / 3 = 2; squared deviations 1 + 0 + 1 = 2, over n − 1 = 2: variance 1, sd 1
    spread = mean_sd([1, 2, 3])
    assert spread == Spread(2.0, 1.0, 3)
    assert spread.standard_error == pytest.approx(1 / math.sqrt(3))


def test_one_value_has_no_spread_and_none_has_no_mean() -> None:
    assert mean_sd([0.7]) == Spread(0.7, None, 1)
    assert mean_sd([0.7]).standard_error is None
    assert mean_sd([]) == Spread(None, None, 0)


def test_missing_and_non_finite_values_are_left_out_not_counted_as_zero() -> None:
    assert finite([None, 1, float("nan"), float("inf"), "x", 3]) == [1.0, 3.0]
    assert mean_sd([None, 0.2, float("nan"), 0.4]) == mean_sd([0.2, 0.4])


def test_bootstrap_is_reproducible_for_a_seed_and_moves_with_it() -> None:
    values = [0.1, 0.4, 0.35, 0.8, 0.55]
    first = bootstrap_ci(values, seed=3, resamples=2000)
    assert first == bootstrap_ci(values, seed=3, resamples=2000)
    assert first != bootstrap_ci(values, seed=4, resamples=2000)
    low, high = first
    assert min(values) <= low < statistics.fmean(values) < high <= max(values)


def test_bootstrap_of_identical_values_is_that_value() -> None:
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert bootstrap_ci([2.0]) == (2.0, 2.0)
    assert bootstrap_ci([None, float("nan")]) is None


def test_bootstrap_of_a_mean_matches_the_normal_interval_on_a_large_sample() -> None:
    # 400 draws from N(0, 1): the 95% interval of the mean is about ±1.96/√400 = ±0.098 around it
    rng = random.Random(0)
    xs = [rng.gauss(0, 1) for _ in range(400)]
    low, high = bootstrap_ci(xs, resamples=4000)
    half = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs))
    assert low == pytest.approx(statistics.fmean(xs) - half, abs=0.015)
    assert high == pytest.approx(statistics.fmean(xs) + half, abs=0.015)


def test_the_quantile_is_numpys_linear_one() -> None:
    ordered = sorted(random.Random(1).random() for _ in range(37))
    for q in (0.0, 0.025, 0.5, 0.975, 1.0):
        assert _quantile(ordered, q) == pytest.approx(float(np.quantile(ordered, q)))


def test_bootstrap_takes_another_statistic_and_refuses_a_bad_confidence() -> None:
    assert bootstrap_ci([1, 2, 3, 100], statistic=statistics.median, seed=0)[1] <= 100
    with pytest.raises(ValueError, match="between 0 and 1"):
        bootstrap_ci([1.0, 2.0], confidence=95)


def test_a_paired_difference_of_equal_values_is_exactly_zero() -> None:
    values = [0.1, 0.9, 0.5, 0.0, 1.0]
    assert paired_bootstrap_ci(values, values, resamples=200) == (0.0, 0.0)


def test_pairing_removes_what_the_units_share() -> None:
    """Each unit's level varies widely, the second side is the first plus 0.1: paired, the interval
    is 0.1 exactly; resampled apart (two independent bootstraps) it would be wide."""
    first = [i / 10 for i in range(20)]
    second = [v - 0.1 for v in first]
    low, high = paired_bootstrap_ci(first, second, resamples=500, seed=3)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)
    assert paired_bootstrap_ci(first, second, resamples=500, seed=3) == (low, high)


def test_a_paired_interval_covers_a_known_mean_difference() -> None:
    rng = random.Random(1)
    first = [rng.random() for _ in range(400)]
    second = [v - 0.2 + rng.gauss(0, 0.05) for v in first]
    low, high = paired_bootstrap_ci(first, second, resamples=1000)
    assert low < statistics.fmean(first) - statistics.fmean(second) < high and high - low < 0.02


def test_paired_values_left_out_per_side_and_lengths_must_match() -> None:
    # None on one side drops that side's value only; the other side keeps its own
    assert paired_bootstrap_ci([1.0, None, 1.0], [0.0, 0.0, None], resamples=50) == (1.0, 1.0)
    assert paired_bootstrap_ci([None, None], [0.0, 1.0], resamples=50) is None
    with pytest.raises(ValueError, match="different lengths"):
        paired_bootstrap_ci([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap_ci([1.0], [1.0], confidence=1.0)
