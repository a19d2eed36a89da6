"""`rlvr reproduce`: the studies' arms, their reports' arithmetic, and real small studies end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rlvr.config import EVAL_FIELDS, load_config
from rlvr.studies import runner
from rlvr.studies.atlas import AtlasRun, preset_path
from rlvr.studies.reproduce import STUDIES, ReproduceError, reproduce
from rlvr.studies.study_data import study_table
from rlvr.studies.study_evals import PASSK, passk_spec
from rlvr.studies.study_reports import (
    accuracy_line,
    expansion_verdict,
    format_line,
    length_report,
    lowers,
    raises,
)


@pytest.mark.parametrize("name", list(STUDIES))
def test_every_arm_of_every_study_is_a_valid_configuration(name: str) -> None:
    study = STUDIES[name]
    assert study.arms and study.claims and study.minutes > 0
    assert len(study.arms) >= 2 or study.passk_arms  # one arm only where the base is the comparison
    for arm in study.arms:
        load_config(preset_path(arm.config), list(arm.overrides))
    assert set(study.passk_arms) <= {arm.value for arm in study.arms}


def test_the_control_arms_change_only_the_reward_and_the_clip() -> None:
    """Shao et al.'s controls: every arm with several updates per batch (so the clip can act), the
    Bernoulli arms differing from gold only in the reward and from each other only in the clip."""
    arms = {arm.value: load_config(None, list(arm.overrides)) for arm in STUDIES["controls"].arms}
    assert all(cfg.algo.num_iterations >= 2 and cfg.optim.lr == 1e-4 for cfg in arms.values())
    gold, coin, no_clip, fmt = arms["gold"], arms["bernoulli"], arms["bernoulli no-clip"], arms["format only"]
    assert (coin.reward.fidelity, coin.reward.random_rate, coin.algo.epsilon) == ("random", 0.5, 0.2)
    assert no_clip.algo.epsilon >= 100 and no_clip.reward == coin.reward  # a ratio never leaves [1 - 100, 1 + 100]
    assert (fmt.reward.correctness_weight, fmt.reward.format_weight) == (0.0, 1.0)
    assert gold.reward.fidelity == "gold" and gold.algo == coin.algo
    assert STUDIES["controls"].passk_arms == tuple(arms)  # every arm ships per-query counts


def test_every_study_says_what_would_refute_it(cli) -> None:
    assert all(len(study.falsifier) > 40 and " if " in study.falsifier for study in STUDIES.values())
    listed = cli("reproduce", "--list").stdout
    assert listed.count("falsifiable: ") == len(STUDIES)


def _run(base: float, final: float, greedy: tuple[float, float]) -> dict:
    evals = {"step": [0, 100], "gold_pass@1": [base, final], "gold_greedy": list(greedy)}
    return {"card": {"evals": evals, "curves": {}}}


def test_an_accuracy_line_is_mean_and_spread_over_seeds() -> None:
    line = accuracy_line("gold", [_run(0.4, 0.8, (1.0, 0.9)), _run(0.4, 0.6, (1.0, 0.8))])
    # finals 0.8 and 0.6: mean 70.0%, sample sd 14.1; gains +40 and +20: 30.0 ± 14.1 points
    assert "pass@1 40.0 ± 0.0% -> 70.0 ± 14.1% (+30.0 ± 14.1 points)" in line
    assert "greedy 100.0 ± 0.0% -> 85.0 ± 7.1% (-15.0 ± 7.1 points)" in line and "[2 seeds]" in line


def test_a_change_counts_only_beyond_two_standard_errors() -> None:
    steady = [_run(0.4, 0.6, (1.0, 0.98)), _run(0.4, 0.62, (1.0, 1.0)), _run(0.4, 0.58, (1.0, 0.99))]
    assert raises(steady) and not lowers(steady)  # +20 points every seed; greedy -1 +- 0.6: noise
    noisy = [_run(0.4, 0.7, (1.0, 0.8)), _run(0.4, 0.2, (1.0, 0.8)), _run(0.4, 0.45, (1.0, 0.8))]
    assert not raises(noisy) and lowers(noisy)  # +30, -20, +5 points: no sign; greedy -20 every seed


def _formats(rates: list[float]) -> dict:
    return {"card": {"evals": {"step": []}, "curves": {"step": list(range(1, len(rates) + 1)), "format_rate": rates}}}


def test_the_format_reading_starts_at_the_base_s_own_samples() -> None:
    # a format reward teaches the format in a few steps: the first 10 steps' mean (about 0.9 here)
    # would hide where the base started (0.5); the reading starts at step 1
    learns = [_formats([0.5, 0.8, *[0.99] * 28]), _formats([0.48, 0.9, *[1.0] * 28])]
    line = format_line("format only", learns)
    assert line == "format only: completions in the format 49.0 ± 1.4% (step 1) -> 99.5 ± 0.7% (last 10 steps), rose"
    drifts = [_formats([0.5] * 15 + [0.6] * 15), _formats([0.5] * 15 + [0.4] * 15)]
    assert format_line("gold", drifts).endswith("did not move")  # +10 and -10 points: no sign


def _lengths(wrong: list[float]) -> dict:
    """A run card whose wrong answers are `wrong` tokens long at steps 1, 2, ...; right ones 5."""
    steps = list(range(1, len(wrong) + 1))
    curves = {
        "step": steps,
        "completions/wrong_mean_length": wrong,
        "completions/correct_mean_length": [5.0] * len(wrong),
    }
    return {"card": {"evals": {"step": []}, "curves": curves}}


@pytest.mark.parametrize(
    "steps, early, late, labels",
    [
        # 10 steps: windows of 5, steps 1-5 (mean 3) and 6-10 (mean 8); one 10-step window would be
        # both, and a growth of +0.00 by construction
        (10, 3.0, 8.0, ("(steps 1-5)", "(last 5 steps)")),
        (2, 1.0, 2.0, ("(step 1)", "(last step)")),  # the shortest study: step 1 against step 2
        (25, 5.5, 20.5, ("(steps 1-10)", "(last 10 steps)")),  # a full window each, as at 100 steps
    ],
)
def test_length_bias_compares_disjoint_windows(steps, early, late, labels) -> None:
    grows = [float(s) for s in range(1, steps + 1)]  # wrong answers one token longer each step
    flat = [1.0] * steps
    lines = length_report({"a": [_lengths(grows), _lengths([x + 1 for x in grows])], "b": [_lengths(flat)] * 2})
    assert (
        f"a: wrong answers {early + 0.5:.1f} ± 0.7 tokens {labels[0]} -> {late + 0.5:.1f} ± 0.7 tokens {labels[1]}"
        in lines[0]
    )
    # under a, each seed grew late - early tokens; under b, 0: the difference is that, with no spread
    assert lines[-1].startswith(
        f"reading: wrong answers grew {late - early:+.2f} ± 0.00 tokens more under a than under b"
    )


def _report(base: list[float], model: list[float]) -> dict:
    ks = [1, 16, 256]
    return {"k": ks, "models": {"base": {"pass@k": base}, "model": {"pass@k": model}}}


def test_expansion_needs_a_weak_base_a_gain_at_every_k_and_30_points_at_the_top() -> None:
    grows = [_report([0.01, 0.04, 0.08], [0.40, 0.45, 0.50]), _report([0.01, 0.04, 0.08], [0.30, 0.40, 0.44])]
    verdict = expansion_verdict(grows)
    assert verdict["expansion"] and verdict["seeds_above_everywhere"] == 2
    assert verdict["base_top"] == pytest.approx(0.08) and verdict["gain_top"].mean == pytest.approx(0.39)
    strong_base = [_report([0.05, 0.10, 0.11], [0.45, 0.50, 0.60])] * 2  # base pass@256 above 10%
    assert not expansion_verdict(strong_base)["expansion"]
    small_gain = [_report([0.01, 0.04, 0.08], [0.30, 0.33, 0.35])] * 2  # +27 points at k = 256
    assert not expansion_verdict(small_gain)["expansion"]
    at_the_bound = [_report([0.01, 0.05, 0.1], [0.3, 0.35, 0.4])] * 3  # a mean of 0.1s can be 0.1000000001
    assert expansion_verdict(at_the_bound)["expansion"]
    one_seed_crosses = [grows[0], _report([0.01, 0.04, 0.08], [0.005, 0.5, 0.6])]  # below the base at k = 1
    verdict = expansion_verdict(one_seed_crosses)
    assert verdict["seeds_above_everywhere"] == 1 and not verdict["expansion"]


def test_a_run_is_evaluated_on_its_own_held_out_task_against_its_own_base(tmp_path: Path, monkeypatch) -> None:
    arm = STUDIES["expansion"].arms[0]
    run_dir = tmp_path / "runs" / AtlasRun(arm, 0, 2).dir_name
    run_dir.mkdir(parents=True)
    cfg = load_config(preset_path("configs/expansion.yaml"))
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    spec = passk_spec(tmp_path, AtlasRun(arm, 0, 2), 7)
    assert (spec.n, spec.ks, spec.num_queries, spec.out) == (256, PASSK, 7, str(run_dir / "eval"))
    assert spec.log_path() == tmp_path / "runs" / f"{run_dir.name}.eval.log"
    held_out = runner.held_out_config(run_dir)  # every field eval takes, from the run, and only those
    for name in EVAL_FIELDS:
        section, key = name.split(".")
        assert getattr(getattr(held_out, section), key) == getattr(getattr(cfg, section), key)
    asked = {}
    monkeypatch.setattr(runner, "evaluate_passk", lambda model, **kwargs: asked.update(model=model, **kwargs))
    runner.evaluate(spec)
    assert asked["model"] == str(run_dir / "final") and asked["base"] == "tiny-arith-deep"
    assert (asked["task"].operands, asked["task"].max_value, asked["max_new_tokens"]) == (5, 999, 80)
    assert asked["prompt_format"].style == cfg.task.prompt_format and asked["ks"] == list(PASSK)


def test_bad_requests_are_refused_before_any_run(tmp_path: Path, cli) -> None:
    done = cli("reproduce", "nope", "--out", str(tmp_path))
    assert done.returncode == 2 and "unknown study 'nope'" in done.stderr
    assert cli("reproduce").returncode == 2
    done = cli("reproduce", "controls", "--steps", "1", "--out", str(tmp_path))
    assert done.returncode == 2 and "at least 2 steps" in done.stderr
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ReproduceError, match="at least one seed"):
        reproduce("controls", tmp_path, seeds=())


def test_list_names_every_study_with_its_time(cli) -> None:
    done = cli("reproduce", "--list")
    assert done.returncode == 0
    for study in STUDIES.values():
        assert study.name in done.stdout and f"about {study.minutes} min" in done.stdout


@pytest.mark.slow
def test_a_pass_at_k_study_end_to_end(tmp_path: Path) -> None:
    card = reproduce("sharpening", tmp_path, seeds=(0,), steps=2, jobs=2, progress=False, eval_queries=2)
    saved = json.loads((tmp_path / "reproduce.json").read_text())
    assert saved["measured"] == card["measured"] and saved["made"]["machine"] and saved["made"]["rlvr"]
    assert (tmp_path / "reproduce.png").stat().st_size > 10_000
    arms = {arm.value for arm in STUDIES["sharpening"].arms}
    assert set(card["arms"]) == arms
    (default,) = card["arms"]["default"]
    evaluation = json.loads((tmp_path / default["dir"] / "eval" / "eval.json").read_text())
    assert evaluation["k"] == list(PASSK) and evaluation["num_queries"] == 2
    assert default["eval"]["models"]["base"]["pass@k"] == evaluation["models"]["base"]["pass@k"]
    assert all(r["eval"] for arm in arms for r in card["arms"][arm])  # a pass@k curve for every arm
    # free sharpening: the base alone at each lower temperature, drawn with the seed's own draws
    data = json.loads((tmp_path / "sharpening.json").read_text())
    (seed,) = data["arms"]["default"]["seeds"]
    assert set(seed["base_at_temperature"]) == {"0.3", "0.6"}
    cooled = json.loads((tmp_path / default["dir"] / "eval-T0.3" / "eval.json").read_text())
    assert cooled["temperature"] == 0.3 and set(cooled["models"]) == {"model"} and cooled["seed"] == 0
    assert cooled["models"]["model"]["path"] == "tiny-arith"
    assert seed["base_at_temperature"]["0.3"]["pass@k"] == cooled["models"]["model"]["pass@k"]
    assert seed["per_query"]["trained"] == [row[:2] for row in evaluation["models"]["model"]["per_query"]]
    assert any(line.startswith("base at T = 0.3 (no training): pass@1") for line in card["measured"])
    summary = json.loads((tmp_path / default["dir"] / "summary.json").read_text())
    line = next(line for line in card["measured"] if line.startswith("default:"))
    assert f"-> {100 * summary['final']['gold_pass@1']:.1f}%" in line  # one seed: no spread
    passk = next(line for line in card["measured"] if line.startswith("default pass@k"))
    base, model = evaluation["models"]["base"]["pass@k"][-1], evaluation["models"]["model"]["pass@k"][-1]
    assert f"k=256 {100 * base:.1f}->{100 * model:.1f}" in passk


@pytest.mark.slow
def test_the_expansion_study_evaluates_rl_and_its_controls_against_one_base_per_seed(tmp_path: Path) -> None:
    card = reproduce("expansion", tmp_path, seeds=(0,), steps=2, progress=False, eval_queries=3, support_k=300)
    assert list(card["arms"]) == ["answer-only", "sft", "rft"]
    base = tmp_path / "base" / "seed0" / "eval" / "eval.json"  # the base, once for the seed
    alone = json.loads(base.read_text())["models"]["model"]
    for arm, (run,) in card["arms"].items():
        evaluation = json.loads((tmp_path / run["dir"] / "eval" / "eval.json").read_text())
        assert evaluation["spec"]["operands"] == 5 and evaluation["spec"]["max_value"] == 999
        assert evaluation["max_new_tokens"] == 80 and evaluation["base_report"] == str(base)
        assert evaluation["models"]["base"] == alone  # reused, never sampled again
        drawn_on = arm in STUDIES["expansion"].support_arms  # rft's curves stop at n = 256
        assert evaluation["support_k"] == (300 if drawn_on else None)
        assert ("support" in evaluation["models"]["model"]) == drawn_on
    data = json.loads((tmp_path / "expansion.json").read_text())
    (rft,) = data["arms"]["rft"]["seeds"]
    assert rft["supervised"]["kept"] > 0 and data["arms"]["rft"]["reward"].startswith("none: ")
    assert data["arms"]["answer-only"]["reward"] == "gold correctness"  # the answer alone, never the steps
    for arm, entry in data["arms"].items():
        (seed,) = entry["seeds"]
        assert len(seed["per_query"]["trained_cot"]) == 3
        assert seed.get("support", {}).get("k") == (300 if arm in ("answer-only", "sft") else None)
    supports = [line for line in card["measured"] if ", support by " in line]
    assert len(supports) == 4 and all("at k=300 (3 queries x 1 seeds)" in line for line in supports)
    assert [line.split(":")[0] for line in card["measured"] if " against " in line] == [
        "answer-only against sft", "answer-only against rft"]  # fmt: skip
    assert "Support at k = 300" in study_table(data)
    curves = json.loads((tmp_path / "passk.json").read_text())  # what the lab draws
    assert curves["study"] == "expansion" and set(curves["arms"]) == set(card["arms"])


@pytest.mark.slow
def test_a_study_from_the_command_line_prints_claims_beside_measurements(tmp_path: Path, cli) -> None:
    study = ("reproduce", "length-bias", "--seeds", "0", "--steps", "2", "--eval-queries", "2", "--out", str(tmp_path))
    done = cli(*study, "--quiet")
    assert done.returncode == 0, done.stderr
    assert "claimed, Liu et al. 2025, Dr. GRPO" in done.stdout
    measured = [line for line in done.stdout.splitlines() if "measured here" in line]
    assert len(measured) == 2 and all("wrong answers" in line for line in measured)
    card = json.loads((tmp_path / "reproduce.json").read_text())
    assert [c["source"] for c in card["claims"]] == [c.source for c in STUDIES["length-bias"].claims]
    data = json.loads((tmp_path / "length-bias.json").read_text())
    for arm in data["arms"].values():  # --eval-queries: 2 held-out queries per evaluation; lengths per step
        (seed,) = arm["seeds"]
        assert len(seed["per_query"]["trained"]) == 2 and len(seed["curves"]["completions/wrong_mean_length"]) == 2
    # a second call keeps the finished runs: nothing is trained again
    logs = {p: p.stat().st_mtime for p in (tmp_path / "runs").glob("*.log")}
    again = cli(*study, "--quiet")
    assert again.returncode == 0 and {p: p.stat().st_mtime for p in logs} == logs
