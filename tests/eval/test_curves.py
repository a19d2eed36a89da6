"""pass@k / CoT-pass@k curves from per-query counts, and where two curves cross."""

import pytest

from rlvr.errors import UserError
from rlvr.eval.curves import QueryCounts, crossing_k, curves


def test_curves_from_counts():
    # query A: 4 samples, 2 right answers, 1 with right reasoning; query B: 4 samples, none right
    per_query = [QueryCounts(4, 2, 1), QueryCounts(4, 0, 0)]
    got = curves(per_query, [1, 2, 4])
    # pass@1 = (2/4 + 0) / 2; pass@2 for A = 1 - C(2,2)/C(4,2) = 5/6 -> 5/12; pass@4 = (1 + 0) / 2
    assert got["pass@k"] == pytest.approx([0.25, 5 / 12, 0.5])
    # CoT for A: c=1 -> 1/4, 1/2, 1 -> halved over the two queries
    assert got["cot_pass@k"] == pytest.approx([0.125, 0.25, 0.5])


def test_cot_is_unavailable_when_a_task_has_no_checker():
    got = curves([QueryCounts(2, 1, None)], [1, 2])
    assert got["pass@k"] == pytest.approx([0.5, 1.0]) and got["cot_pass@k"] is None


def test_k_above_the_smallest_n_is_a_user_error():
    with pytest.raises(UserError, match="k=4 exceeds n=3"):
        curves([QueryCounts(4, 1, 1), QueryCounts(3, 1, 1)], [1, 4])


@pytest.mark.parametrize(
    "base, trained, expected",
    [
        ([0.3, 0.6, 0.9], [0.5, 0.6, 0.7], 2),  # below, then equal at k=2: meeting counts
        ([0.3, 0.5, 0.9], [0.5, 0.6, 0.7], 4),  # overtakes at the last k
        ([0.3, 0.5, 0.6], [0.5, 0.6, 0.7], None),  # always below
        ([0.6, 0.7, 0.9], [0.5, 0.6, 0.7], None),  # never below: nothing to catch up
        ([0.6, 0.4, 0.9], [0.5, 0.6, 0.7], 4),  # above, dips below at k=2, back above at k=4
    ],
)
def test_crossing(base, trained, expected):
    assert crossing_k([1, 2, 4], base, trained) == expected


def test_crossing_orders_by_k():
    assert crossing_k([4, 1, 2], [0.9, 0.3, 0.5], [0.7, 0.5, 0.6]) == 4
