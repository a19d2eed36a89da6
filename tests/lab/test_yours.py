"""Your runs on the lab's first page: off by default (the page is the shipped atlas as shipped),
and when asked for, rows of their own, each named, split by length, never averaged with the atlas."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
import yaml

from rlvr.config import load_config
from rlvr.lab.app import describe_run
from rlvr.lab.effects import load_atlas
from rlvr.lab.effects_page import page_data
from rlvr.lab.runs import read_run
from rlvr.lab.yours import Placer
from rlvr.studies.atlas import KNOBS

PPO = "ppo (algo.algorithm=ppo on the default config)"


def test_an_algorithm_set_on_the_default_config_is_named_by_what_it_is() -> None:
    # `rlvr compare` sets algo.algorithm=ppo on the default configuration: not the atlas's ppo
    # (configs/ppo.yaml), and nothing but the algorithm differs from the default: the name says so
    config = yaml.safe_load(yaml.safe_dump(load_config(None, ["algo.algorithm=ppo"]).to_dict(), sort_keys=False))
    assert Placer().place(config) == [("algorithm", PPO)]


@pytest.fixture(scope="module")
def data(your_runs: Path) -> dict:
    return page_data(your_runs)


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


@pytest.mark.slow
def test_by_default_the_page_is_the_shipped_atlas_exactly(data: dict, tmp_path: Path) -> None:
    alone = page_data(tmp_path)  # the same page with no run of yours
    for knob in KNOBS:
        assert data["knobs"][knob]["shipped"] == alone["knobs"][knob]["shipped"], knob
        assert alone["knobs"][knob]["yours"] == {"values": [], "readings": []}
    atlas = load_atlas()
    beta = {v["value"]: v for v in data["knobs"]["beta"]["shipped"]["values"]}
    assert beta["0.04"]["runs"] == [entry for entry in atlas["knobs"]["beta"] if entry["value"] == "0.04"][0]["runs"]
    assert all(v["source"] == "shipped" and v["name"] == v["value"] for v in beta.values())


@pytest.mark.slow
def test_your_runs_are_rows_of_their_own_split_by_length(data: dict, your_runs: Path) -> None:
    assert data["your_runs"] == sorted(str(p) for p in your_runs.iterdir())
    yours = {v["name"]: v for v in data["knobs"]["beta"]["yours"]["values"]}
    assert list(yours) == [
        "yours: grpo, β 0.04, 3 steps, seeds 0,1",
        "yours: grpo, β 0.04, 5 steps, seed 0",
        "yours: grpo, β 0.04, seed 0, running/interrupted at step 2 of 5",
    ]
    three, five, cut = yours.values()
    assert three["runs"] == [str(your_runs / "default3-seed0"), str(your_runs / "default3-seed1")]
    assert (
        three["row"]["steps"] == [3]
        and five["row"]["steps"] == [5]
        and five["runs"] == [str(your_runs / "default5-seed0")]
    )
    finals = [_summary(your_runs / f"default3-seed{s}")["final"]["gold_pass@1"] for s in (0, 1)]
    assert three["row"]["pass@1 final"]["mean"] == pytest.approx(statistics.fmean(finals), rel=1e-3)
    walls = [_summary(your_runs / f"default3-seed{s}")["wall_s"] for s in (0, 1)]
    assert three["row"]["wall s"]["mean"] == pytest.approx(statistics.fmean(walls), rel=1e-3)
    assert three["curves"]["reward"]["step"] == [1, 2, 3]  # the 5-step run's steps 4-5 are not in it
    assert cut["unfinished"] == "running/interrupted at step 2 of 5" and cut["row"]["finished"] == 0
    assert cut["curves"]["reward"]["step"] == [1, 2]


@pytest.mark.slow
def test_every_row_is_named_and_a_ppo_run_says_what_it_is(data: dict) -> None:
    for knob, view in data["knobs"].items():
        for value in view["shipped"]["values"] + view["yours"]["values"]:
            assert value["name"].strip() and "()" not in value["name"], (knob, value["name"])
        assert all(v["name"].startswith("yours: ") and v["source"] == "yours" for v in view["yours"]["values"])
    names = [v["name"] for v in data["knobs"]["algorithm"]["yours"]["values"]]
    assert f"yours: {PPO}, 3 steps, seed 0" in names
    # the ppo run is one knob away from the default (the algorithm): no other knob holds it
    assert not any("ppo" in v["name"] for k in KNOBS if k != "algorithm" for v in data["knobs"][k]["yours"]["values"])


@pytest.mark.slow
def test_readings_compare_your_runs_only_with_runs_of_the_same_length(data: dict) -> None:
    shipped = data["knobs"]["algorithm"]["shipped"]["readings"]
    steps = data["steps"]
    assert any(f"steps {steps - 9}-{steps}" in line for line in shipped)  # the atlas's own window
    lines = data["knobs"]["algorithm"]["yours"]["readings"]
    # grpo and ppo both have 3-step runs: compared; the 5-step grpo run has no 5-step partner
    assert lines and all(line.startswith("your 3-step runs: ") for line in lines)
    assert any("mean over steps 1-3" in line for line in lines) and not any("steps 1-5" in line for line in lines)
    (only,) = data["knobs"]["beta"]["yours"]["readings"]  # one value of β among yours: nothing to compare
    assert only.startswith("Your runs: each is compared only with runs of yours of the same length")


@pytest.mark.slow
def test_the_one_run_tab_shows_an_unfinished_run_as_unfinished(your_runs: Path) -> None:
    text = describe_run(read_run(your_runs / "cut"))
    assert "running/interrupted at step 2 of 5" in text and "n/a -> n/a" not in text
    assert "n/a" not in text.split("peak training memory")[0]


@pytest.mark.slow
def test_runs_of_one_length_with_other_held_out_sizes_are_split_and_named(your_runs: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for name in ("default3-seed0", "default3-seed1", "ppo3-seed0"):
        shutil.copytree(your_runs / name, root / name)
    config = root / "default3-seed1" / "config.yaml"  # as if evaluated on 16 held-out queries
    config.write_text(config.read_text().replace("num_eval: 8", "num_eval: 16"))
    yours = page_data(root)["knobs"]["algorithm"]["yours"]
    assert [v["name"] for v in yours["values"]] == [
        "yours: grpo, 3 steps, seed 0, held-out 8×2",
        f"yours: {PPO}, 3 steps, seed 0",
        "yours: grpo, 3 steps, seed 1, held-out 16×2",
    ]
    assert yours["readings"] and all(line.startswith("your 3-step runs (held-out 8×2): ") for line in yours["readings"])
