"""The reasoning reward component: CoT-correctness of arith completions, through the real reward."""

from __future__ import annotations

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.types import Query, Verdict
from rlvr.verifiers import RewardFunction
from rlvr.verifiers.reasoning import ReasoningVerifier


def _query() -> Query:
    return Query(id="q", prompt="(7*8)-5", verifier={"type": "math", "answer": "51"},
                 meta={"task": "arith", "operands": [7, 8, 5], "ops": ["*", "-"]})  # fmt: skip


@pytest.mark.parametrize(
    ("completion", "answer_right", "chain_right"),
    [
        ("<think>7*8=56;56-5=51</think><answer>51</answer>", True, True),
        ("<think>7*8=54;56-5=51</think><answer>51</answer>", True, False),  # a false step, right answer
        ("<think>7*8=56</think><answer>51</answer>", True, False),  # a step left out
        ("<think>7*8=56;56-5=50</think><answer>50</answer>", False, False),
    ],
)
def test_the_reward_pays_a_right_answer_only_after_right_steps(completion, answer_right, chain_right) -> None:
    chain_only = RewardFunction({"correctness": 0.0, "reasoning": 1.0})
    scored = chain_only.score(_query(), completion)
    assert scored.correct is answer_right  # `correct` stays the answer verdict: pass@k is still pass@k
    assert scored.reward == (1.0 if chain_right else 0.0)
    both = RewardFunction({"correctness": 1.0, "reasoning": 1.0}).score(_query(), completion)
    assert both.reward == answer_right + chain_right


def test_a_row_without_a_reasoning_checker_is_unscorable_not_zero() -> None:
    row = Query(id="r", prompt="2+2?", verifier={"type": "math", "answer": "4"})  # a jsonl row: no task
    result = ReasoningVerifier().verify(row, "<think>2+2=4</think><answer>4</answer>")
    assert result.verdict is Verdict.UNAVAILABLE and "no reasoning checker" in result.detail
    assert RewardFunction({"correctness": 0.0, "reasoning": 1.0}).score(row, "<answer>4</answer>").reward is None


def test_the_reasoning_weight_needs_a_task_with_a_checker() -> None:
    assert load_config(None, ["reward.reasoning_weight=1"]).reward.reasoning_weight == 1.0
    with pytest.raises(ConfigError, match="needs task.name=arith"):
        load_config(None, ["reward.reasoning_weight=1", "task.name=funcsynth"])
