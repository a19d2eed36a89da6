import math

import torch

from rlvr.engine.context import batch_queries
from rlvr.engine.rollouts import reward_tensor
from rlvr.tasks.arith import make_queries
from rlvr.types import Verdict, VerifierResult
from rlvr.verifiers import ScoredCompletion


def test_batches_are_a_pure_function_of_seed_and_step():
    queries = make_queries(10, split="train", seed=0)
    steps = [batch_queries(queries, s, 4, seed=3) for s in range(5)]
    assert steps[2] == batch_queries(queries, 2, 4, seed=3)  # what a resumed run sees
    epoch0 = steps[0] + steps[1] + steps[2][:2]  # 10 queries: steps 0, 1 and half of 2
    assert sorted(q.id for q in epoch0) == sorted(q.id for q in queries)  # each once per epoch
    assert batch_queries(queries, 0, 4, seed=4) != steps[0]


def _scored(reward):
    result = VerifierResult(Verdict.PASS if reward else Verdict.FAIL, reward or 0.0)
    return ScoredCompletion(reward=reward, correct=bool(reward), results={"format": result})


def test_unscorable_rewards_become_nan_not_zero():
    rewards = reward_tensor([_scored(1.0), _scored(None), _scored(0.0), _scored(1.0)], 2, 2)
    assert rewards.shape == (2, 2) and rewards[0, 0] == 1.0 and math.isnan(rewards[0, 1])
    assert torch.equal(rewards[1], torch.tensor([0.0, 1.0]))
