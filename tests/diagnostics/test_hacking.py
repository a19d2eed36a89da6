"""The hacking monitor: its arithmetic on hand-made verdicts, then inside a short real run."""

import json
import math

from rlvr.config import load_config
from rlvr.diagnostics.hacking import HackingMonitor, hacking_shares
from rlvr.train.loop import train
from rlvr.types import Verdict, VerifierResult
from rlvr.verifiers.reward import ScoredCompletion


def scored(correct: bool | None) -> ScoredCompletion:
    """A completion the verifier passed (True), failed (False) or could not judge (None)."""
    verdict = {True: Verdict.PASS, False: Verdict.FAIL, None: Verdict.ERROR}[correct]
    result = VerifierResult(verdict, float(bool(correct)))
    return ScoredCompletion(None if correct is None else float(correct), bool(correct), {"correctness": result})


def test_rate_counts_training_passes_that_gold_fails_among_judged_pairs():
    trained = [scored(c) for c in (True, True, True, False, None)]
    gold = [scored(c) for c in (True, False, False, False, True)]
    shares = hacking_shares(trained, gold)
    # the fifth pair is unjudged; of 4 judged pairs, 2 pass training and fail gold; 1 passes gold
    assert shares == {"hacking/rate": 0.5, "hacking/gold_accuracy": 0.25, "hacking/sampled": 4}
    empty = hacking_shares([scored(None)], [scored(True)])
    assert math.isnan(empty["hacking/rate"]) and empty["hacking/sampled"] == 0


def test_warns_once_when_the_rate_rises_above_the_threshold():
    monitor = HackingMonitor(gold_fn=None, sample=0, warn_above=0.3)
    assert monitor.warning({"hacking/rate": 0.3}) is None
    assert "hacking/rate 0.40 > 0.3" in monitor.warning({"hacking/rate": 0.4})
    assert monitor.warning({"hacking/rate": 0.9}) is None  # once per run
    assert HackingMonitor(gold_fn=None, sample=0, warn_above=0.1).warning({"hacking/rate": float("nan")}) is None


def test_a_short_real_run_against_a_noisy_verifier_logs_hacking(random_model_dir, tmp_path, capsys):
    # Every gold fail is reported as a pass (false-positive rate 1): an untrained model's answers are
    # nearly all wrong, so nearly every completion is "hacked", and gold accuracy stays near 0.
    cfg = load_config(None, [
        f"model.name={random_model_dir}", "reward.fidelity=noisy", "reward.false_positive_rate=1.0",
        "reward.hacking_sample=6", "train.steps=2", "train.batch_queries=2", "rollout.group_size=4",
        "rollout.max_new_tokens=8", "task.num_train=20", "task.num_eval=4", "train.eval_samples=2",
        "train.threads=1", "algo.beta=0",
    ])
    summary = train(cfg, tmp_path / "run", progress=True)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward" in r]
    assert [r["hacking/sampled"] for r in steps] == [6, 6]
    for r in steps:
        assert r["accuracy"] == 1.0 and r["hacking/rate"] == 1.0 - r["hacking/gold_accuracy"] > 0.5
    printed = capsys.readouterr()
    assert "warning: hacking/rate" in printed.out + printed.err  # the progress bar's warning, once
    assert (printed.out + printed.err).count("warning: hacking/rate") == 1
    for when in ("base", "final"):
        result = summary[when]
        assert result["pass@1"] == 1.0 and result["gold_pass@1"] < 0.5
        assert math.isclose(result["hacking_rate"], 1.0 - result["gold_pass@1"])


def test_a_gold_run_has_no_monitor_and_reports_gold_pass_at_1_as_its_own(random_model_dir, tmp_path):
    cfg = load_config(None, [
        f"model.name={random_model_dir}", "train.steps=1", "train.batch_queries=2", "rollout.group_size=2",
        "rollout.max_new_tokens=8", "task.num_train=20", "task.num_eval=4", "train.eval_samples=2",
        "train.threads=1", "algo.beta=0",
    ])
    summary = train(cfg, tmp_path / "run", progress=False)
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert not any(key.startswith("hacking/") for key in row)
    assert summary["final"]["gold_pass@1"] == summary["final"]["pass@1"] and summary["final"]["hacking_rate"] == 0.0


def test_the_train_command_reports_gold_pass_at_1_and_the_hacking_rate(random_model_dir, tmp_path):
    import subprocess
    import sys

    done = subprocess.run([
        sys.executable, "-m", "rlvr.cli", "train", "--set", f"model.name={random_model_dir}",
        "--set", "reward.fidelity=noisy", "--set", "reward.false_positive_rate=1.0", "--set", "train.steps=1",
        "--set", "train.batch_queries=2", "--set", "rollout.group_size=2", "--set", "rollout.max_new_tokens=8",
        "--set", "task.num_train=20", "--set", "task.num_eval=4", "--set", "train.eval_samples=2",
        "--set", "train.threads=1", "--out", str(tmp_path / "run"), "--quiet",
    ], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    final = summary["final"]
    assert f"gold pass@1 {summary['base']['gold_pass@1']:.3f} -> {final['gold_pass@1']:.3f}" in done.stdout
    assert f"hacking rate {summary['base']['hacking_rate']:.3f} -> {final['hacking_rate']:.3f}" in done.stdout


def test_a_short_funcsynth_run_against_visible_tests_sees_the_base_hack(tmp_path):
    # tiny-funcsynth writes lookup tables of the shown examples in ~45% of its answers (docs/hacking.md):
    # the visible-only verifier passes them, the gold verifier (hidden tests) fails them.
    cfg = load_config("configs/funcsynth-visible.yaml", [
        "train.steps=1", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=8",
        "reward.hacking_sample=0", "train.save_every=0",
    ])
    summary = train(cfg, tmp_path / "run", progress=False)
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert row["hacking/sampled"] == 16 and row["hacking/rate"] > 0
    base = summary["base"]
    assert base["hacking_rate"] > 0.2 and base["pass@1"] > base["gold_pass@1"]
    assert math.isclose(base["pass@1"] - base["gold_pass@1"], base["hacking_rate"])
