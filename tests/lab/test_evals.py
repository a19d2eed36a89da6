"""The pass@k view's data: real eval.json files from `rlvr eval` on two tasks (tests/lab/conftest.py),
and one in the layout written before intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.lab.app import describe_run
from rlvr.lab.evals import (
    CURVE_NAMES,
    DIFFERENCE,
    REGIME_ORDER,
    REGIMES,
    crossing_text,
    difference_text,
    eval_choices,
    eval_text,
    find_evals,
    interval_note,
    interval_rows,
    load_regimes,
    pass_at_1_text,
    passk_rows,
    read_eval,
    regime_rows,
    regime_text,
    run_eval_lines,
    scorable_text,
    short_names,
    temperature_curves,
)
from rlvr.lab.runs import read_run
from rlvr.studies.study_data import shipped


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
        cooled = temperature_curves(curves)  # the base alone at T < 1, where the study sampled it
        assert len(rows) == 4 * len(curves["k"]) * len(curves["arms"]) + 2 * sum(len(c["k"]) for c in cooled.values())
        text = regime_text(curves)
        assert all(claim["source"] in text for claim in curves["claims"]) and "k=256" in text


def test_the_base_at_a_lower_temperature_is_drawn_from_the_studys_raw_data() -> None:
    sharpening = {r["study"]: r for r in load_regimes()}["sharpening"]
    seeds = next(iter(shipped()["sharpening"]["arms"].values()))["seeds"]
    cooled = temperature_curves(sharpening)
    assert list(cooled) == ["0.6", "0.3"] and len(seeds) == 3
    at_1 = [s["base_at_temperature"]["0.3"]["pass@k"][0] for s in seeds]  # each seed's own draw, at k = 1
    assert abs(cooled["0.3"]["pass@k"][0] - sum(at_1) / 3) < 1e-12
    rows = [r for r in regime_rows(sharpening) if r["series"] == "base, T = 0.3 pass@k"]
    assert [r["value"] for r in rows] == cooled["0.3"]["pass@k"] and rows[-1]["k"] == 256


def test_your_own_study_replaces_the_shipped_one(tmp_path: Path) -> None:
    mine = json.loads((REGIMES / "expansion.json").read_text())
    first = next(iter(mine["arms"]))
    mine["arms"][first]["trained"]["pass@k"] = [0.5] * len(mine["k"])
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "passk.json").write_text(json.dumps(mine))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "passk.json").write_text('{"schema": "something else"}')  # not a study: ignored
    expansion = {r["study"]: r for r in load_regimes(tmp_path)}["expansion"]
    assert expansion["source"] == str(tmp_path / "study" / "passk.json")
    assert regime_rows(expansion)[len(mine["k"]) * 2]["value"] == 0.5  # trained pass@k at k=1


def _expected_cells(result: dict, key: str, i: int) -> tuple:
    """What the table shows for eval.json's `result[key][i]`: percent to 0.1, its interval, or n/a."""
    values = result[key]
    if values is None or values[i] is None:
        return ("n/a", "", "")
    interval = (result.get(f"{key}_ci") or [None] * len(values))[i]
    bounds = ("", "") if interval is None else tuple(round(100 * b, 1) for b in interval)
    return (round(100 * values[i], 1), *bounds)


def _shown(rows: list[dict]) -> dict[tuple, tuple]:
    return {(r["model"], r["curve"], r["k"]): (r["value"], r["95% low"], r["95% high"]) for r in rows}


@pytest.mark.parametrize("fixture", ["eval_json", "funcsynth_eval_json"])
def test_the_table_shows_each_value_and_interval_eval_json_holds(fixture: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(fixture)  # arith: a trained run against its base; funcsynth: no checker
    report = json.loads(path.read_text())
    shown = _shown(interval_rows(report, "e"))
    results = [*report["models"].items(), (DIFFERENCE, report["difference"])]
    # (model, base, model - base) x (pass@k, CoT-pass@k) x k, every cell as eval.json holds it
    assert len(shown) == 3 * 2 * len(report["k"])
    for label, result in results:
        for key, name in CURVE_NAMES.items():
            for i, k in enumerate(report["k"]):
                assert shown[(label, name, k)] == _expected_cells(result, key, i)


def test_the_text_gives_the_paired_difference_per_k(eval_json: Path, funcsynth_eval_json: Path) -> None:
    arith, funcsynth = (json.loads(p.read_text()) for p in (eval_json, funcsynth_eval_json))
    text = difference_text(arith)
    for key in CURVE_NAMES:
        for k, d, (low, high) in zip(arith["k"], arith["difference"][key], arith["difference"][f"{key}_ci"]):
            assert f"k={k} {100 * d:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]" in text
    text = difference_text(funcsynth)  # base against itself, paired draws: exactly 0 at every k
    assert "pass@k k=1 +0.0 [+0.0, +0.0], k=2 +0.0 [+0.0, +0.0], k=4 +0.0 [+0.0, +0.0]" in text
    assert "CoT-pass@k: n/a (task 'funcsynth' has no reasoning checker)" in text
    assert "resamples, seed 0" in interval_note(funcsynth) and scorable_text(funcsynth) == ""
    assert "tool rollouts" not in eval_text(funcsynth_eval_json, funcsynth)
    assert "T=1.0, tool rollouts with `python`" in eval_text(funcsynth_eval_json, funcsynth | {"tools": "python"})
    labels = dict((path, label) for label, path in eval_choices(funcsynth_eval_json.parents[2]))
    assert labels[str(funcsynth_eval_json)] == f"{funcsynth_eval_json} (funcsynth, n=4, 8 queries)"


def test_an_eval_json_from_before_intervals_still_shows(eval_json: Path, tmp_path: Path) -> None:
    report = json.loads(eval_json.read_text())
    for model in report["models"].values():  # the layout `rlvr eval` wrote before it gave intervals
        for key in ("pass@k_ci", "cot_pass@k_ci", "too_few_scorable", "query_ids"):
            del model[key]
    old = {key: value for key, value in report.items() if key not in ("difference", "bootstrap", "samples")}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "eval.json").write_text(json.dumps(old))
    assert eval_choices(tmp_path) == [
        (f"{tmp_path / 'old' / 'eval.json'} (arith, n=4, 8 queries)", str(tmp_path / "old" / "eval.json"))
    ]
    shown = _shown(interval_rows(old))
    assert len(shown) == 2 * 2 * len(old["k"])  # no model - base rows: the file has no difference
    for label, result in old["models"].items():
        for key, name in CURVE_NAMES.items():
            for i, k in enumerate(old["k"]):
                assert shown[(label, name, k)] == (round(100 * result[key][i], 1), "", "")
    assert "not in this eval.json" in difference_text(old) and "No intervals" in interval_note(old)
    assert "[" not in pass_at_1_text(old) and f"{100 * old['models']['base']['pass@k'][0]:.1f}%" in pass_at_1_text(old)


def test_unscorable_samples_and_short_queries_are_named(funcsynth_eval_json: Path) -> None:
    report = json.loads(funcsynth_eval_json.read_text())
    report["models"]["model"] |= {"unscorable": 3, "too_few_scorable": [[], [], ["q1", "q7"]]}
    text = scorable_text(report)
    assert "Unscorable samples (kept out of n): model 3." in text
    assert "k=4: queries with fewer than 4 scorable samples, left out of that k's mean: model 2." in text


def test_a_runs_pass_at_1_shows_the_interval_its_eval_json_holds(runs_root: Path, eval_json: Path) -> None:
    run = read_run(runs_root / "sweep" / "beta0.04")  # eval_json is this run's eval/eval.json
    report = json.loads(eval_json.read_text())
    model, base, difference = report["models"]["model"], report["models"]["base"], report["difference"]
    text = describe_run(run)
    line = next(line for line in text.splitlines() if "`rlvr eval` pass@1" in line)
    assert "`eval/eval.json`: 8 held-out arith queries, n=4" in line
    low, high = model["pass@k_ci"][0]
    assert f"model {100 * model['pass@k'][0]:.1f}% [{100 * low:.1f}, {100 * high:.1f}]" in line
    low, high = base["pass@k_ci"][0]
    assert f"base {100 * base['pass@k'][0]:.1f}% [{100 * low:.1f}, {100 * high:.1f}]" in line
    low, high = difference["pass@k_ci"][0]
    assert f"model - base {100 * difference['pass@k'][0]:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] points" in line
    assert run_eval_lines(runs_root / "nowhere") == []  # a run without an eval.json: nothing invented
