"""The statistics every study reports over seeds: mean ± sample standard deviation, and a percentile
bootstrap confidence interval.

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
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence}: expected a number between 0 and 1, e.g. 0.95")
    if resamples < 1:
        raise ValueError(f"resamples {resamples}: expected at least 1")
    xs = finite(values)
    if not xs:
        return None
    rng = random.Random(seed)
    draws = sorted(statistic(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return _quantile(draws, tail), _quantile(draws, 1 - tail)


def _quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly between neighbours (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])
