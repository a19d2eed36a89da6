"""The lab's first page: the shipped atlas read back, runs placed on knobs, rows and readings made
from the numbers (your runs as an overlay: test_yours.py)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml

from rlvr.algos import ALGORITHMS
from rlvr.config import load_config
from rlvr.lab.effects import (
    LABELS,
    SHIPPED,
    AtlasFileError,
    Value,
    _exploitation,
    load_atlas,
    readings,
    row,
    shipped_values,
    sort_values,
)
from rlvr.lab.effects_page import page_data
from rlvr.lab.yours import Placer
from rlvr.studies.atlas import KNOBS, SCHEMA, preset_path, run_card

REPO = Path(__file__).resolve().parents[2]


def _config(preset: str | None = None, *overrides: str) -> dict:
    """A configuration as a run's config.yaml holds it."""
    cfg = load_config(preset_path(preset), list(overrides))
    return yaml.safe_load(yaml.safe_dump(cfg.to_dict(), sort_keys=False))


@pytest.fixture(scope="module")
def shipped() -> dict:
    return load_atlas()


# ---------------------------------------------------------------------------------------------
# The shipped atlas


def test_the_shipped_atlas_is_labelled_and_covers_every_knob_with_three_seeds(shipped: dict) -> None:
    assert shipped["schema"] == SCHEMA
    made = shipped["made"]
    assert made["date"] and made["machine"] and made["rlvr"] and made["commit"]
    assert shipped["command"].startswith("rlvr atlas")
    assert set(shipped["knobs"]) == set(KNOBS)
    for knob, settings in KNOBS.items():
        assert [v["value"] for v in shipped["knobs"][knob]] == [s.value for s in settings]
        for value in shipped["knobs"][knob]:
            assert len(value["runs"]) >= 3
            for run in value["runs"]:
                card = shipped["runs"][run]
                assert card["finished"] and card["steps"] == shipped["steps"]
                assert card["curves"]["step"] == list(range(1, shipped["steps"] + 1))
                assert card["evals"]["step"][0] == 0 and card["evals"]["step"][-1] == shipped["steps"]
    assert SHIPPED.stat().st_size < 1_000_000  # only the small results: no weights, no full logs


def test_the_shipped_atlas_holds_kl_exactly_where_a_reference_was_held(shipped: dict) -> None:
    seen = set()
    for values in shipped["knobs"].values():
        for value in values:
            algo = value["resolved"]["algo"]
            algorithm = ALGORITHMS[algo["algorithm"]]
            held = algorithm.holds_reference(algo["beta"])
            logs_kl = algorithm.update != "preference"  # DPO logs its own keys (docs/metrics.md)
            for run in value["runs"]:
                assert ("kl" in shipped["runs"][run]["curves"]) == (held and logs_kl), run
            seen.add(held)
    assert seen == {True, False}  # β = 0 and DAPO hold none; the default holds one


# ---------------------------------------------------------------------------------------------
# Run cards


def test_a_run_card_keeps_the_logged_numbers(runs_root: Path) -> None:
    run_dir = runs_root / "sweep" / "beta0.04"
    card = run_card(run_dir)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward" in r]
    assert card["curves"]["step"] == [r["step"] for r in steps]
    for key in ("reward", "kl", "entropy"):
        assert card["curves"][key] == pytest.approx([r[key] for r in steps], rel=1e-3)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert card["evals"]["step"] == [0, summary["steps"]]
    assert card["evals"]["pass@1"] == pytest.approx([summary["base"]["pass@1"], summary["final"]["pass@1"]], rel=1e-3)
    assert card["memory"]["peak_total"] == max(r["memory/peak_total"] for r in steps)
    assert card["wall_s"] == pytest.approx(summary["wall_s"], rel=1e-3) and card["finished"]


def test_a_run_card_has_no_kl_curve_when_beta_is_zero(runs_root: Path) -> None:
    assert "kl" not in run_card(runs_root / "sweep" / "beta0.0")["curves"]
    assert "kl" in run_card(runs_root / "sweep" / "beta0.04")["curves"]


def test_a_folder_without_metrics_has_no_card(tmp_path: Path) -> None:
    assert run_card(tmp_path) is None


# ---------------------------------------------------------------------------------------------
# Placing runs on knobs


@pytest.fixture(scope="module")
def placer() -> Placer:
    return Placer()


def test_the_default_configuration_is_the_default_value_of_every_knob(placer: Placer) -> None:
    # seed, length and evaluation size do not make another setting
    config = _config(None, "train.seed=7", "train.steps=100", "task.num_eval=200", "train.threads=2")
    places = placer.place(config)
    assert sorted(places) == sorted(
        [("fidelity", "gold"), ("algorithm", "grpo"), ("group_size", "8"), ("beta", "0.04"), ("lr", "1e-4"),
         ("max_staleness", "0")]  # its 0 is the default timed alone at 2 threads; threads make no setting
    )  # fmt: skip


@pytest.mark.parametrize(
    ("preset", "overrides", "expected"),
    [
        (None, ("algo.beta=0.4",), [("beta", "0.4")]),
        (None, ("rollout.group_size=2",), [("group_size", "2")]),
        (None, ("optim.lr=2e-3",), [("lr", "2e-3")]),
        ("configs/dapo.yaml", (), [("algorithm", "dapo")]),
        ("configs/ppo.yaml", (), [("algorithm", "ppo")]),
        ("configs/funcsynth-visible.yaml", (), [("fidelity", "visible_only (funcsynth)")]),
        (None, ("reward.fidelity=noisy", "reward.false_positive_rate=0.3"), [("fidelity", "noisy 30%")]),
        (None, ("reward.fidelity=random",), [("fidelity", "random reward")]),
        (None, ("rollout.max_staleness=2",), [("max_staleness", "2")]),
    ],
)
def test_a_run_of_an_atlas_setting_joins_it(placer: Placer, preset, overrides, expected) -> None:
    assert placer.place(_config(preset, *overrides, "train.seed=3")) == expected


def test_a_run_made_before_a_config_field_existed_is_placed_as_if_it_had_the_default(placer: Placer) -> None:
    config = _config(None, "algo.beta=0.4")
    del config["task"]["min_operand"], config["task"]["train_mix"]  # fields added after the run was made
    assert placer.place(config) == [("beta", "0.4")]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (("algo.beta=0.2",), ("beta", "0.2")),
        (("rollout.group_size=6",), ("group_size", "6")),
        (("optim.lr=1e-3",), ("lr", "0.001")),
        (("rollout.max_staleness=3",), ("max_staleness", "3")),
        (("reward.fidelity=random", "reward.random_rate=0.2"), ("fidelity", "random rate=0.2")),
        (("reward.fidelity=noisy", "reward.false_positive_rate=0.2"), ("fidelity", "noisy fp=0.2 fn=0")),
        (("algo.algorithm=rloo", "algo.epsilon=0.3"), ("algorithm", "rloo (algo.epsilon=0.3)")),
    ],
)
def test_a_run_that_changes_one_knob_is_a_new_value_of_it(placer: Placer, overrides, expected) -> None:
    assert placer.place(_config(None, *overrides)) == [expected]


@pytest.mark.parametrize(
    "overrides",
    [
        ("algo.beta=0.2", "rollout.group_size=4"),  # two knobs at once: an interaction, not one knob's effect
        ("train.batch_queries=4",),  # a field no knob owns
        ("algo.epsilon=0.3",),  # the default algorithm with another setting is not an algorithm
    ],
)
def test_a_run_that_is_not_one_knob_away_is_left_off_the_page(placer: Placer, overrides) -> None:
    assert placer.place(_config(None, *overrides)) == []


# ---------------------------------------------------------------------------------------------
# Rows, readings and the page's data


def test_rows_are_spreads_of_the_cards_numbers(shipped: dict) -> None:
    for knob, values in shipped_values(shipped).items():
        for value in values:
            r = row(value)
            finals = [c["evals"]["gold_pass@1"][-1] for c in value.cards]
            gains = [c["evals"]["gold_pass@1"][-1] - c["evals"]["gold_pass@1"][0] for c in value.cards]
            assert r["pass@1 final"]["mean"] == pytest.approx(statistics.fmean(finals)), (knob, value.label)
            assert r["pass@1 final"]["sd"] == pytest.approx(statistics.stdev(finals))
            assert r["pass@1 gain"]["mean"] == pytest.approx(statistics.fmean(gains))
            assert r["wall s"]["mean"] == pytest.approx(statistics.fmean(c["wall_s"] for c in value.cards))
            early = [[x for step, x in zip(c["curves"]["step"], c["curves"].get("grad/noise_scale", [])) if step <= 5
                      and x is not None] for c in value.cards]  # fmt: skip
            noise = [statistics.median(xs) for xs in early if xs]  # steps 1-5 of every run: matched steps
            if noise:
                assert r["noise scale"]["mean"] == pytest.approx(statistics.fmean(noise))
            assert r["runs"] == len(value.cards) >= 3


def test_readings_quote_the_rows(shipped: dict) -> None:
    values = shipped_values(shipped)["beta"]
    rows = [row(v) for v in values]
    lines = readings("beta", values, rows)
    gain = next(line for line in lines if "pass@1 gain" in line)
    first, last = rows[0]["pass@1 gain"]["mean"], rows[-1]["pass@1 gain"]["mean"]
    assert gain.startswith("β 0.0 → 0.4:") and f"{100 * first:+.1f}" in gain and f"{100 * last:+.1f}" in gain
    assert ("rises" in gain) == (last > first * 1.05) or "level" in gain
    kl = next(line for line in lines if "KL" in line)
    # β = 0 holds no reference: its KL is not measured (not 0), and the reading says so
    assert kl.startswith("β 0.01 → 0.4:") and kl.endswith("(not measured at β 0.0)")
    algorithms = shipped_values(shipped)["algorithm"]
    lines = readings("algorithm", algorithms, [row(v) for v in algorithms])
    best = max(algorithms, key=lambda v: row(v)["pass@1 gain"]["mean"])
    assert f"highest with {best.label} " in lines[0]


def test_a_knob_with_one_value_says_there_is_nothing_to_compare(shipped: dict) -> None:
    (gold,) = shipped_values(shipped)["fidelity"][:1]
    assert "nothing to compare" in readings("fidelity", [gold], [row(gold)])[0]


def test_the_page_data_of_the_shipped_atlas_alone(shipped: dict, tmp_path: Path) -> None:
    data = page_data(tmp_path)  # an empty folder: no run of yours
    assert data["your_runs"] == [] and data["default_model"] == "Qwen2.5-7B"
    for knob, view in data["knobs"].items():
        assert view["yours"] == {"values": [], "readings": []} and view["label"] == LABELS[knob]
        assert [v["value"] for v in view["shipped"]["values"]] == [v["value"] for v in shipped["knobs"][knob]]
        assert all(v["source"] == "shipped" for v in view["shipped"]["values"])
        assert len(view["shipped"]["readings"]) >= 4
    estimates = {v["value"]: v["estimate"]["Qwen2.5-7B"] for v in data["knobs"]["beta"]["shipped"]["values"]}
    assert "reference_weights" not in estimates["0.0"] and estimates["0.04"]["reference_weights"] > 0
    algos = {v["value"]: v["estimate"]["Qwen2.5-7B"] for v in data["knobs"]["algorithm"]["shipped"]["values"]}
    assert algos["ppo"]["critic_weights"] > 0 and "critic_weights" not in algos["grpo"]
    json.dumps(data, allow_nan=False)  # what the page embeds: no NaN


def test_a_broken_atlas_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "atlas.json"
    bad.write_text("{}")
    with pytest.raises(AtlasFileError, match="not an atlas file"):
        load_atlas(bad)
    with pytest.raises(AtlasFileError, match="cannot read"):
        load_atlas(tmp_path / "missing.json")


def test_readings_compare_like_with_like(shipped: dict) -> None:
    """No variance ranking across algorithms (losses scaled differently); the G knob's noise scale
    also in prompts, the controlled sweep's unit; a weakened verifier's false passes of the base's
    wrong answers (its own error) kept apart from a rise during training (exploitation)."""
    values = shipped_values(shipped)
    algorithms = readings("algorithm", values["algorithm"], [row(v) for v in values["algorithm"]])
    assert not any(line.startswith("gradient variance (") for line in algorithms)
    assert any("not ranked across algorithms" in line for line in algorithms)
    groups = sort_values("group_size", values["group_size"])
    rows = [row(v) for v in groups]
    per_prompt = next(line for line in readings("group_size", groups, rows) if "in prompts" in line)
    measured = [(v, r) for v, r in zip(groups, rows) if r["noise scale"]["mean"] is not None]
    (low, a), (high, b) = measured[0], measured[-1]
    assert (
        f"{a['noise scale']['mean'] / int(low.label):.3g} → {b['noise scale']['mean'] / int(high.label):.3g}"
        in per_prompt
    )
    fidelity = sort_values("fidelity", values["fidelity"])
    lines = readings("fidelity", fidelity, [row(v) for v in fidelity])
    for value in fidelity:
        cards = value.cards
        own = [c["evals"]["hacking_rate"][0] / (1 - c["evals"]["gold_pass@1"][0]) for c in cards
               if c["evals"].get("hacking_rate") and c["evals"]["hacking_rate"][0]]  # fmt: skip
        line = next((line for line in lines if line.startswith(f"{value.label}: the training verifier passes")), None)
        assert (line is None) == (not own), value.label  # gold judges itself: nothing to separate
        if own:
            assert f"passes {100 * statistics.fmean(own):.1f}% of the base's wrong" in line


def test_a_verifier_that_only_errs_is_not_called_exploited() -> None:
    def card(seed: int, hacking: tuple[float, float], gold: tuple[float, float]) -> dict:
        evals = {"step": [0, 60], "gold_pass@1": list(gold), "hacking_rate": list(hacking), "gold_greedy": [1, 1]}
        return {"seed": seed, "steps": 60, "finished": True, "evals": evals, "curves": {"step": []}, "memory": {}}

    # 30% false passes of wrong answers before and after; wrong answers shrink from 50% to 10%
    steady = Value("fidelity", "noisy 30%", "shipped", [card(s, (0.15, 0.03), (0.5, 0.9)) for s in range(3)])
    # wrong answers it passes climb from 20% to 90-94%: the policy found what it lets through
    gamed = Value(
        "fidelity", "visible_only", "shipped", [card(s, (0.1, 0.45 + 0.01 * s), (0.5, 0.5)) for s in range(3)]
    )
    lines = _exploitation([steady, gamed], [row(steady), row(gamed)])
    assert lines[0].startswith("noisy 30%: the training verifier passes 30.0% of the base's wrong held-out answers")
    assert "no rise beyond two standard errors" in lines[0]
    assert (
        "92.0% of the trained model's (+72.0 ± 2.0 points)" in lines[1]
        and "a rise beyond two standard errors" in lines[1]
    )
