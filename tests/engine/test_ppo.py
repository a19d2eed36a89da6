"""PPO with a learned critic on the real tiny model: the value model, and a short real run."""

import math

import torch

from rlvr.config import load_config
from rlvr.engine.critic import ValueModel, explained_variance
from rlvr.engine.loop import Trainer
from rlvr.engine.update import micro_batches
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries

SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=8"]


def test_value_model_reads_the_state_before_each_token_and_starts_at_zero(base_policy):
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=2, max_new_tokens=40)
    critic = ValueModel(model)
    (mb,) = micro_batches(batch, 0)
    assert torch.equal(critic(mb), torch.zeros_like(mb.completion_mask, dtype=torch.float32))  # zero head
    torch.nn.init.normal_(critic.head.weight)
    values = critic(mb)  # [n, t]
    assert values.shape == mb.completion_mask.shape and (values[mb.completion_mask == 0] == 0).all()
    # V(s_0) sees only the prompt: two samples of one query share their prompt, hence their first value
    assert torch.allclose(values[0, 0], values[1, 0])
    # a copy, not a view: the policy's backbone is untouched by the critic
    assert critic.backbone is not model.base_model
    assert all(
        a.data_ptr() != b.data_ptr() for a, b in zip(critic.backbone.parameters(), model.base_model.parameters())
    )


def test_explained_variance_by_hand():
    # R = [0, 2], V = [0, 2] → 1 (perfect); V = [1, 1] (the mean) → 1 − Var([−1, 1]) / Var([0, 2]) = 0
    returns, mask = torch.tensor([[0.0, 2.0]]), torch.ones(1, 2)
    assert explained_variance(returns.clone(), returns, mask) == 1.0
    assert explained_variance(torch.tensor([[1.0, 1.0]]), returns, mask) == 0.0


def test_a_short_real_ppo_run_changes_policy_and_critic(base_model_dir, tmp_path):
    cfg = load_config("configs/ppo.yaml", [f"model.name={base_model_dir}", *SMALL, "optim.lr=1e-3"])
    trainer = Trainer(cfg, tmp_path)
    assert trainer.critic is not None and trainer.reference is not None  # β = 0.04: KL in the reward
    policy_before = [p.detach().clone() for p in trainer.policy.parameters()]
    critic_before = [p.detach().clone() for p in trainer.critic.model.parameters()]
    for step in range(3):
        metrics = trainer.step(step)
        for key in ("loss", "critic/value_loss", "grad_norm", "critic/grad_norm", "kl", "entropy"):
            assert math.isfinite(metrics[key]), key
    assert metrics["kl"] > 0  # the policy left the reference
    assert any(not torch.equal(a, b) for a, b in zip(policy_before, trainer.policy.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, trainer.critic.model.parameters()))
    head = trainer.critic.model.head
    assert head.weight.abs().sum() > 0  # the zero-initialised head learned something


def test_critic_fits_the_returns_of_a_fixed_batch(base_model_dir, tmp_path):
    # Repeated value updates on one batch (fixed returns) must lower the value loss: the critic
    # and its own optimizer really learn.
    from rlvr.algos import gae, token_rewards
    from rlvr.engine.context import Timer, batch_queries
    from rlvr.engine.rollouts import collect_rollouts

    cfg = load_config("configs/ppo.yaml", [f"model.name={base_model_dir}", *SMALL, "algo.beta=0", "ppo.value_clip=0"])
    trainer = Trainer(cfg, tmp_path)
    rollouts = collect_rollouts(trainer.context, 0, batch_queries(trainer.train_queries, 0, 4, 0), Timer())
    batch, mask = rollouts.batch, rollouts.batch.completion_mask
    values = trainer.critic.values(batch, 0)
    _, returns = gae(token_rewards(rollouts.rewards.flatten(), mask), values, mask, gamma=1.0, lam=1.0)
    losses = [
        trainer.critic.update(batch, values, returns, mask, micro_batch_size=0, max_grad_norm=1.0)["critic/value_loss"]
        for _ in range(15)
    ]
    assert losses[-1] < 0.5 * losses[0]


def test_micro_batched_critic_update_equals_the_full_batch_one(base_policy):
    import copy

    from rlvr.config import PPOConfig
    from rlvr.engine.critic import Critic

    model, tok = base_policy
    model = model.double()
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    critic = Critic(model, PPOConfig(value_clip=0.1))
    torch.nn.init.normal_(critic.model.head.weight, std=0.1)
    old_values = critic.values(batch, 0).double()  # [N, T]
    returns = torch.randn(old_values.shape, dtype=torch.float64) * batch.completion_mask  # [N, T]
    critics = [copy.deepcopy(critic) for _ in range(2)]
    for c, micro_batch_size in zip(critics, (0, 3)):
        c.optimizer = torch.optim.SGD(c.model.parameters(), lr=0.1)
        c.update(
            batch, old_values, returns, batch.completion_mask, micro_batch_size=micro_batch_size, max_grad_norm=0.0
        )
    for a, b in zip(critics[0].model.parameters(), critics[1].model.parameters()):
        assert torch.allclose(a, b, atol=1e-12)
    assert any(not torch.equal(a, b) for a, b in zip(critic.model.parameters(), critics[0].model.parameters()))


def test_a_resumed_ppo_run_keeps_its_trained_critic(base_model_dir, tmp_path):
    cfg = load_config("configs/ppo.yaml", [f"model.name={base_model_dir}", *SMALL, "optim.lr=1e-3"])
    trainer = Trainer(cfg, tmp_path)
    trainer.step(0)
    trainer.save(1)
    trained = {k: v.clone() for k, v in trainer.critic.model.state_dict().items()}
    assert bool(trained["head.weight"].abs().sum() > 0)  # the zero-initialised head has moved
    resumed = Trainer(cfg, tmp_path, resume=True)
    for key, value in resumed.critic.model.state_dict().items():
        assert torch.equal(value, trained[key]), key  # not a fresh critic
    assert resumed.critic.optimizer.state_dict()["state"]  # Adam's moments came back too
