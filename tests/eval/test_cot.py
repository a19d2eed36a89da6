"""The arith reasoning checker on hand-made completions."""

import random
import re

import pytest

from rlvr.eval.cot import check_arith_reasoning, parse_arith_expression
from rlvr.tasks.arith import make_queries
from rlvr.tasks.registry import reasoning_checker
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
        # self-checks: `step!check#redo` (tasks/arith.py)
        ("<think>7*8=56!8*7=56;56-5=51!51+5=56</think><answer>51</answer>", True),  # checked, agreeing
        ("<think>7*8=54!8*7=56#7*8=56;56-5=51</think><answer>51</answer>", True),  # caught and redone
        ("<think>7*8=54!8*7=56#7*8=55;55-5=50</think><answer>50</answer>", False),  # redone wrong again
        ("<think>7*8=56!8*7=55;56-5=51</think><answer>51</answer>", False),  # a false check
        ("<think>7*8=56!7*8=56;56-5=51</think><answer>51</answer>", False),  # a check that re-derives nothing
        ("<think>7*8=56;56-5=51!51-5=46</think><answer>51</answer>", False),  # - is checked by c + b
        ("<think>7*8=54#7*8=56;56-5=51</think><answer>51</answer>", False),  # a redo with no check
        ("<think>7*8=54!8*7=56#8*7=56;56-5=51</think><answer>51</answer>", False),  # a redo of another step
        ("<think>7*8=54!8*7=56;54-5=49</think><answer>49</answer>", False),  # caught, not redone
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
    assert reasoning_checker("no-such-task") is None  # a row's meta may name anything


def _claim_true(claim: str) -> bool:
    a, op, b_c = re.split(r"(?<=\d)([+\-*])", claim, maxsplit=1)
    b, c = b_c.split("=")
    return {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op] == int(c)


@pytest.mark.parametrize("error_rate", [0.0, 0.4, 1.0])
def test_generated_self_checks_redo_exactly_the_false_steps(error_rate):
    """With every step checked: a redo follows exactly the steps whose claim is false, and the
    reasoning is right exactly when every redo (or unredone step) is true."""
    from rlvr.tasks.arith import ArithSpec, worked_solution

    queries = make_queries(100, split="train", seed=0, spec=ArithSpec(operands=4))
    rng = random.Random(error_rate)
    verdicts = set()
    for query in queries:
        text = worked_solution(query, rng=rng, error_rate=error_rate, check_rate=1.0)
        finals = []
        for step in text.split("<think>")[1].split("</think>")[0].split(";"):
            first, rest = step.split("!")
            check, _, redo = rest.partition("#")
            assert _claim_true(check)  # checks are computed correctly
            assert bool(redo) == (not _claim_true(first))  # redone exactly when the step was false
            finals.append(redo or first)
        right = all(_claim_true(claim) for claim in finals)
        assert check_arith_reasoning(query, text) == right, text
        verdicts.add(right)
    assert verdicts == ({True} if error_rate == 0 else {False} if error_rate == 1 else {True, False})
