"""`rlvr sweep` end to end with the real CLI on a tiny budget, plus its argument errors."""

import json

import pytest

from rlvr.studies.sweep import SweepError, format_table, parse_grid, parse_seeds

TINY = [
    "--set",
    "train.steps=1",
    "--set",
    "train.batch_queries=2",
    "--set",
    "rollout.group_size=2",
    "--set",
    "task.num_train=20",
    "--set",
    "task.num_eval=4",
    "--set",
    "train.eval_samples=2",
    "--set",
    "train.threads=1",
    "--set",
    "rollout.max_new_tokens=24",
]


@pytest.mark.slow
def test_sweep_runs_each_grid_point_into_its_own_run_directory_and_tabulates(tmp_path, cli):
    out = tmp_path / "sweep"
    args = [
        "sweep",
        "--config",
        "configs/smoke.yaml",
        "--grid",
        "reward.fidelity=gold,lenient",
        "--seeds",
        "0",
        "--out",
        str(out),
        "--quiet",
        *TINY,
    ]
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "sweep.json").read_text())
    labels = [r["label"] for r in report["runs"]]
    assert labels == ["reward.fidelity=gold-seed0", "reward.fidelity=lenient-seed0"]
    for row in report["runs"]:
        run = out / row["label"]
        assert (run / "config.yaml").is_file() and (run / "summary.json").is_file() and (run / "final").is_dir()
        summary = json.loads((run / "summary.json").read_text())
        assert row["gold_pass@1"] == summary["final"]["gold_pass@1"] and row["wall_s"] == summary["wall_s"]
        assert 0 <= row["hacking_rate"] <= 1
    gold, lenient = report["runs"]
    assert gold["hacking_rate"] == 0.0 and gold["pass@1"] == gold["gold_pass@1"]
    # a lenient verifier passes everything gold passes, and maybe more
    assert lenient["pass@1"] >= lenient["gold_pass@1"]
    assert "lenient" in (out / lenient["label"] / "config.yaml").read_text()
    assert (out / "sweep.png").stat().st_size > 1000
    assert "reward.fidelity=lenient-seed0" in done.stdout and "hacking rate" in done.stdout
    # a second call reads the finished runs back instead of training again
    again = cli(*args)
    assert again.returncode == 0 and "sweep run" not in again.stdout
    assert json.loads((out / "sweep.json").read_text())["runs"] == report["runs"]
    # ... but only a run of exactly the config that grid point asks for
    config = out / labels[0] / "config.yaml"
    config.write_text(config.read_text().replace("steps: 1\n", "steps: 2\n"))
    changed = cli(*args)
    assert changed.returncode == 2 and "finished run of a different config" in changed.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grid", "reward.fidelity"], "expected section.key=v1,v2"),
        (["--grid", "reward.fidelity="], "no values after '='"),
        (["--grid", "reward.fidelity=gold,bogus"], "reward.fidelity must be one of"),
        (["--grid", "task.name=funcsynth", "--grid", "reward.fidelity=lenient"], "weakens math rows"),
        (["--grid", "train.steps=1", "--seeds", "a"], "argument --seeds: expected comma-separated integers"),
    ],
)
def test_bad_grids_fail_before_any_run_with_one_line(tmp_path, args, message, cli):
    done = cli("sweep", "--out", str(tmp_path / "s"), *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "s").exists()


def test_parsers_and_table():
    assert parse_grid(["a.b=1,2", "c.d=x"]) == [("a.b", ["1", "2"]), ("c.d", ["x"])]
    with pytest.raises(SweepError, match="given twice"):
        parse_grid(["a.b=1", "a.b=2"])
    assert parse_seeds("0, 2") == [0, 2]
    row = {
        "label": "p-seed0",
        "base_gold_pass@1": 0.25,
        "gold_pass@1": 0.5,
        "base_pass@1": 0.5,
        "pass@1": 1.0,
        "base_hacking_rate": 0.25,
        "hacking_rate": 0.5,
        "wall_s": 12.0,
    }
    table = format_table({"runs": [row]})
    assert "25.0% -> 50.0%" in table and "50.0% -> 100.0%" in table and "12s" in table
