"""The arith reasoning checker on hand-made completions."""

import pytest

from rlvr.eval.cot import check_arith_reasoning, parse_arith_expression, reasoning_checker
from rlvr.tasks.arith import make_queries
from rlvr.types import Query

# (7*8)-5: 7*8=56, 56-5=51
Q = Query(
    id="q",
    prompt="(7*8)-5",
    verifier={"type": "math", "answer": "51"},
    meta={"task": "arith", "operands": [7, 8, 5], "ops": ["*", "-"]},
)
# the same query without meta: the checker must read the prompt
Q_NO_META = Query(id="q", prompt="(7*8)-5", verifier={"type": "math", "answer": "51"})


@pytest.mark.parametrize("query", [Q, Q_NO_META])
@pytest.mark.parametrize(
    "completion, ok",
    [
        ("<think>7*8=56;56-5=51</think><answer>51</answer>", True),
        ("<think> 7 * 8 = 56 ; 56 - 5 = 51 </think>\n<answer> 51 </answer>", True),  # spaces are fine
        ("<think>7*8=54;54-5=49</think><answer>49</answer>", False),  # false first step, chained on
        ("<think>7*8=56;56-5=52</think><answer>52</answer>", False),  # false last step
        ("<think>7*8=56;50-5=45</think><answer>51</answer>", False),  # true claims, broken chain
        ("<think>8*7=56;56-5=51</think><answer>51</answer>", False),  # operands out of query order
        ("<think>7*8=56;56+5=61</think><answer>51</answer>", False),  # wrong operator
        ("<think>7*8=56;56-5=51</think><answer>50</answer>", False),  # answer is not the last result
        ("<think>7*8=56</think><answer>51</answer>", False),  # a step missing
        ("<think>7*8=56;56-5=51;51+0=51</think><answer>51</answer>", False),  # a step too many
        ("<answer>51</answer>", False),  # no reasoning at all
        ("<think>7*8=56;56-5=51</think>", False),  # no answer
        ("<think>7*8=56;56-5=51 because</think><answer>51</answer>", False),  # not a claim
    ],
)
def test_hand_made_completions(query, completion, ok):
    assert check_arith_reasoning(query, completion) is ok


def test_negative_intermediates_and_answers():
    # (5-9)*3: 5-9=-4, -4*3=-12
    q = Query(id="n", prompt="(5-9)*3", verifier={"type": "math", "answer": "-12"})
    assert check_arith_reasoning(q, "<think>5-9=-4;-4*3=-12</think><answer>-12</answer>")
    assert not check_arith_reasoning(q, "<think>5-9=4;4*3=12</think><answer>12</answer>")  # sign dropped
    assert not check_arith_reasoning(q, "<think>5-9=-4;-4*3=-12</think><answer>12</answer>")


def test_reference_solutions_of_generated_queries_pass():
    from random import Random

    from rlvr.tasks.arith import worked_solution

    for query in make_queries(30, split="heldout", seed=0):
        assert check_arith_reasoning(query, worked_solution(query, rng=Random(0)))


def test_expression_parsing():
    assert parse_arith_expression("((1+2)*3)-4") == ([1, 2, 3, 4], ["+", "*", "-"])
    with pytest.raises(ValueError):
        parse_arith_expression("7**8")
    with pytest.raises(ValueError):
        parse_arith_expression("what is 7*8?")


def test_tasks_without_a_checker_get_none():
    assert reasoning_checker("arith") is check_arith_reasoning
    assert reasoning_checker("jsonl") is None
