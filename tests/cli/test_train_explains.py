"""A first run explains itself: one line on what pass@1 and greedy mean (and why greedy can fall),
and curves.png in the run directory."""

from __future__ import annotations

import json

from PIL import Image

from rlvr.cli.train import reading


def test_a_run_prints_what_its_numbers_mean_and_writes_its_curves(cli, tmp_path):
    out = tmp_path / "run"
    result = cli("train", "--quiet", "--out", str(out), "--set", "train.steps=3", "--set", "task.num_eval=8")
    assert result.returncode == 0, result.stderr
    assert "what these mean: pass@1 is the share of right answers among samples" in result.stdout
    assert "curves.png" in result.stdout
    with Image.open(out / "curves.png") as image:
        assert image.format == "PNG" and image.size[0] > 600
    summary = json.loads((out / "summary.json").read_text())
    assert ("Greedy fell" in result.stdout) == (summary["final"]["greedy"] < summary["base"]["greedy"] - 0.005)


def test_the_reading_names_a_fall_in_greedy_accuracy_and_the_knobs_that_limit_it():
    fell = reading({"base": {"greedy": 0.995}, "final": {"greedy": 0.9}})
    assert "Greedy fell (0.995 -> 0.900)" in fell and "optim.lr" in fell and "algo.beta" in fell
    held = reading({"base": {"greedy": 0.995}, "final": {"greedy": 0.995}})
    assert "Greedy fell" not in held and held.startswith("what these mean")
