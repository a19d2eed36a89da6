"""The reward's watchdog (verifiers/reward.py `RewardFunction.watched`): a verifier call that gives
no verdict in time is abandoned; its completions get error (class timeout), never a reward."""

from __future__ import annotations

import threading
import time

import pytest

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.reward import RewardFunction

QUERY = Query(id="q", prompt="1+1?", verifier={"type": "math", "answer": "2"})


class Sleeps:
    def __init__(self, event: threading.Event):
        self.event, self.calls = event, 0

    def verify_batch(self, items):
        self.calls += 1
        self.event.wait()
        return [VerifierResult(Verdict.PASS, 1.0) for _ in items]


def test_a_hung_verifier_is_abandoned_once_and_not_called_again():
    forever = threading.Event()
    sleeper = Sleeps(forever)
    reward = RewardFunction({"correctness": 1.0}, verifier_for=lambda n: sleeper if n == "math" else get_verifier(n),
                            timeout_s=0.2)  # fmt: skip
    started = time.monotonic()
    (scored,) = reward.score_batch([(QUERY, "<answer>2</answer>")])
    assert time.monotonic() - started < 5
    result = scored.results["correctness"]
    assert result.verdict is Verdict.ERROR and result.error_class is ErrorClass.TIMEOUT and scored.reward is None
    assert "reward.verifier_timeout_s" in result.detail
    (again,) = reward.score_batch([(QUERY, "<answer>2</answer>")])
    assert again.results["correctness"].verdict is Verdict.ERROR and sleeper.calls == 1  # not waited on twice
    forever.set()
    for thread in threading.enumerate():
        if thread.name.startswith("rlvr-verify-"):
            thread.join(timeout=30)


def test_a_verifier_in_time_gives_its_own_verdicts_and_its_errors_propagate():
    watched = RewardFunction({"correctness": 1.0}, timeout_s=30)
    plain = RewardFunction({"correctness": 1.0})
    items = [(QUERY, "<answer>2</answer>"), (QUERY, "<answer>3</answer>")]
    assert [s.reward for s in watched.score_batch(items)] == [s.reward for s in plain.score_batch(items)] == [1.0, 0.0]

    class Raises:
        def verify_batch(self, items):
            raise RuntimeError("broken verifier")

    with pytest.raises(RuntimeError, match="broken verifier"):
        RewardFunction({"correctness": 1.0}, verifier_for=lambda n: Raises(), timeout_s=5).score_batch(items)
