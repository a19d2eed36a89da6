"""The flight recorder (train.recorder_steps): the checkpoints after the last K steps and those
steps' batches stay in the run's recorder/, `rlvr inspect --run DIR --step N` repeats any of those
steps exactly on its recorded batch, and the first non-finite alarm pins the state before its step
and the step's batch, naming the micro-batch that went non-finite."""

from __future__ import annotations

import math

import pytest
import torch

from rlvr import rundir
from rlvr.config import load_config
from rlvr.diagnostics.inspector import inspect_run
from rlvr.engine.flight import PINNED_BATCH, load_batch, recorded_batches
from rlvr.engine.health import HealthAlarm
from rlvr.engine.loop import train

SETS = ["train.steps=5", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=8", "train.threads=1"]


def test_the_recorder_keeps_the_last_steps_and_each_replays_exactly(tmp_path, cli):
    train(load_config(None, [*SETS, "train.recorder_steps=2"]), tmp_path, progress=False)
    assert sorted(rundir.recorded_checkpoints(tmp_path)) == [3, 4]  # the checkpoint itself holds step 5
    logged = {row["step"]: row for row in rundir.read_metrics(tmp_path) if "loss" in row}
    batches = recorded_batches(tmp_path)
    assert sorted(batches) == [4, 5]  # the batches of the steps that start from those checkpoints
    for step in (4, 5):  # from the recorder's state after step 3, and after step 4
        record = load_batch(batches[step])
        assert record["step"] == step and record["loss"] == logged[step]["loss"] and "nonfinite_rows" not in record
        rewards = record["rollouts"].rewards  # [B, G]
        assert float(torch.nan_to_num(rewards).mean()) == pytest.approx(logged[step]["reward"])
        capture = inspect_run(tmp_path, step, [], tmp_path / f"inspect{step}")
        assert "flight recorder" in capture["source"]["policy"] and "not sampled again" in capture["source"]["batch"]
        assert capture["loss"] == logged[step]["loss"] and capture["grad_norm"] == logged[step]["grad_norm"]
        assert [c["text"] for c in capture["completions"]] == record["rollouts"].batch.texts
    # the same through `rlvr inspect --replay` of the recorded batch, then under another setting
    again = cli("inspect", "--replay", str(batches[5]), "--out", str(tmp_path / "cli"))
    assert again.returncode == 0 and "(equal to metrics.jsonl's" in again.stdout, again.stdout + again.stderr
    changed = cli("inspect", "--replay", str(batches[5]), "--set", "algo.beta=0", "--out", str(tmp_path / "beta0"))
    assert changed.returncode == 0 and (tmp_path / "beta0" / "replay.json").is_file()
    capture = inspect_run(tmp_path, 3, [], tmp_path / "inspect3")  # rotated out: weights only, said so
    assert "warning" in capture["source"]


def test_inspect_trains_on_the_recorded_batch_not_on_a_new_sample(tmp_path):
    train(load_config(None, [*SETS, "train.recorder_steps=1"]), tmp_path, progress=False)
    path = recorded_batches(tmp_path)[5]
    record = load_batch(path)
    assert torch.nan_to_num(record["rollouts"].rewards).std() > 0  # a step with signal ...
    record["rollouts"].rewards = torch.zeros_like(record["rollouts"].rewards)  # ... recorded as one without
    torch.save(record, path)
    capture = inspect_run(tmp_path, 5, [], tmp_path / "inspect")
    assert capture["rewards"] == record["rollouts"].rewards.tolist()  # what the record says, not a new sample
    logged = [row for row in rundir.read_metrics(tmp_path) if row.get("step") == 5 and "loss" in row][0]
    assert capture["grad_norm"] < 0.5 * logged["grad_norm"]  # every advantage 0: the KL term's gradient alone
    # a setting that made the batch changes: the step samples again, and says so
    resampled = inspect_run(tmp_path, 5, ["rollout.temperature=0.5"], tmp_path / "hotter")
    assert resampled["source"]["batch"].startswith("sampled again")


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
    batch = load_batch(rundir.recorder_dir(tmp_path) / f"{PINNED_BATCH}{step}.pt")  # kept though K = 0
    rows = batch["nonfinite_rows"]  # the first micro-batch whose log-probs or gradient went non-finite
    assert rows and set(rows) <= set(range(batch["rollouts"].batch.num_completions))
    assert f"{PINNED_BATCH}{step}.pt" in str(raised.value)
    capture = inspect_run(tmp_path, step, [], tmp_path / "replay")
    logged = [row for row in rundir.read_metrics(tmp_path) if row.get("step") == step][0]
    # the same update again: what metrics.jsonl logged as null (NaN) is NaN in the replay too
    for key in ("loss", "grad_norm"):
        value = capture[key]
        assert (logged[key] is None and not math.isfinite(value)) or value == logged[key], key
    assert not all(math.isfinite(capture[key]) for key in ("loss", "grad_norm"))
