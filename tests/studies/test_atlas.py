"""`rlvr atlas`: the plan of runs (one knob at a time, shared defaults), and a real small build that
keeps finished runs and redoes only what is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.studies.atlas import KNOBS, AtlasError, plan


def test_every_knob_of_the_lab_is_planned_once_per_distinct_configuration():
    runs = plan(list(KNOBS), [0, 1, 2], steps=60)
    names = [run.dir_name for run in runs]
    assert len(names) == len(set(names))
    # the default value of each knob (gold, grpo, G=8, beta=0.04, lr=1e-4) is one configuration
    defaults = [s for settings in KNOBS.values() for s in settings if s.name == "default"]
    timed = {knob for knob, settings in KNOBS.items() if all(s.alone for s in settings)}
    assert timed == {"max_staleness"}  # timed alone: its 0 is the default at the machine's 2 threads
    assert {s.knob for s in defaults} == set(KNOBS) - timed and len(defaults) == len(KNOBS) - len(timed)
    distinct = {s.name for settings in KNOBS.values() for s in settings}
    assert len(runs) == 3 * len(distinct)  # 3 seeds of each distinct configuration
    assert {s.value for s in KNOBS["algorithm"]} == {"grpo", "dr_grpo", "dapo", "gspo", "rloo", "reinforce_pp",
                                                     "ppo", "dpo"}  # fmt: skip
    assert [s.value for s in KNOBS["beta"]] == ["0.0", "0.01", "0.04", "0.1", "0.4"]
    assert len(KNOBS["fidelity"]) >= 6 and any("random" in s.value for s in KNOBS["fidelity"])


def test_the_lr_knob_brackets_the_default_and_names_every_other_value():
    from rlvr.config import RunConfig

    values = {s.value: s for s in KNOBS["lr"]}
    lrs = sorted(float(v) for v in values)
    default = RunConfig().optim.lr
    assert lrs[0] < default < lrs[-1]  # a value below and above the default: "best" is an interior choice
    for value, setting in values.items():
        assert setting.overrides == (() if float(value) == default else (f"optim.lr={value}",))


def test_a_random_reward_is_a_coin_flip_whatever_the_answer():
    (random,) = [s for s in KNOBS["fidelity"] if s.value == "random reward"]
    # a coin per rollout (reward.fidelity=random), not a coin per distinct text (noisy at 0.5/0.5)
    assert set(random.overrides) == {"reward.fidelity=random", "reward.random_rate=0.5"}


@pytest.mark.parametrize(
    ("knobs", "steps", "message"), [(["temperature"], 60, "unknown knob"), (["lr"], 1, "at least 2")]
)
def test_bad_requests_are_refused_before_any_run(knobs, steps, message):
    with pytest.raises(AtlasError, match=message):
        plan(knobs, [0], steps)


@pytest.mark.slow
def test_a_small_atlas_builds_indexes_and_redoes_only_what_is_missing(tmp_path: Path, cli):
    done = cli(
        "atlas", "--knobs", "lr", "--seeds", "0", "--steps", "2", "--jobs", "2", "--out", str(tmp_path), "--quiet"
    )
    assert done.returncode == 0, done.stderr
    index = json.loads((tmp_path / "atlas.json").read_text())
    assert index["runs_made"] == 5 and index["steps"] == 2 and index["made"]["rlvr"]
    values = index["knobs"]["lr"]
    assert [v["value"] for v in values] == ["3e-5", "1e-4", "2e-4", "5e-4", "2e-3"]
    for value in values:
        (run,) = value["runs"]
        summary = json.loads((tmp_path / run / "summary.json").read_text())
        assert summary["steps"] == 2
    lr_runs = {v["value"]: v["runs"][0] for v in values}
    assert "lr: 0.002" in (tmp_path / lr_runs["2e-3"] / "config.yaml").read_text()
    # a missing result is made again, the others are kept
    (tmp_path / lr_runs["1e-4"] / "summary.json").unlink()
    done = cli("atlas", "--knobs", "lr", "--seeds", "0", "--steps", "2", "--out", str(tmp_path), "--quiet")
    assert done.returncode == 0, done.stderr
    again = json.loads((tmp_path / "atlas.json").read_text())
    assert again["runs_made"] == 1  # by this call
    # the build's time is the sum of its calls'
    assert again["build_wall_s"] == pytest.approx(index["build_wall_s"] + again["call_wall_s"], abs=0.11)
    card = again["runs"][lr_runs["2e-3"]]  # each run's small results stand in the index
    steps_logged = [
        json.loads(line) for line in (tmp_path / lr_runs["2e-3"] / "metrics.jsonl").read_text().splitlines()
    ]
    assert card["curves"]["step"] == [row["step"] for row in steps_logged if "reward" in row]


def test_reuse_keeps_a_previous_card_only_for_an_unchanged_configuration(tmp_path):
    from rlvr.studies.atlas import BASE, reusable

    shipped = json.loads((Path(__file__).parents[2] / "src/rlvr/lab/atlas/atlas.json").read_text())
    runs = plan(["lr"], [0], 60)
    kept = reusable(shipped, runs, tmp_path)
    assert sorted(kept) == sorted(f"runs/{run.dir_name}" for run in runs)  # every lr card matches today's config
    changed = json.loads(json.dumps(shipped))
    value = next(v for v in changed["knobs"]["lr"] if v["value"] == "5e-4")
    value["resolved"]["optim"]["lr"] = 3e-4  # a setting that resolved otherwise then
    assert "runs/default_optim.lr=5e-4-seed0" not in reusable(changed, runs, tmp_path)
    del value["resolved"]["optim"]["lr"]  # a field the old build did not have counts at today's default (1e-4)
    assert "runs/default_optim.lr=5e-4-seed0" not in reusable(changed, runs, tmp_path)
    assert reusable({**shipped, "base": [*BASE, "x=1"]}, runs, tmp_path) == {}  # another BASE: nothing
    assert reusable(shipped, plan(["lr"], [0], 30), tmp_path) == {}  # another length: nothing
    (tmp_path / "runs/default-seed0").mkdir(parents=True)
    (tmp_path / "runs/default-seed0/summary.json").write_text("{}")
    assert "runs/default-seed0" not in reusable(shipped, runs, tmp_path)  # made here already: its own card
