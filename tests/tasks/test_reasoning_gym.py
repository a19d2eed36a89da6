"""task.name=reasoning_gym: rows from reasoning-gym's generators, the config that asks for them, and
short real training runs on several of its datasets."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("reasoning_gym")

from rlvr.config import ConfigError, load_config  # noqa: E402
from rlvr.tasks import load_task  # noqa: E402
from rlvr.tasks.dataset import DatasetError  # noqa: E402
from rlvr.tasks.reasoning_gym import ITEMS_TAG, TUPLE_TAG, encode, load  # noqa: E402
from rlvr.verifiers._rg_worker import decode  # noqa: E402

SMALL = {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 1}


def test_rows_carry_what_the_scorer_needs_and_splits_share_no_question():
    train, heldout = load("chain_sum", SMALL, seed=3, num_train=300, num_eval=100)
    assert (len(train), len(heldout)) == (300, 100)
    assert len({q.prompt for q in train}) == 300 and not {q.prompt for q in train} & {q.prompt for q in heldout}
    assert len({q.id for q in train + heldout}) == 400
    row = train[0]
    assert row.verifier["type"] == "reasoning_gym" and row.verifier["dataset"] == "chain_sum"
    assert row.verifier["config"] == SMALL and row.prompt == row.verifier["entry"]["question"]
    json.dumps(row.verifier)  # a JSONL row as it is
    again, _ = load("chain_sum", SMALL, seed=3, num_train=300, num_eval=100)
    assert again == train
    other, _ = load("chain_sum", SMALL, seed=4, num_train=300, num_eval=100)
    assert other != train


def test_tuples_and_non_string_keys_survive_the_trip_through_json():
    value = {"grid": ((1, 2), (3, 4)), "pairs": [(1, "a")], "plain": [1, [2]], "none": None, "colors": {0: 1, 5: 2}}
    stored = json.loads(json.dumps(encode(value)))
    assert stored["grid"] == {TUPLE_TAG: [{TUPLE_TAG: [1, 2]}, {TUPLE_TAG: [3, 4]}]}
    assert stored["colors"] == {ITEMS_TAG: [[0, 1], [5, 2]]}
    decoded = decode(stored)
    assert decoded == value and type(decoded["grid"][0]) is tuple and list(decoded["colors"]) == [0, 5]


def test_values_json_cannot_hold_are_named():
    with pytest.raises(ValueError, match=r"entry.metadata holds a set"):
        encode({"metadata": {1, 2}})


@pytest.mark.parametrize(
    "name, config, message",
    [
        ("chain_summ", {}, "not a reasoning-gym dataset; e.g. chain_sum"),
        ("chain_sum", {"seed": 3}, "task.data_seed"),
        ("chain_sum", {"max_termz": 3}, "does not fit chain_sum"),
        ("chain_sum", {"min_terms": 5, "max_terms": 2}, "invalid for chain_sum"),
        ("chain_sum", {"min_terms": 2, "max_terms": 2, "max_digits": 1}, "distinct train questions"),
    ],
)
def test_what_cannot_be_generated_is_a_dataset_error_naming_the_field(name, config, message):
    cfg = load_config(overrides=["task.name=reasoning_gym", f"task.rg_dataset={name}", "task.num_train=500"])
    cfg.task.rg_config = config
    with pytest.raises(DatasetError, match=message):
        load_task(cfg.task)


def test_rg_config_is_a_mapping_from_yaml_or_set(tmp_path):
    cfg = load_config(overrides=["task.name=reasoning_gym", "task.rg_dataset=chain_sum", "task.rg_config={min_terms: 2, max_terms: 3}"])  # fmt: skip
    assert cfg.task.rg_config == {"min_terms": 2, "max_terms": 3}
    preset = tmp_path / "rg.yaml"
    preset.write_text("task:\n  name: reasoning_gym\n  rg_dataset: leg_counting\n  rg_config:\n    max_animals: 2\n")
    assert load_config(preset).task.rg_config == {"max_animals": 2}
    with pytest.raises(ConfigError, match="task.rg_config must be a mapping"):
        load_config(overrides=["task.name=reasoning_gym", "task.rg_dataset=chain_sum", "task.rg_config=3"])
    with pytest.raises(ConfigError, match="needs task.rg_dataset"):
        load_config(overrides=["task.name=reasoning_gym"])
    with pytest.raises(ConfigError, match="apply only with task.name=reasoning_gym"):
        load_config(overrides=["task.rg_dataset=chain_sum"])


def test_rows_ask_for_partial_credit_only_when_the_config_does():
    def rows(*overrides: str) -> list:
        cfg = load_config(overrides=["task.name=reasoning_gym", "task.rg_dataset=chain_sum", "task.num_train=3", "task.num_eval=2", *overrides])  # fmt: skip
        train, heldout = load_task(cfg.task)
        return train + heldout

    assert (
        load_config(overrides=["task.name=reasoning_gym", "task.rg_dataset=chain_sum"]).task.rg_partial_credit is False
    )
    assert all(q.verifier["partial_credit"] is False for q in rows())
    assert all(q.verifier["partial_credit"] is True for q in rows("task.rg_partial_credit=true"))
    with pytest.raises(ConfigError, match="apply only with task.name=reasoning_gym"):
        load_config(overrides=["task.rg_partial_credit=true"])


def test_composite_is_refused_by_name():
    cfg = load_config(overrides=["task.name=reasoning_gym", "task.rg_dataset=composite"])
    with pytest.raises(DatasetError, match="task.rg_dataset='composite' is refused: composite mixes other datasets"):
        load_task(cfg.task)


def test_a_bad_dataset_name_is_exit_2_with_one_line(cli, tmp_path):
    run = cli(
        "train", "--set", "task.name=reasoning_gym", "--set", "task.rg_dataset=nope", "--out", str(tmp_path / "r")
    )
    assert run.returncode == 2
    assert "nope" in run.stderr and "Traceback" not in run.stderr


TRAINED = {
    "chain_sum": "{min_terms: 2, max_terms: 2, max_digits: 1}",
    "leg_counting": "{min_animals: 1, max_animals: 2}",
    "letter_counting": "{min_words: 3, max_words: 4}",
    "spell_backward": "{min_word_len: 3, max_word_len: 5}",
    "gcd": "{max_value: 50}",
    "puzzle24": "{}",
}
"""Six datasets, each with short questions; puzzle24 is one that rlvr checks before its scorer (rlvr.verifiers._rg_checks)."""


@pytest.mark.slow
@pytest.mark.parametrize("name", TRAINED)
def test_the_tiny_model_trains_on_reasoning_gym_datasets(name, train_updates):
    updates = train_updates(
        "task.name=reasoning_gym", f"task.rg_dataset={name}", f"task.rg_config={TRAINED[name]}", "task.num_train=20"
    )
    assert [m["step"] for m in updates] == [1, 2]
    assert all(m["verifier/unscorable"] == 0 for m in updates)  # every completion got a score from the pool
    assert all(0 <= m["reward"] <= 1 for m in updates)
