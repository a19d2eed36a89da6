"""pass@k / CoT-pass@k curves from per-query counts, and where two curves cross."""

import pytest

from rlvr.eval.curves import (
    Bootstrap,
    QueryCounts,
    crossing_k,
    curves,
    intervals,
    paired_difference,
    query_pass_at_k,
    too_few_scorable,
)


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


def test_queries_with_fewer_scorable_samples_than_k_are_listed_and_left_out_of_that_k():
    """A: 4 scorable samples; B: 3 (one unscorable); C: none scorable. k=1 averages A and B, k=4 only
    A; C is listed at every k, never counted as 0 and never silently dropped."""
    per_query = [QueryCounts(4, 1, 1, "A"), QueryCounts(3, 3, 3, "B"), QueryCounts(0, 0, 0, "C")]
    got = curves(per_query, [1, 4])
    assert got["pass@k"] == pytest.approx([(0.25 + 1.0) / 2, 1.0])
    assert too_few_scorable(per_query, [1, 4]) == [["C"], ["B", "C"]]
    assert query_pass_at_k(per_query, 4) == [1.0, None, None]
    assert curves([QueryCounts(0, 0, None, "C")], [1]) == {"pass@k": [None], "cot_pass@k": None}


def test_intervals_and_the_paired_difference():
    model = [QueryCounts(2, 2, 1, "A"), QueryCounts(2, 0, 0, "B"), QueryCounts(2, 1, 1, "C")]
    base = [QueryCounts(2, 1, 1, "A"), QueryCounts(2, 0, 0, "B"), QueryCounts(2, 1, 0, "C")]
    boot = Bootstrap(resamples=300, seed=2)
    got = intervals(model, [1, 2], boot)
    means = curves(model, [1, 2])
    for curve in ("pass@k", "cot_pass@k"):
        for (low, high), mean in zip(got[f"{curve}_ci"], means[curve]):
            assert 0 <= low <= mean <= high <= 1
    diff = paired_difference(model, model, [1, 2], boot)
    assert diff["pass@k"] == [0.0, 0.0] and diff["pass@k_ci"] == [[0.0, 0.0], [0.0, 0.0]]
    diff = paired_difference(model, base, [1], boot)
    assert diff["pass@k"] == pytest.approx([(1.0 - 0.5) / 3])  # only A differs: 1 - 1/2, over 3 queries
    low, high = diff["pass@k_ci"][0]
    assert 0 <= low <= diff["pass@k"][0] <= high
    no_checker = [QueryCounts(2, 1, None, q) for q in "ABC"]
    assert paired_difference(no_checker, no_checker, [1], boot)["cot_pass@k"] is None
    with pytest.raises(ValueError, match="same queries"):
        paired_difference(model, model[::-1], [1], boot)


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


def test_support_classes_compare_the_first_success_of_each_model_at_k():
    from rlvr.eval.curves import support_class, support_counts

    assert support_class(3, 10, k=16) == "preserved" and support_class(3, None, k=16) == "shrunk"
    assert support_class(None, 15, k=16) == "expanded" and support_class(None, None, k=16) == "never"
    assert support_class(16, 0, k=16) == "expanded"  # a success at index k is past the first k draws
    counts = support_counts([0, None, 5, None, 40], [1, 2, None, None, 3], k=32)
    assert counts == {"preserved": 1, "expanded": 2, "shrunk": 1, "never": 1}  # 40 >= 32: the base missed it
    with pytest.raises(ValueError, match="2 base queries against 1"):
        support_counts([0, 1], [0], k=4)
