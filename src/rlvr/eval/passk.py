"""The unbiased pass@k estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained
on Code", eq. 1): with n samples of which c are correct, pass@k = 1 - C(n-c, k) / C(n, k)."""

from __future__ import annotations

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n is correct."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (got n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    # The product form avoids huge binomials: C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i).
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float:
    """Mean over queries of pass@k, each given as (n samples, c correct)."""
    return float(np.mean([pass_at_k(n, c, k) for n, c in counts]))
