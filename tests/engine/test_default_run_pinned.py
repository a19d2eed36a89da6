"""The default run, pinned: a short run of the default configuration (GRPO, arith, tiny-arith) with a
fixed seed must log the same metrics, step for step, as the code before the engine was split into
builders. Any change to sampling, verification, advantages, the loss or the optimizer
step moves at least one of these numbers.

The values were first measured with the pre-split code (commit 89e43ce) on one torch thread, and
re-pinned once when held-out evaluation got its own paired draws (rollout/draws.py) and stopped
drawing from torch's generator: the code before that change, with its evaluation's draws kept off
the generator (torch.random.fork_rng), logs these same training values. Re-pinned again when the
default lr went from 5e-4 to 1e-4 (commit 5fab891): step 1 samples, scores and differentiates as
before (grad_norm equal to 1e-6), and its update_norm is a fifth of the old 0.4608, as Adam's first
step is about lr times the sign of the gradient; every later step follows the smaller update. A token sampled
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
        "loss": 1.4901161193847656e-08,
        "kl": 0.0,
        "entropy": 0.13521140500118858,
        "grad_norm": 0.3156711757183075,
        "update_norm": 0.09215647083163549,
        "completions/mean_length": 19.0,
    },
    {
        "reward": 0.5,
        "accuracy": 0.5,
        "loss": 5.252659320831299e-06,
        "kl": 0.00012709529368908374,
        "entropy": 0.13051159350903002,
        "grad_norm": 0.2957114279270172,
        "update_norm": 0.06502969636636331,
        "completions/mean_length": 19.25,
    },
    {
        "reward": 0.5625,
        "accuracy": 0.5625,
        "loss": 6.962567567825317e-06,
        "kl": 0.00017830936445130242,
        "entropy": 0.13284337520599365,
        "grad_norm": 0.36062347888946533,
        "update_norm": 0.053117928709763854,
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
