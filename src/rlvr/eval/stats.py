"""The statistics every study reports over seeds: mean ± sample standard deviation, and a percentile
bootstrap confidence interval, of one set of values or of the difference of two paired ones.

Values that are not finite numbers (None for "not measured", NaN, inf) are left out before anything
is computed, so a run that did not log a metric neither counts as 0 nor poisons the mean.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Spread:
    """Mean and sample standard deviation of n values."""

    mean: float | None
    """None when there is no value."""
    sd: float | None
    """Bessel-corrected (n − 1); None with fewer than 2 values: one seed has no spread to speak of."""
    n: int

    @property
    def standard_error(self) -> float | None:
        """sd / √n, the standard deviation of the mean; None with fewer than 2 values."""
        return None if self.sd is None else self.sd / math.sqrt(self.n)


def finite(values: Iterable[Any]) -> list[float]:
    """The values that are finite numbers, as floats, in order."""
    return [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]


def mean_sd(values: Iterable[Any]) -> Spread:
    """Mean ± sample standard deviation of the finite values."""
    xs = finite(values)
    if not xs:
        return Spread(None, None, 0)
    return Spread(statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else None, len(xs))


def bootstrap_ci(
    values: Iterable[Any],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    statistic: Callable[[Sequence[float]], float] = statistics.fmean,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `statistic` over the finite values (Efron & Tibshirani 1993,
    ch. 13): draw n values with replacement `resamples` times, compute the statistic of each draw,
    and take the (1 − confidence)/2 and (1 + confidence)/2 quantiles. The generator is seeded, so
    the same values give the same interval. None when there is no value."""
    _check_bootstrap(confidence, resamples)
    xs = finite(values)
    if not xs:
        return None
    rng = random.Random(seed)
    return _percentiles([statistic(rng.choices(xs, k=len(xs))) for _ in range(resamples)], confidence)


def paired_bootstrap_ci(
    first: Sequence[Any],
    second: Sequence[Any],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    statistic: Callable[[Sequence[float]], float] = statistics.fmean,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of statistic(first) − statistic(second) for paired values
    (first[i] and second[i] measure the same unit, e.g. one query under two models): each resample
    draws the same n indices for both, so what the units share cancels out of the difference.
    Values that are not finite are left out of their side of a draw; a draw where a side has none
    is skipped. None when no draw has values on both sides."""
    _check_bootstrap(confidence, resamples)
    if len(first) != len(second):
        raise ValueError(f"paired values of different lengths ({len(first)} and {len(second)})")
    a, b = [finite([v]) for v in first], [finite([v]) for v in second]
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        picked = rng.choices(range(len(a)), k=len(a)) if a else []
        left = [x for i in picked for x in a[i]]
        right = [x for i in picked for x in b[i]]
        if left and right:
            draws.append(statistic(left) - statistic(right))
    return _percentiles(draws, confidence) if draws else None


def _check_bootstrap(confidence: float, resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence}: expected a number between 0 and 1, e.g. 0.95")
    if resamples < 1:
        raise ValueError(f"resamples {resamples}: expected at least 1")


def _percentiles(draws: list[float], confidence: float) -> tuple[float, float]:
    """The (1 − confidence)/2 and (1 + confidence)/2 quantiles of the bootstrap draws."""
    ordered, tail = sorted(draws), (1 - confidence) / 2
    return _quantile(ordered, tail), _quantile(ordered, 1 - tail)


def _quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly between neighbours (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])
