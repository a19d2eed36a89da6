"""The determinism gate (diagnostics/determinism.py, `rlvr train --determinism`): two synchronous
runs with one seed log identical numbers apart from times, throughput and memory; a different seed
is caught; asynchronous runs are refused."""

from __future__ import annotations

from rlvr.config import load_config
from rlvr.diagnostics.determinism import differences
from rlvr.engine.loop import train

SHORT = ["--set=train.steps=4", "--set=train.batch_queries=4", "--set=task.num_eval=8", "--set=train.eval_every=2"]


def test_two_runs_of_one_seed_log_identical_numbers(tmp_path, cli):
    done = cli("train", "--determinism", "--quiet", "--out", str(tmp_path), *SHORT)
    assert done.returncode == 0, done.stderr
    assert "identical numbers" in done.stdout
    assert differences(tmp_path / "a", tmp_path / "b") == []
    # the comparison reads every logged number: the runs logged health, eval and timing keys
    first = (tmp_path / "a" / "metrics.jsonl").read_text()
    assert "health/kl" in first and "eval/pass@1" in first and "time/step" in first


def test_another_seed_is_a_difference(tmp_path):
    sets = [s.removeprefix("--set=") for s in SHORT]
    for seed, name in ((0, "a"), (1, "b")):
        train(load_config(None, [*sets, f"train.seed={seed}"]), tmp_path / name, progress=False)
    found = differences(tmp_path / "a", tmp_path / "b")
    assert any(": reward " in line for line in found) and "summary.json differs" in found


def test_asynchronous_runs_are_refused_with_exit_2(tmp_path, cli):
    done = cli("train", "--determinism", "--out", str(tmp_path), "--set", "rollout.max_staleness=1")
    assert done.returncode == 2 and "not bit-reproducible" in done.stderr
