"""The default run, pinned: a short run of the default configuration (GRPO, arith, tiny-arith) with a
fixed seed must log the same metrics, step for step, as the code before the engine was split into
builders. Any change to sampling, verification, advantages, the loss or the optimizer
step moves at least one of these numbers.

The values were first measured with the pre-split code (commit 89e43ce) on one torch thread, and
re-pinned once when held-out evaluation got its own paired draws (rollout/draws.py) and stopped
drawing from torch's generator: the code before that change, with its evaluation's draws kept off
the generator (torch.random.fork_rng), logs these same training values. A token sampled
differently changes reward, accuracy and lengths by whole samples, so the tolerance only absorbs
float rounding.
"""

from __future__ import annotations

import json

import pytest

from rlvr.config import load_config
from rlvr.engine.loop import train

SETTINGS = [
    "train.steps=3",
    "train.batch_queries=4",
    "rollout.group_size=4",
    "task.num_eval=8",
    "train.eval_samples=2",
    "train.threads=1",
    "train.save_every=0",
]

PINNED = [
    {
        "reward": 0.5625,
        "accuracy": 0.5625,
        "loss": 7.450580596923828e-09,
        "kl": 0.0,
        "entropy": 0.1352114426462274,
        "grad_norm": 0.3156713843345642,
        "update_norm": 0.46078221711413375,
        "completions/mean_length": 19.0,
    },
    {
        "reward": 0.5,
        "accuracy": 0.5,
        "loss": 0.00021650642156600952,
        "kl": 0.005069729528929058,
        "entropy": 0.12886026031092593,
        "grad_norm": 0.36274775862693787,
        "update_norm": 0.3186211404393548,
        "completions/mean_length": 19.0,
    },
    {
        "reward": 0.5,
        "accuracy": 0.5,
        "loss": 0.0002651289105415344,
        "kl": 0.007069382402631972,
        "entropy": 0.13109967443678114,
        "grad_norm": 0.46939557790756226,
        "update_norm": 0.2628581068425641,
        "completions/mean_length": 18.0,
    },
]
"""Per-step metrics of `rlvr train` with SETTINGS and seed 0."""

PINNED_EVAL = {"base": (0.3125, 1.0), "final": (0.3125, 1.0)}
"""Held-out (pass@1, greedy) before and after."""


def test_a_short_default_run_logs_the_pinned_metrics(tmp_path):
    summary = train(load_config(None, SETTINGS), tmp_path, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "reward" in row]
    assert len(steps) == len(PINNED)
    for row, pinned in zip(steps, PINNED):
        for key, value in pinned.items():
            assert row[key] == pytest.approx(value, rel=1e-4, abs=1e-6), (row["step"], key)
    for which, (pass_at_1, greedy) in PINNED_EVAL.items():
        assert (summary[which]["pass@1"], summary[which]["greedy"]) == (pass_at_1, greedy)
