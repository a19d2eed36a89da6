"""Training's held-out evaluation draws the same random numbers for the same query and sample at
every evaluation of a run (rollout/draws.py), so a run whose weights did not change reports a
held-out gain of exactly 0, and a changed model is compared with less noise."""

from __future__ import annotations

import json

from safetensors.torch import load_file

from rlvr.bases import resolve_model_path
from rlvr.config import load_config
from rlvr.engine.loop import train

SHORT = ["train.steps=3", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=20"]
SHORT += ["train.eval_samples=4", "train.threads=1", "train.eval_every=1", "train.save_every=0"]
FORMAT_ONLY = ["reward.correctness_weight=0", "reward.format_weight=1"]
"""tiny-arith already writes the format in every sample, so every group has zero reward variance,
zero advantage and zero gradient: with no weight decay AdamW leaves the weights as they were."""


def _evaluations(run_dir, summary) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    during = [{k.removeprefix("eval/"): v for k, v in row.items() if k.startswith("eval/")} for row in rows]
    return [summary["base"], *[e for e in during if e], summary["final"]]


def test_a_run_whose_weights_did_not_change_gains_exactly_zero(tmp_path):
    summary = train(load_config(None, [*SHORT, *FORMAT_ONLY]), tmp_path, progress=False)
    base = load_file(resolve_model_path("tiny-arith") / "model.safetensors")
    final = load_file(tmp_path / "final" / "model.safetensors")
    assert base.keys() == final.keys() and all(bool((base[k] == final[k]).all()) for k in base)
    evaluations = _evaluations(tmp_path, summary)
    assert len(evaluations) == 5  # the base's, after steps 1, 2 and 3, the final's
    for key in ("pass@1", "greedy", "gold_pass@1"):
        values = {e[key] for e in evaluations}
        assert len(values) == 1, (key, values)
    assert 0 < summary["base"]["pass@1"] < 1  # sampled, not a degenerate all-or-nothing split


def test_runs_with_different_seeds_draw_differently(tmp_path):
    """The draws are paired within a run, not frozen across seeds: another train.seed, other samples."""
    a = train(
        load_config(None, [*SHORT, *FORMAT_ONLY, "train.steps=1", "train.seed=0"]), tmp_path / "a", progress=False
    )
    b = train(
        load_config(None, [*SHORT, *FORMAT_ONLY, "train.steps=1", "train.seed=1"]), tmp_path / "b", progress=False
    )
    assert a["base"]["pass@1"] != b["base"]["pass@1"]


def test_evaluating_during_training_does_not_change_the_training_samples(tmp_path):
    """Held-out evaluation never draws from torch's generator, so the run's rollouts are the same
    with or without evaluations between its steps."""
    logged = []
    for every in (0, 1):
        out = tmp_path / f"every{every}"
        train(load_config(None, [*SHORT, "train.steps=2", f"train.eval_every={every}"]), out, progress=False)
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        logged.append([(row["reward"], row["completions/mean_length"], row["loss"]) for row in rows if "reward" in row])
    assert logged[0] == logged[1] and len(logged[0]) == 2
