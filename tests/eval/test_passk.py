"""The shipped pass@k estimator: hand values, and brute force over every k-subset of n samples."""

from itertools import combinations

import pytest

from rlvr.eval.passk import mean_pass_at_k, pass_at_k


def test_hand_values():
    # n=4, c=1, k=1: one correct in four -> 1/4
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 1/2
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # no correct sample -> 0; fewer wrong samples than k -> every k-subset holds a correct one -> 1
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(8, 7, 2) == 1.0
    # mean over queries: (1/4 + 1) / 2
    assert mean_pass_at_k([(4, 1), (4, 4)], 1) == pytest.approx(0.625)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_equals_brute_force_over_all_k_subsets(n):
    for c in range(n + 1):
        samples = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(samples, k))
            brute = sum(any(s) for s in subsets) / len(subsets)
            assert pass_at_k(n, c, k) == pytest.approx(brute, abs=1e-12), (n, c, k)


def test_rejects_k_above_n():
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 5)
