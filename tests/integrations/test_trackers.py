"""train.trackers: the real `rlvr train` writes TensorBoard events and an offline W&B run whose
contents (read back from the files) equal metrics.jsonl; missing packages fail before training."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.tasks.arith import make_queries

pd = pytest.importorskip("pandas")
RLVR = [sys.executable, "-m", "rlvr.cli"]


def read_wandb_records(path: Path) -> list:
    """Every record of a W&B transaction log (``run-<id>.wandb``): W&B's LevelDB-style log of 32 KiB
    blocks; each chunk has a 7-byte header (CRC-32, little-endian length, type 1 full / 2 first /
    3 middle / 4 last), after the file's own 7-byte header ':W&B', 0xBEE1, version."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", "not a W&B transaction log"
    block, position, pending, records = 32768, 7, b"", []
    while position + 7 <= len(data):
        if block - position % block < 7:  # a block's tail too short for a header is padding
            position += block - position % block
            continue
        length, kind = int.from_bytes(data[position + 4 : position + 6], "little"), data[position + 6]
        chunk, position = data[position + 7 : position + 7 + length], position + 7 + length
        if kind in (1, 2):
            pending = chunk
        elif kind in (3, 4):
            pending += chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def wandb_history(run_file: Path) -> dict[int, dict]:
    history = {}
    for record in read_wandb_records(run_file):
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            history.setdefault(record.history.step.num, {}).update(items)
    return history


def test_tracker_config_parses_and_rejects_unknown_names():
    assert load_config(None, ["train.trackers=[jsonl, tensorboard]"]).train.trackers == ["jsonl", "tensorboard"]
    assert load_config(None, ["train.trackers=jsonl,wandb"]).train.trackers == ["jsonl", "wandb"]
    assert load_config().train.trackers == ["jsonl"]
    with pytest.raises(ConfigError, match="unknown tracker 'mlflow'; known: jsonl, tensorboard, wandb"):
        load_config(None, ["train.trackers=[jsonl, mlflow]"])
    with pytest.raises(ConfigError, match="train.trackers must be a list"):
        load_config(None, ["train.trackers=3"])


@pytest.mark.parametrize(
    "package, overrides, asker",
    [
        ("wandb", ["train.trackers=[jsonl, wandb]"], "train.trackers includes 'wandb', which"),
        ("tensorboard", ["train.trackers=[tensorboard]"], "train.trackers includes 'tensorboard', which"),
        ("tensorboard", ["train.tensorboard=true"], "train.tensorboard=true"),
    ],
)
def test_missing_tracker_package_is_a_config_error_with_the_install_command(monkeypatch, package, overrides, asker):
    monkeypatch.setitem(sys.modules, package, None)  # what Python does for a package that is not there
    with pytest.raises(ConfigError) as error:
        load_config(None, overrides)
    assert str(error.value) == f"{asker} needs the {package} package: .venv/bin/pip install -e '.[{package}]'"


@pytest.mark.slow
def test_train_writes_tensorboard_and_offline_wandb_from_an_hf_parquet_task(base_model_dir, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    for split, count in (("train", 40), ("test", 8)):  # arith queries, stored as a HF dataset would
        queries = make_queries(count, split="train" if split == "train" else "heldout", seed=0)
        pd.DataFrame(
            {"question": [q.prompt for q in queries], "solution": [q.verifier["answer"] for q in queries]}
        ).to_parquet(tmp_path / f"{split}.parquet")
    out = tmp_path / "run"
    monkeypatch.delenv("WANDB_MODE", raising=False)  # offline must come from rlvr's default, not the env
    done = subprocess.run(
        [
            *RLVR,
            "train",
            "--set",
            f"model.name={base_model_dir}",
            "--set",
            "train.steps=2",
            "--set",
            "train.batch_queries=4",
            "--set",
            "rollout.group_size=4",
            "--set",
            "train.threads=1",
            "--set",
            "train.eval_samples=2",
            "--set",
            "task.name=hf",
            "--set",
            f"task.hf_path={tmp_path / 'train.parquet'}",
            "--set",
            f"task.hf_eval_path={tmp_path / 'test.parquet'}",
            "--set",
            "task.hf_prompt_column=question",
            "--set",
            "task.hf_answer_column=solution",
            "--set",
            "train.trackers=[jsonl, tensorboard, wandb]",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = {row["step"]: row for row in rows if "reward" in row}
    assert sorted(steps) == [1, 2]

    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    for key in ("reward", "loss", "grad_norm"):
        logged = {event.step: event.value for event in events.Scalars(key)}
        assert logged == pytest.approx({step: row[key] for step, row in steps.items()}, rel=1e-6)

    (run_file,) = (out / "wandb").glob("offline-run-*/run-*.wandb")  # offline: nothing was uploaded
    history = wandb_history(run_file)
    for step, row in steps.items():
        for key in ("reward", "loss", "grad_norm", "completions/mean_length", "time/generate"):
            assert history[step][key] == pytest.approx(row[key], rel=1e-9), (step, key)
    final_eval = next(row for row in rows if "eval/pass@1" in row)
    assert history[final_eval["step"]]["eval/pass@1"] == pytest.approx(final_eval["eval/pass@1"])
    (run,) = [r.run for r in read_wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["train"]["trackers"] == ["jsonl", "tensorboard", "wandb"]
    assert config["task"]["hf_prompt_column"] == "question"
