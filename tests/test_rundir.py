"""The run directory's one owner: names and formats as every earlier run wrote them."""

from __future__ import annotations

import json
from pathlib import Path

from rlvr import rundir


def _old_run(path: Path, *, finished: bool) -> Path:
    """A run directory byte for byte as the trainer wrote them before rundir.py existed."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("task:\n  name: arith\ntrain:\n  seed: 3\n  steps: 2\n")
    (path / "metrics.jsonl").write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "reward": null}\n{"step": 3, "rew')
    if finished:
        (path / "summary.json").write_text(json.dumps({"base": {"pass@1": 0.1}, "steps": 2}, indent=2) + "\n")
        (path / "final").mkdir()
    return path


def test_an_old_unfinished_run_reads_as_it_was_written(tmp_path: Path) -> None:
    run = _old_run(tmp_path / "a", finished=False)
    assert rundir.is_run_dir(run) and not rundir.is_finished(run) and not rundir.has_final(run)
    assert rundir.read_config(run) == {"task": {"name": "arith"}, "train": {"seed": 3, "steps": 2}}
    # the half-written third line is the one the trainer is writing: skipped, not an error
    assert rundir.read_metrics(run) == [{"step": 1, "reward": 0.5}, {"step": 2, "reward": None}]
    assert rundir.read_summary(run) is None


def test_a_finished_run_has_its_summary_and_final_policy(tmp_path: Path) -> None:
    run = _old_run(tmp_path / "a", finished=True)
    assert rundir.is_finished(run) and rundir.has_final(run)
    assert rundir.read_summary(run) == {"base": {"pass@1": 0.1}, "steps": 2}
    assert rundir.final_dir(run) == run / "final"


def test_writers_write_the_formats_readers_read(tmp_path: Path) -> None:
    rundir.write_config(tmp_path, {"train": {"steps": 2, "seed": 0}})
    rundir.write_summary(tmp_path, {"steps": 2, "wall_s": 1.5})
    assert (tmp_path / "config.yaml").read_text() == "train:\n  steps: 2\n  seed: 0\n"  # field order kept
    assert (tmp_path / "summary.json").read_text() == '{\n  "steps": 2,\n  "wall_s": 1.5\n}\n'
    assert rundir.read_config(tmp_path) == {"train": {"steps": 2, "seed": 0}}


def test_a_folder_without_config_is_no_run_and_has_no_rows(tmp_path: Path) -> None:
    assert not rundir.is_run_dir(tmp_path)
    assert rundir.read_metrics(tmp_path) == []
    assert rundir.find_checkpoint(tmp_path) is None


def test_the_checkpoint_is_found_also_between_the_two_renames(tmp_path: Path) -> None:
    (tmp_path / "checkpoint").mkdir()
    assert rundir.find_checkpoint(tmp_path) is None  # no state file: a checkpoint being written
    old = tmp_path / ".checkpoint.old"
    old.mkdir()
    (old / rundir.STATE_FILE).write_bytes(b"")
    assert rundir.find_checkpoint(tmp_path) == old
    (tmp_path / "checkpoint" / rundir.STATE_FILE).write_bytes(b"")
    assert rundir.find_checkpoint(tmp_path) == tmp_path / "checkpoint"


def test_run_dirs_finds_nested_runs_in_path_order(tmp_path: Path) -> None:
    for name in ("b", "a/x-seed0", "a/x-seed1"):
        _old_run(tmp_path / name, finished=False)
    (tmp_path / "notes").mkdir()
    assert [p.relative_to(tmp_path).as_posix() for p in rundir.run_dirs(tmp_path)] == ["a/x-seed0", "a/x-seed1", "b"]
