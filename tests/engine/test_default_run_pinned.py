"""The default run, pinned: a short run of the default configuration (GRPO, arith, tiny-arith) with a
fixed seed must log the same metrics, step for step, as the code before the engine was split into
builders. Any change to sampling, verification, advantages, the loss or the optimizer
step moves at least one of these numbers.

The values were measured with the pre-split code (commit 89e43ce) on one torch thread; a token
sampled differently changes reward, accuracy and lengths by whole samples, so the tolerance only
absorbs float rounding.
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
        "reward": 0.4375,
        "accuracy": 0.4375,
        "loss": -3.725290298461914e-09,
        "kl": 0.0,
        "entropy": 0.13811131138955393,
        "grad_norm": 0.3305983245372772,
        "update_norm": 0.4616424654287138,
        "completions/mean_length": 19.375,
    },
    {
        "reward": 0.5625,
        "accuracy": 0.5625,
        "loss": 2.9608607292175293e-05,
        "kl": 0.0007118010520935059,
        "entropy": 0.12852347056070965,
        "grad_norm": 0.3484233617782593,
        "update_norm": 0.3207277559870137,
        "completions/mean_length": 18.75,
    },
    {
        "reward": 0.375,
        "accuracy": 0.375,
        "loss": 9.833276271820068e-05,
        "kl": 0.002365189464124915,
        "entropy": 0.14009666442871094,
        "grad_norm": 0.40239784121513367,
        "update_norm": 0.26531627181230066,
        "completions/mean_length": 18.25,
    },
]
"""Per-step metrics of `rlvr train` with SETTINGS and seed 0, before the engine's split."""

PINNED_EVAL = {"base": (0.25, 1.0), "final": (0.5, 1.0)}
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
