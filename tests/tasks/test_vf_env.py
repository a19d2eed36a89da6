"""task.name=verifiers: rows from an environment with the `verifiers` contract (the small one in
tests/verifiers/vf_envs.py), the config that asks for it, and a short real training run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("verifiers")

from rlvr.config import ConfigError, load_config  # noqa: E402
from rlvr.tasks import load_task  # noqa: E402
from rlvr.tasks.dataset import DatasetError  # noqa: E402
from rlvr.tasks.vf_env import load, split_prompt  # noqa: E402
from rlvr.verifiers import _vf_worker  # noqa: E402

from ..verifiers.vf_envs import ENV_NAME, write_env  # noqa: E402


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_env(tmp_path_factory.mktemp("vf_env"))


def test_rows_carry_the_environments_row_and_its_splits(env_dir):
    train, heldout = load(ENV_NAME, {"num_train": 12}, path=str(env_dir), num_train=5, num_eval=3)
    assert [q.id for q in train] == [f"vf-{ENV_NAME}-train-{i}" for i in range(5)]  # the first num_train rows
    assert [q.prompt for q in heldout] == ["What is 100 + 101?", "What is 101 + 102?", "What is 102 + 103?"]
    row = train[1]
    assert row.prompt == "What is 1 + 2?"  # the user turn's text
    assert row.meta["system_prompt"] == "Answer with the number inside <answer></answer>."
    criteria = row.verifier
    assert {key: criteria[key] for key in ("type", "env", "args", "path")} == {
        "type": "verifiers", "env": ENV_NAME, "args": {"num_train": 12}, "path": str(env_dir)
    }  # fmt: skip
    assert criteria["row"]["answer"] == "3" and criteria["row"]["info"] == {"a": 1}
    assert criteria["row"]["prompt"][-1] == {"role": "user", "content": "What is 1 + 2?"}
    json.dumps(criteria)  # a JSONL row as it is


def test_without_an_eval_dataset_the_last_rows_are_held_out(env_dir):
    rows = _vf_worker.rows(ENV_NAME, {"num_train": 10, "with_eval": False}, str(env_dir), num_train=100, num_eval=3)
    kind, split = rows
    assert kind == "ok" and split["eval_from"] == "dataset"
    assert [index for index, _ in split["train"]] == list(range(7))  # 10 rows, the last 3 never trained on
    assert [index for index, _ in split["eval"]] == [7, 8, 9]
    kind, why = _vf_worker.rows(ENV_NAME, {"num_train": 3, "with_eval": False}, str(env_dir), num_train=5, num_eval=3)
    assert kind == "error" and "has only 3; lower task.num_eval" in why


@pytest.mark.parametrize(
    "args, message",
    [
        ({"kind": "tools"}, "is a ToolEnv, not a SingleTurnEnv"),
        ({"kind": "group"}, "has group reward functions"),
        ({"colour": "red"}, "did not load: Failed to load environment"),  # a keyword load_environment lacks
    ],
)
def test_environments_rlvr_cannot_score_are_refused_at_load(env_dir, args, message):
    kind, why = _vf_worker.rows(ENV_NAME, args, str(env_dir), num_train=5, num_eval=2)
    assert kind == "error" and message in why, why


def test_a_missing_environment_is_a_dataset_error_naming_the_field(tmp_path):
    cfg = load_config(overrides=["task.name=verifiers", "task.vf_env=no_such_env", f"task.vf_path={tmp_path}"])
    with pytest.raises(DatasetError, match=r"task.vf_env='no_such_env' did not load"):
        load_task(cfg.task)


@pytest.mark.parametrize(
    "messages, expected",
    [
        ([{"role": "user", "content": "Q"}], ("", "Q")),
        ([{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}], ("S", "Q")),
        ("Q", ("", "Q")),
    ],
)
def test_a_prompt_is_one_user_turn_after_at_most_one_system_turn(messages, expected):
    assert split_prompt(messages, where="row 0") == expected


def test_few_shot_turns_are_refused():
    few_shot = [
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "Q"},
    ]
    with pytest.raises(ValueError, match=r"row 0: its prompt has the turns \['user', 'assistant', 'user'\]"):
        split_prompt(few_shot, where="row 0")


def test_vf_settings_from_yaml_or_set_and_their_errors(tmp_path):
    cfg = load_config(overrides=["task.name=verifiers", "task.vf_env=gsm8k", "task.vf_args={num_train_examples: 50}"])
    assert cfg.task.vf_args == {"num_train_examples": 50}
    preset = tmp_path / "vf.yaml"
    preset.write_text(
        f"task:\n  name: verifiers\n  vf_env: {ENV_NAME}\n  vf_path: {tmp_path}\n  vf_args:\n    num_eval: 2\n"
    )
    assert load_config(preset).task.vf_args == {"num_eval": 2}
    with pytest.raises(ConfigError, match="task.vf_args must be a mapping"):
        load_config(overrides=["task.name=verifiers", "task.vf_env=e", "task.vf_args=3"])
    with pytest.raises(ConfigError, match="task.name=verifiers needs task.vf_env"):
        load_config(overrides=["task.name=verifiers"])
    with pytest.raises(ConfigError, match="apply only with task.name=verifiers"):
        load_config(overrides=["task.vf_env=e"])
    with pytest.raises(ConfigError, match="task.vf_path=/no/such/dir is not a directory"):
        load_config(overrides=["task.name=verifiers", "task.vf_env=e", "task.vf_path=/no/such/dir"])


def test_a_missing_environment_is_exit_2_with_one_line(cli, tmp_path):
    run = cli("train", "--set", "task.name=verifiers", "--set", "task.vf_env=nope", "--out", str(tmp_path / "r"))
    assert run.returncode == 2
    assert "nope" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.slow
def test_the_tiny_model_trains_on_a_verifiers_environment(env_dir, train_updates):
    updates = train_updates(
        "task.name=verifiers", f"task.vf_env={ENV_NAME}", f"task.vf_path={env_dir}", "task.num_train=8"
    )
    assert [m["step"] for m in updates] == [1, 2]
    assert all(m["verifier/unscorable"] == 0 for m in updates)  # every completion got a score from the rubric
    assert all(0 <= m["reward"] <= 1 for m in updates)
