"""The run's health checks (engine/health.py): a run whose reward cannot teach says so early, with
the cause and the fix, on the console and in summary.json; a run that can learn says nothing."""

from __future__ import annotations

from rlvr.config import load_config
from rlvr.engine.health import HealthChecks, NoLearningSignal
from rlvr.engine.loop import train

SHORT = ["train.steps=5", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=4"]
SHORT += ["train.eval_samples=2", "train.threads=1", "train.save_every=0"]


def test_a_model_that_never_passes_is_told_why_and_what_to_change(tmp_path, capsys):
    # tiny-arith has never seen a function-synthesis query: no sample passes, every group is all 0
    summary = train(
        load_config(None, [*SHORT, "task.name=funcsynth", "task.num_train=64", "rollout.max_new_tokens=16"]), tmp_path
    )
    (warning,) = summary["warnings"]
    assert warning["check"] == "no_learning_signal" and warning["step"] == 5
    assert "every sample of every group got reward 0" in warning["message"]
    assert "rlvr build-base" in warning["message"]
    assert warning["message"] in capsys.readouterr().out


def test_a_reward_the_base_already_earns_everywhere_is_named(tmp_path):
    sets = [*SHORT, "reward.correctness_weight=0", "reward.format_weight=1"]
    (warning,) = train(load_config(None, sets), tmp_path, progress=False)["warnings"]
    assert "reward 1" in warning["message"] and "format-only" in warning["message"]


def test_a_run_that_can_learn_has_no_warning(tmp_path, capsys):
    summary = train(load_config(None, SHORT), tmp_path, progress=False)
    assert "warnings" not in summary and "warning" not in capsys.readouterr().out


def test_one_group_with_spread_in_the_window_means_a_signal():
    checks = HealthChecks([NoLearningSignal(window=3)])
    flat = {"frac_reward_zero_std": 1.0, "reward": 0.0}
    assert checks.observe(1, flat) == [] and checks.observe(2, {**flat, "frac_reward_zero_std": 0.75}) == []
    assert all(checks.observe(step, flat) == [] for step in range(3, 10)) and checks.warnings == []
    mixed = HealthChecks([NoLearningSignal(window=2)])
    lines = [mixed.observe(s, {"frac_reward_zero_std": 1.0, "reward": r}) for s, r in ((1, 0.25), (2, 0.5))]
    assert lines[0] == [] and "each group's samples all got the same reward" in lines[1][0]
