"""Real online DPO steps of the Trainer on the shipped base model (no mocks)."""

import math

import pytest
import torch

from rlvr.algos import preference_pairs
from rlvr.config import ConfigError, load_config
from rlvr.engine.dpo import accumulate_dpo_gradient, reference_sequence_logprobs, verdict_tensor
from rlvr.engine.loop import Trainer
from rlvr.rollout.hf import sample_completions

SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=8", "algo.algorithm=dpo"]


def _trainer(base_model_dir, tmp_path, *overrides):
    cfg = load_config(None, [f"model.name={base_model_dir}", *SMALL, *overrides])
    return Trainer(cfg, tmp_path)


def test_dpo_steps_have_finite_loss_and_move_the_policy_not_the_reference(base_model_dir, tmp_path):
    trainer = _trainer(base_model_dir, tmp_path, "algo.beta=0", "optim.lr=1e-3")
    assert trainer.reference is not None  # DPO holds its reference even with the KL weight at 0
    policy_before = [p.detach().clone() for p in trainer.policy.parameters()]
    ref_before = [p.detach().clone() for p in trainer.reference.parameters()]
    first = trainer.step(0)
    assert first["dpo/pairs"] > 0, "the base model passes about half the time: some group must pair"
    # π_θ = π_ref before the first update: every margin is 0 and the loss is log 2
    assert math.isclose(first["loss"], math.log(2), rel_tol=1e-5)
    assert abs(first["rewards/margins"]) < 1e-5 and first["grad_norm"] > 0
    later = [trainer.step(s) for s in range(1, 4)]
    assert all(math.isfinite(m["loss"]) for m in later if m["dpo/pairs"])
    assert any(abs(m["rewards/margins"]) > 1e-4 for m in later if m["dpo/pairs"])  # the policy left π_ref
    assert any(not torch.equal(a, b) for a, b in zip(policy_before, trainer.policy.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(ref_before, trainer.reference.parameters()))
    groups = trainer.cfg.train.batch_queries
    for m in [first, *later]:
        assert m["dpo/groups_no_pass"] + m["dpo/groups_no_fail"] <= groups
        assert m["dpo/pairs"] <= groups * trainer.cfg.rollout.group_size // 2
        assert m["explore/distinct_correct"] >= m["explore/queries_solved"]


def test_micro_batched_pairs_give_the_full_batch_gradient(base_model_dir, tmp_path):
    trainer = _trainer(base_model_dir, tmp_path)
    torch.manual_seed(3)
    batch = sample_completions(
        trainer.policy, trainer.tokenizer, trainer.train_queries[:6], group_size=4, max_new_tokens=40
    )
    scored = trainer.reward_fn.score_batch([(batch.query_of(i), t) for i, t in enumerate(batch.texts)])
    chosen, rejected, stats = preference_pairs(verdict_tensor(scored, 6, 4))
    assert stats["pairs"] >= 3, "need a few pairs to split"
    # move the policy off the reference so the margins (and the gradient's weights) are not all equal
    with torch.no_grad():
        for p in trainer.policy.parameters():
            p.add_(0.01 * torch.randn_like(p))
    ref = reference_sequence_logprobs(
        trainer.context.reference, batch, torch.cat([chosen, rejected]), temperature=1.0, micro_batch_size=0
    )
    grads, losses = [], []
    for micro in (0, 2):  # all pairs at once; one pair per micro-batch
        trainer.policy.zero_grad(set_to_none=True)
        update = accumulate_dpo_gradient(
            trainer.policy,
            batch,
            chosen,
            rejected,
            ref[: len(chosen)],
            ref[len(chosen) :],
            trainer.cfg.algo,
            temperature=1.0,
            micro_batch_size=micro,
        )
        grads.append([p.grad.clone() for p in trainer.policy.parameters()])
        losses.append(update.loss)
    assert math.isclose(losses[0], losses[1], rel_tol=1e-5)
    for full, split in zip(*grads):
        assert torch.allclose(full, split, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize(
    "override, message",
    [
        ("algo.dpo_beta=0", "algo.dpo_beta must be > 0"),
        ("algo.dpo_pairs_per_group=-1", "algo.dpo_pairs_per_group must be >= 0"),
    ],
)
def test_dpo_fields_are_validated(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, ["algo.algorithm=dpo", override])
