"""The lab's data functions on real run directories (tests/lab/conftest.py makes them with the CLI)."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from rlvr.cli import build_parser
from rlvr.lab.runs import (
    KNOBS,
    SELF_CHECK_CURVES,
    accuracy_metrics,
    knob_values,
    measured,
    pick_runs,
    read_curves,
    read_run,
    scan_runs,
    sweep_command,
)
from rlvr.rundir import read_metrics
from rlvr.studies.sweep import parse_grid, plan

from .conftest import SMOKE


def test_scan_finds_nested_runs_with_their_knobs(runs_root: Path) -> None:
    runs = scan_runs(runs_root)
    assert [run.path.name for run in runs] == ["beta0.0", "beta0.04"]
    assert [run.knobs["beta"] for run in runs] == ["0.0", "0.04"]
    assert all(run.knobs["steps"] == "2" and run.knobs["G"] == "4" and run.finished for run in runs)
    assert "beta=0.04" in runs[1].label and "seed=0" in runs[1].label
    assert knob_values(runs)["beta"] == ["0.0", "0.04"]
    assert scan_runs(runs_root / "absent") == []


def test_pick_run_by_knobs(runs_root: Path) -> None:
    runs = scan_runs(runs_root)
    choice = {name: runs[0].knobs[name] for name in KNOBS} | {"beta": "0.04"}
    assert [run.path.name for run in pick_runs(runs, choice)] == ["beta0.04"]
    assert pick_runs(runs, choice | {"G": "16"}) == []


def test_curves_are_the_logged_values(runs_root: Path) -> None:
    path = runs_root / "sweep" / "beta0.04"
    logged = [row for row in read_metrics(path) if "reward" in row]
    curves = read_curves(path, ("reward", "kl"))
    assert [(c["step"], c["metric"]) for c in curves] == [(1, "reward"), (1, "kl"), (2, "reward"), (2, "kl")]
    assert [c["value"] for c in curves if c["metric"] == "reward"] == [row["reward"] for row in logged]


def test_measured_numbers_come_from_the_files(runs_root: Path) -> None:
    path = runs_root / "sweep" / "beta0.04"
    summary = json.loads((path / "summary.json").read_text())
    peak = max(row["memory/peak_total"] for row in read_metrics(path) if "memory/peak_total" in row)
    numbers = measured(read_run(path))
    assert numbers["pass@1"] == (summary["base"]["pass@1"], summary["final"]["pass@1"])
    assert numbers["memory/peak_total"] == peak > 0
    assert numbers["wall_s"] == summary["wall_s"] and numbers["steps_logged"] == 2


def test_unfinished_run_and_half_written_line(runs_root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "runs" / "live"
    shutil.copytree(runs_root / "sweep" / "beta0.0", copy)
    (copy / "summary.json").unlink()
    with (copy / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "rew')  # the trainer is mid-write
    run = read_run(copy)
    assert run is not None and not run.finished and measured(run)["pass@1"] == (None, None)
    assert {c["step"] for c in read_curves(copy)} == {1, 2}
    (tmp_path / "runs" / "not-a-run").mkdir()
    assert [r.path for r in scan_runs(tmp_path / "runs")] == [copy]


def test_sweep_command_makes_exactly_the_missing_setting(runs_root: Path) -> None:
    choice = dict(scan_runs(runs_root)[0].knobs) | {"G": "8", "seed": "3"}
    command = shlex.split(sweep_command(choice, runs_root, config=SMOKE))
    assert command[:2] == ["rlvr", "sweep"]
    args = build_parser().parse_args(command[1:])
    [(name, point, seed, cfg)] = plan(args.config, parse_grid(args.grid), args.seeds, args.overrides)
    assert (cfg.rollout.group_size, cfg.train.seed, cfg.algo.beta, cfg.train.steps) == (8, 3, 0.0, 2)
    assert Path(args.out).parent == runs_root


def test_self_check_curves_appear_only_for_a_base_that_checks(runs_root: Path, tmp_path: Path, cli) -> None:
    # tiny-arith never checks a step: its runs log a rate of 0, and the view leaves the curves out
    plain = runs_root / "sweep" / "beta0.04"
    rates = [json.loads(line).get("selfcheck/rate") for line in (plain / "metrics.jsonl").read_text().splitlines()]
    assert {r for r in rates if r is not None} == {0.0}
    assert accuracy_metrics(plain) == ("reward", "accuracy")
    done = cli("train", "--config", SMOKE, "--set", "model.name=tiny-arith-check", "--set", "rollout.max_new_tokens=64",
               "--set", "train.steps=2", "--set", "train.threads=1", "--out", str(tmp_path / "check"), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "check" / "metrics.jsonl").read_text().splitlines()]
    assert any(row.get("selfcheck/rate", 0) > 0 for row in rows)  # the base checks some steps
    assert accuracy_metrics(tmp_path / "check")[2:] == SELF_CHECK_CURVES
    shown = {row["metric"] for row in read_curves(tmp_path / "check", SELF_CHECK_CURVES)}
    assert "selfcheck/rate" in shown
