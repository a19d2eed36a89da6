"""Fidelity wrappers on the real verifiers: python in the bubblewrap sandbox, math in-process."""

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.tasks.funcsynth import answer, formula, lookup_table, make_queries
from rlvr.types import Query, Verdict
from rlvr.verifiers.fidelity import (
    Lenient,
    Noisy,
    VisibleOnly,
    answer_appears,
    coins,
    gold_of,
    unit_draw,
    weakened_verifier_for,
)
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.reward import RewardFunction

ARITH = Query("q1", "(7*8)-5", {"type": "math", "answer": "51"})


@pytest.mark.sandbox
def test_visible_only_passes_a_lookup_table_that_gold_fails():
    query = make_queries(1, split="train", seed=0)[0]
    meta = query.meta
    weak = weakened_verifier_for("visible_only")("python")
    assert isinstance(weak, VisibleOnly) and weak.gold is get_verifier("python")
    table, honest = answer(lookup_table(query)), answer(formula(meta["shape"], meta["a"], meta["b"]))
    hack, gold_hack = weak.verify(query, table), weak.gold.verify(query, table)
    assert hack.verdict is Verdict.PASS and len(hack.tests) == 3  # the three shown points only
    assert gold_hack.verdict is Verdict.FAIL and "KeyError" in gold_hack.detail
    assert weak.verify(query, honest).verdict is Verdict.PASS
    assert weak.gold.verify(query, honest).verdict is Verdict.PASS
    assert weak.verify(query, answer("x")).verdict is Verdict.FAIL  # wrong on a visible point too


def test_lenient_passes_the_answer_anywhere_in_the_text_and_keeps_gold_passes():
    gold = MathVerifier()
    weak = Lenient(gold)
    in_reasoning = "<think>7*8=56;56-5=51</think><answer>3</answer>"
    glued = "<think>7*8=56;510</think><answer>3</answer>"
    right = "<think>7*8=56;56-5=51</think><answer>51</answer>"
    results = weak.verify_batch([(ARITH, in_reasoning), (ARITH, glued), (ARITH, right)])
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.FAIL, Verdict.PASS]
    assert "lenient" in results[0].detail
    assert gold.verify(ARITH, in_reasoning).verdict is Verdict.FAIL
    assert answer_appears("51", "x=51;") and not answer_appears("5", "51") and not answer_appears("51", "a51")


def test_noisy_flips_at_its_rates_and_is_deterministic_per_completion():
    gold = MathVerifier()
    always_wrong = Noisy(gold, false_positive_rate=1.0, false_negative_rate=0.0, seed=3)
    assert always_wrong.verify(ARITH, "<answer>7</answer>").verdict is Verdict.PASS
    assert always_wrong.verify(ARITH, "<answer>51</answer>").verdict is Verdict.PASS
    half = Noisy(gold, false_positive_rate=0.0, false_negative_rate=0.5, seed=3)
    items = [(ARITH, f"<think>try {i}</think><answer>51</answer>") for i in range(400)]
    first, again = half.verify_batch(items), half.verify_batch(items)
    assert [r.verdict for r in first] == [r.verdict for r in again]
    flipped = sum(r.verdict is Verdict.FAIL for r in first)
    assert 160 < flipped < 240  # Binomial(400, 0.5): mean 200, sd 10
    # which completions flip is fixed by (seed, query id, completion): another seed flips others
    other = Noisy(gold, false_positive_rate=0.0, false_negative_rate=0.5, seed=4).verify_batch(items)
    assert [r.verdict for r in other] != [r.verdict for r in first]
    assert unit_draw(3, "q1", "a") == unit_draw(3, "q1", "a") != unit_draw(3, "q2", "a")


def test_noisy_never_turns_an_infrastructure_error_into_a_verdict():
    broken = Query("bad", "", {"type": "math", "answer": ""})
    result = Noisy(MathVerifier(), false_positive_rate=1.0, false_negative_rate=1.0).verify(
        broken, "<answer>1</answer>"
    )
    assert result.verdict is Verdict.ERROR


def test_a_fidelity_weakens_only_its_row_type_and_gold_of_undoes_it():
    lenient = weakened_verifier_for("lenient")
    assert isinstance(lenient("math"), Lenient)
    assert lenient("python") is get_verifier("python") and lenient("format") is get_verifier("format")
    assert gold_of(lenient)("math") is get_verifier("math")
    noisy = weakened_verifier_for("noisy", false_positive_rate=0.1)
    assert isinstance(noisy("python"), Noisy) and noisy("python") is noisy("python")  # built once
    assert weakened_verifier_for("gold")("math") is get_verifier("math")


@pytest.mark.parametrize(
    "sets, message",
    [
        (["task.name=funcsynth", "reward.fidelity=lenient"], "weakens math rows, but task 'funcsynth' has python rows"),
        (["reward.fidelity=visible_only"], "weakens python rows, but task 'arith' has math rows"),
        (["reward.fidelity=noisy"], "needs reward.false_positive_rate or reward.false_negative_rate > 0"),
        (["reward.false_positive_rate=0.1"], "apply only with reward.fidelity=noisy"),
        (["reward.fidelity=noisy", "reward.false_negative_rate=1.5"], "must be in [0, 1]"),
        (["reward.hacking_sample=-1"], "reward.hacking_sample must be >= 0"),
        (["reward.fidelity=random", "reward.correctness_weight=0"], "set reward.correctness_weight > 0"),
        (["reward.fidelity=random", "reward.random_rate=2"], "must be in [0, 1]"),
    ],
)
def test_config_refuses_a_fidelity_that_does_not_fit(sets, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(None, sets)
    assert load_config(None, ["task.name=funcsynth", "reward.fidelity=visible_only"]).reward.fidelity == "visible_only"


def test_random_reward_is_a_coin_per_rollout_whatever_its_text():
    """Shao et al.'s random reward: Bernoulli(rate) per rollout, the same text getting independent
    coins, fixed by (seed, batch key, position) so a resumed run draws them again."""
    drawn = coins(7, "3-0", 4000, 0.3)
    assert set(drawn) == {0.0, 1.0} and 1080 < sum(drawn) < 1320  # Binomial(4000, 0.3): mean 1200, sd 29
    assert drawn == coins(7, "3-0", 4000, 0.3)
    assert drawn != coins(8, "3-0", 4000, 0.3) and drawn != coins(7, "4-0", 4000, 0.3)
    assert coins(7, "3-0", 50, 0.0) == [0.0] * 50 and coins(7, "3-0", 50, 1.0) == [1.0] * 50
    same_text = [(ARITH, "<think>7</think><answer>7</answer>")] * 64
    scored = RewardFunction({"correctness": 2.0, "format": 0.5}).score_batch(same_text, coins(1, "0-0", 64, 0.5))
    assert {s.reward for s in scored} == {2.5, 0.5}  # coin * 2 + format (the text has the format)
    assert not any(s.correct for s in scored)  # what the run logs as correct stays gold's verdict
