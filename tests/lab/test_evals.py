"""The pass@k view's data: a real eval.json from `rlvr eval` (tests/lab/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

from rlvr.lab.evals import (
    REGIME_ORDER,
    REGIMES,
    crossing_text,
    find_evals,
    load_regimes,
    passk_rows,
    read_eval,
    regime_rows,
    regime_text,
    short_names,
)


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


def test_the_shipped_regimes_are_both_sides_of_the_debate() -> None:
    regimes = load_regimes()
    assert [r["study"] for r in regimes] == list(REGIME_ORDER)  # sharpening, then expansion
    for curves in regimes:
        assert curves["source"] == "shipped with rlvr" and curves["made"]["machine"] and len(curves["seeds"]) >= 3
        for arm in curves["arms"].values():
            # the mean curve is the mean of the per-seed curves the card kept
            for i, value in enumerate(arm["trained"]["pass@k"]):
                seeds = [s["pass@k"][i] for s in arm["seeds"]]
                assert abs(value - sum(seeds) / len(seeds)) < 1e-9
        rows = regime_rows(curves)
        assert len(rows) == sum(4 * len(curves["k"]) for _ in curves["arms"])  # base/trained x pass/CoT
        text = regime_text(curves)
        assert all(claim["source"] in text for claim in curves["claims"]) and "k=256" in text


def test_your_own_study_replaces_the_shipped_one(tmp_path: Path) -> None:
    mine = json.loads((REGIMES / "expansion.json").read_text())
    mine["arms"]["step-checked reward"]["trained"]["pass@k"] = [0.5] * len(mine["k"])
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "passk.json").write_text(json.dumps(mine))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "passk.json").write_text('{"schema": "something else"}')  # not a study: ignored
    expansion = {r["study"]: r for r in load_regimes(tmp_path)}["expansion"]
    assert expansion["source"] == str(tmp_path / "study" / "passk.json")
    assert regime_rows(expansion)[len(mine["k"]) * 2]["value"] == 0.5  # trained pass@k at k=1
