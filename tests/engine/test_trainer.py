"""One real GRPO step of the Trainer on the shipped base model (no mocks)."""

import torch

from rlvr.config import load_config
from rlvr.engine.loop import Trainer

SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=8"]


def _trainer(base_model_dir, tmp_path, *overrides):
    cfg = load_config(None, [f"model.name={base_model_dir}", *SMALL, *overrides])
    return Trainer(cfg, tmp_path)


def test_no_reference_model_is_held_when_beta_is_zero(base_model_dir, tmp_path):
    trainer = _trainer(base_model_dir, tmp_path, "algo.beta=0")
    assert trainer.reference is None
    metrics = trainer.step(0)
    assert "time/reference" not in metrics and metrics["kl"] == 0.0


def test_reference_is_frozen_and_kl_starts_at_zero(base_model_dir, tmp_path):
    trainer = _trainer(base_model_dir, tmp_path, "algo.beta=0.04", "optim.lr=1e-3")
    assert all(not p.requires_grad for p in trainer.reference.parameters())
    ref_before = [p.clone() for p in trainer.reference.parameters()]
    first = trainer.step(0)
    assert abs(first["kl"]) < 1e-5  # π_θ = π_ref before the first update
    second = trainer.step(1)
    assert second["kl"] > 0  # the policy moved, the reference did not
    assert all(torch.equal(a, b) for a, b in zip(ref_before, trainer.reference.parameters()))


def test_later_passes_over_one_batch_have_ratios_off_one(base_model_dir, tmp_path):
    one = _trainer(base_model_dir, tmp_path / "a", "algo.num_iterations=1", "optim.lr=1e-3").step(0)
    assert abs(one["ratio_mean"] - 1.0) < 1e-4
    three = _trainer(base_model_dir, tmp_path / "b", "algo.num_iterations=3", "optim.lr=1e-3").step(0)
    # the logged stats are the last pass's: two AdamW steps have moved π_θ away from π_old
    assert abs(three["ratio_mean"] - 1.0) > 1e-4


def test_each_algorithm_runs_a_real_step(base_model_dir, tmp_path):
    from rlvr.algos import ALGORITHMS

    for name in [n for n, a in ALGORITHMS.items() if a.update != "preference"]:  # DPO: test_dpo_step.py
        metrics = _trainer(base_model_dir, tmp_path / name, f"algo.algorithm={name}").step(0)
        assert metrics["grad_norm"] > 0 or metrics["frac_reward_zero_std"] == 1.0, name
        assert abs(metrics["ratio_mean"] - 1.0) < 1e-4, name


def test_kl_as_a_reward_penalty_with_an_entropy_bonus_runs_real_steps(base_model_dir, tmp_path):
    import math

    trainer = _trainer(
        base_model_dir,
        tmp_path,
        "algo.kl_placement=reward",
        "algo.beta=0.04",
        "algo.entropy_coef=0.01",
        "optim.lr=1e-3",
    )
    first, second = trainer.step(0), trainer.step(1)
    assert abs(first["kl"]) < 1e-5 and second["kl"] > 0  # KL is still measured and logged
    assert math.isfinite(second["loss"]) and second["entropy"] > 0
