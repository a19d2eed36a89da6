"""The pass@k view's data: a real eval.json from `rlvr eval` (tests/lab/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

from rlvr.lab.evals import crossing_text, find_evals, passk_rows, read_eval, short_names


def test_find_and_reshape_a_real_eval(runs_root: Path, eval_json: Path) -> None:
    found = find_evals(runs_root)  # other tests may have evaluated the beta=0.0 run as well
    assert eval_json in found and found == sorted(found) and {p.name for p in found} == {"eval.json"}
    report = read_eval(eval_json)
    assert report == json.loads(eval_json.read_text())
    rows = passk_rows(report)
    # 2 models x 2 curves x 3 k values, each value the one rlvr eval wrote
    assert len(rows) == 12
    base_passk = [r["value"] for r in rows if r["series"] == "base pass@k"]
    assert base_passk == report["models"]["base"]["pass@k"]
    assert [r["k"] for r in rows if r["series"] == "model CoT-pass@k"] == [1, 2, 4]


def test_crossing_text_follows_the_report(eval_json: Path) -> None:
    report = read_eval(eval_json)
    k = report["crossing"]["pass@k"]
    expected = "do not cross" if k is None else f"at k={k}"
    assert expected in crossing_text(report).split(";")[0]
    no_base = {**report, "models": {"model": report["models"]["model"]}}
    assert "No base model" in crossing_text(no_base)


def test_read_eval_rejects_other_files(tmp_path: Path) -> None:
    (tmp_path / "eval.json").write_text('{"steps": 3}')
    (tmp_path / "bad.json").write_text("{not json")
    assert read_eval(tmp_path / "eval.json") is None and read_eval(tmp_path / "bad.json") is None


def test_short_names_are_the_shortest_tails_that_tell_runs_apart() -> None:
    paths = [Path("runs/a/beta0.0/eval/eval.json"), Path("runs/a/beta0.04/eval/eval.json")]
    assert short_names(paths) == ["beta0.0/eval", "beta0.04/eval"]
    assert short_names([Path("x/e1/eval.json"), Path("x/e2/eval.json")]) == ["e1", "e2"]
    same = [Path("runs/eval/eval.json"), Path("runs/eval/eval.json")]
    assert short_names(same) == [str(p) for p in same]  # nothing tells them apart: the whole paths
