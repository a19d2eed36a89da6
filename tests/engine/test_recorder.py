"""The flight recorder (train.recorder_steps): the checkpoints after the last K steps stay in the
run's recorder/, `rlvr inspect --run DIR --step N` repeats any of those steps exactly, and the first
non-finite alarm pins the state before its step."""

from __future__ import annotations

import math

import pytest

from rlvr import rundir
from rlvr.config import load_config
from rlvr.diagnostics.inspector import inspect_run
from rlvr.engine.health import HealthAlarm
from rlvr.engine.loop import train

SETS = ["train.steps=5", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=8", "train.threads=1"]


def test_the_recorder_keeps_the_last_steps_and_each_replays_exactly(tmp_path):
    train(load_config(None, [*SETS, "train.recorder_steps=2"]), tmp_path, progress=False)
    assert sorted(rundir.recorded_checkpoints(tmp_path)) == [3, 4]  # the checkpoint itself holds step 5
    logged = {row["step"]: row for row in rundir.read_metrics(tmp_path) if "loss" in row}
    for step in (4, 5):  # from the recorder's state after step 3, and after step 4
        capture = inspect_run(tmp_path, step, [], tmp_path / f"inspect{step}")
        assert "flight recorder" in capture["source"]["policy"]
        assert capture["loss"] == logged[step]["loss"] and capture["grad_norm"] == logged[step]["grad_norm"]
    capture = inspect_run(tmp_path, 3, [], tmp_path / "inspect3")  # rotated out: weights only, said so
    assert "warning" in capture["source"]


def test_no_recorder_keeps_nothing(tmp_path):
    train(load_config(None, [*SETS, "train.recorder_steps=0"]), tmp_path, progress=False)
    assert rundir.recorded_checkpoints(tmp_path) == {} and not rundir.recorder_dir(tmp_path).exists()


def test_a_diverging_update_trips_nonfinite_and_pins_the_state_that_replays_it(tmp_path):
    cfg = load_config(None, [*SETS, "optim.lr=1e8", "optim.max_grad_norm=0", "train.on_alarm=stop"])
    with pytest.raises(HealthAlarm) as raised:
        train(cfg, tmp_path, progress=False)
    step = raised.value.step
    assert "nonfinite" in raised.value.checks and f"rlvr inspect --run {tmp_path} --step {step}" in str(raised.value)
    pinned = rundir.recorder_dir(tmp_path) / f"pinned-after-step-{step - 1}"
    assert pinned.is_dir() and rundir.recorded_checkpoints(tmp_path)[step - 1] in (
        pinned,
        rundir.recorder_dir(tmp_path) / f"after-step-{step - 1}",
    )
    capture = inspect_run(tmp_path, step, [], tmp_path / "replay")
    logged = [row for row in rundir.read_metrics(tmp_path) if row.get("step") == step][0]
    # the same update again: what metrics.jsonl logged as null (NaN) is NaN in the replay too
    for key in ("loss", "grad_norm"):
        value = capture[key]
        assert (logged[key] is None and not math.isfinite(value)) or value == logged[key], key
    assert not all(math.isfinite(capture[key]) for key in ("loss", "grad_norm"))
