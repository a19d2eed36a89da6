import random
import re

import pytest

from rlvr.tasks.arith import ArithSpec, apply, expression, make_queries, solve, split_of, worked_solution
from rlvr.verifiers import RewardFunction


def test_expression_and_steps_by_hand():
    # (7*8)-5: 7*8 = 56, then 56-5 = 51
    assert expression([7, 8, 5], ["*", "-"]) == "(7*8)-5"
    assert [s.claim() for s in solve([7, 8, 5], ["*", "-"])] == ["7*8=56", "56-5=51"]
    assert expression([1, 2, 3, 4], ["+", "+", "*"]) == "((1+2)+3)*4"
    assert eval(expression([1, 2, 3, 4], ["+", "+", "*"])) == solve([1, 2, 3, 4], ["+", "+", "*"])[-1].result == 24


def test_splits_are_disjoint_and_deterministic():
    train = make_queries(500, split="train", seed=0)
    heldout = make_queries(200, split="heldout", seed=0)
    assert not {q.prompt for q in train} & {q.prompt for q in heldout}
    assert all(split_of(q.prompt, 0.2) == "heldout" for q in heldout)
    assert [q.prompt for q in make_queries(50, split="train", seed=0)] == [q.prompt for q in train[:50]]
    assert len({q.id for q in train}) == 500


def test_queries_follow_the_dataset_schema_and_the_spec():
    spec = ArithSpec(operands=4, digits=1, max_value=50)
    for q in make_queries(100, split="train", seed=1, spec=spec):
        assert q.verifier["type"] == "math"
        assert int(q.verifier["answer"]) == eval(q.prompt)
        steps = solve(q.meta["operands"], q.meta["ops"])
        assert len(steps) == 3 and all(0 <= s.result <= 50 for s in steps)


def test_asking_for_more_queries_than_exist_is_a_clear_error():
    with pytest.raises(ValueError, match="only .* distinct"):
        make_queries(5000, split="heldout", seed=0, spec=ArithSpec(operands=2))


def test_worked_solutions_pass_or_fail_the_real_verifier():
    queries = make_queries(40, split="train", seed=0)
    reward = RewardFunction({"correctness": 1.0, "format": 0.0})
    rng = random.Random(0)
    right = [worked_solution(q, rng=rng, error_rate=0.0) for q in queries]
    wrong = [worked_solution(q, rng=rng, error_rate=1.0) for q in queries]
    assert all(s.correct and s.results["format"].score == 1.0 for s in reward.score_batch(list(zip(queries, right))))
    # every step wrong: each claim is false (two slips may still cancel in the final answer)
    for text in wrong:
        claims = re.findall(r"(-?\d+)([+\-*])(\d+)=(-?\d+)", text)
        assert len(claims) == 2 and all(apply(int(a), op, int(b)) != int(c) for a, op, b, c in claims)
    assert sum(s.correct for s in reward.score_batch(list(zip(queries, wrong)))) < len(queries) / 2
    for q, text in zip(queries, right):  # each step is a true claim and they chain
        claims = re.findall(r"(-?\d+)([+\-*])(\d+)=(-?\d+)", text)
        assert all(apply(int(a), op, int(b)) == int(c) for a, op, b, c in claims)


def test_error_rate_is_per_step():
    queries = make_queries(400, split="train", seed=0)
    rng = random.Random(0)
    steps_right = 0
    for q in queries:
        text = worked_solution(q, rng=rng, error_rate=0.3)
        claims = re.findall(r"(-?\d+)([+\-*])(\d+)=(-?\d+)", text)
        steps_right += sum(apply(int(a), op, int(b)) == int(c) for a, op, b, c in claims)
    assert 0.65 < steps_right / 800 < 0.75  # 2 steps per query, each right with probability 0.7


def test_self_checks_count_the_marks_in_the_reasoning_only():
    import random

    from rlvr.tasks.arith import self_checks

    queries = make_queries(50, split="train", seed=0, spec=ArithSpec(operands=4))
    rng = random.Random(0)
    for q in queries:
        plain = worked_solution(q, rng=rng, error_rate=0.3)
        assert self_checks(plain) == (0, 0)  # no check_rate: the shipped base's format, unchanged
        checked = worked_solution(q, rng=rng, error_rate=0.3, check_rate=1.0)
        checks, redos = self_checks(checked)
        assert checks == 3 and redos == checked.count("#")  # one check per step of 4 operands
    assert self_checks("<think>1+1=2</think><answer>2!#</answer>") == (0, 0)  # marks outside <think>
