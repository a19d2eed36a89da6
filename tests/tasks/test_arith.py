import random
import re

import pytest

from rlvr.config import load_config
from rlvr.tasks import DatasetError, load_task
from rlvr.tasks.arith import (
    ArithSpec,
    apply,
    expression,
    make_queries,
    parse_mix,
    solve,
    split_of,
    worked_solution,
)
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


def test_a_train_mix_draws_each_depth_and_holds_out_only_the_operands_depth():
    cfg = load_config(None, ["task.train_mix=4:30,5:20", "task.operands=5", "task.max_value=999", "task.num_eval=10"])
    train, heldout = load_task(cfg.task)
    depths = [len(q.meta["operands"]) for q in train]
    assert depths == [4] * 30 + [5] * 20 and {len(q.meta["operands"]) for q in heldout} == {5}
    assert not {q.prompt for q in train} & {q.prompt for q in heldout}
    assert max(int(q.verifier["answer"]) for q in train) > 99  # max_value applies to every depth
    # the same depth drawn alone is the same queries: a mix is a curriculum over the usual splits
    spec = ArithSpec(operands=4, max_value=999)
    assert [q.prompt for q in train[:30]] == [q.prompt for q in make_queries(30, split="train", seed=0, spec=spec)]


def test_min_operand_leaves_out_the_identity_operands():
    spec = ArithSpec(operands=5, max_value=999, min_operand=2)
    queries = make_queries(300, split="heldout", seed=0, spec=spec)
    assert min(min(q.meta["operands"]) for q in queries) == 2
    assert all(int(q.verifier["answer"]) == eval(q.prompt) for q in queries)
    # without x*0 and x+0 answers spread out: far fewer held-out chains share their answer with another
    share = lambda qs: 1 - len({q.verifier["answer"] for q in qs}) / len(qs)  # noqa: E731
    loose = make_queries(300, split="heldout", seed=0, spec=ArithSpec(operands=5, max_value=999))
    assert share(queries) < share(loose)
    with pytest.raises(Exception, match=re.escape("task.min_operand must be in [0, 9]")):
        load_config(None, ["task.min_operand=10"])


@pytest.mark.parametrize(
    "text, words",
    [("4:x", "OPERANDS:COUNT"), ("4-300", "OPERANDS:COUNT"), ("1:30", ">= 2"), ("4:0", "counts >= 1"),
     ("4:3,4:5", "each length once"), ("", "OPERANDS:COUNT")],
)  # fmt: skip
def test_a_bad_train_mix_is_refused_by_name(text, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        parse_mix(text)
    if text:
        with pytest.raises(DatasetError, match=re.escape("task.train_mix")):
            load_task(load_config(None, [f"task.train_mix={text}"]).task)


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
