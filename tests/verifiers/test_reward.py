"""RewardFunction: sum_k w_k * score_k, None when a weighted component could not be judged."""

import pytest

from rlvr.types import Query, Verdict
from rlvr.verifiers.registry import UnknownVerifierError
from rlvr.verifiers.reward import RewardFunction

MATH = Query("m", "p", {"type": "math", "answer": "12"})
BROKEN = Query("broken", "p", {"type": "math"})  # no "answer": the math verifier returns ERROR
WELL_FORMED_RIGHT = "<think>3*4</think><answer>12</answer>"
WELL_FORMED_WRONG = "<think>3+4</think><answer>7</answer>"
SLOPPY_RIGHT = "12, so <answer>12</answer>"


def test_default_reward_is_binary_correctness_and_format_is_still_computed() -> None:
    scored = RewardFunction().score_batch([(MATH, WELL_FORMED_RIGHT), (MATH, WELL_FORMED_WRONG), (MATH, SLOPPY_RIGHT)])
    assert [s.reward for s in scored] == [1.0, 0.0, 1.0]
    assert [s.correct for s in scored] == [True, False, True]
    format_verdicts = [s.results["format"].verdict for s in scored]
    assert format_verdicts == [Verdict.PASS, Verdict.PASS, Verdict.FAIL]


def test_weighted_sum_of_components() -> None:
    reward = RewardFunction({"correctness": 0.9, "format": 0.1})
    scored = reward.score_batch([(MATH, WELL_FORMED_RIGHT), (MATH, WELL_FORMED_WRONG), (MATH, SLOPPY_RIGHT)])
    # right and well formed: 0.9*1 + 0.1*1; wrong but well formed: 0.1; right but sloppy: 0.9
    assert [s.reward for s in scored] == pytest.approx([1.0, 0.1, 0.9])


def test_unscorable_weighted_component_gives_none_not_zero() -> None:
    reward = RewardFunction({"correctness": 1.0, "format": 0.5})
    broken, fine = reward.score_batch([(BROKEN, WELL_FORMED_RIGHT), (MATH, WELL_FORMED_RIGHT)])
    assert broken.reward is None and not broken.correct
    assert broken.results["correctness"].verdict is Verdict.ERROR
    assert fine.reward == 1.5


def test_unscorable_component_with_zero_weight_does_not_void_the_reward() -> None:
    scored = RewardFunction({"correctness": 0.0, "format": 1.0}).score(BROKEN, WELL_FORMED_RIGHT)
    assert scored.reward == 1.0 and not scored.correct


def test_bad_weights_are_refused() -> None:
    with pytest.raises(UnknownVerifierError, match="astrology"):
        RewardFunction({"correctness": 1.0, "astrology": 1.0})
    with pytest.raises(ValueError, match="finite"):
        RewardFunction({"correctness": float("nan")})
    with pytest.raises(ValueError, match="number"):
        RewardFunction({"correctness": "1"})  # type: ignore[dict-item]


def test_row_of_unknown_type_fails_loudly() -> None:
    query = Query("q", "p", {"type": "astrology"})
    with pytest.raises(UnknownVerifierError, match="astrology"):
        RewardFunction().score(query, WELL_FORMED_RIGHT)
