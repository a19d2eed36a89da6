"""DAPO dynamic sampling and overlong shaping on the real Trainer (real model, real verifiers)."""

import dataclasses

import torch

from rlvr.config import load_config
from rlvr.engine.context import Timer, batch_queries
from rlvr.engine.distributed import World
from rlvr.engine.loop import Trainer
from rlvr.engine.rollouts import collect_rollouts, concat_batches, select_groups
from rlvr.models.logprobs import token_logprobs
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries
from rlvr.types import Verdict
from rlvr.verifiers.fidelity import coins

SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=8"]


def _logp(model, b):
    logp, _ = token_logprobs(model, b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask, temperature=1.0)
    return logp  # [N, T]


def test_concatenated_batches_keep_every_row_exactly(base_policy):
    # Batches with different prompt and completion widths are re-padded (left / right); each row
    # must give the same log-probs as in its own batch, so the padding is invisible to the model.
    model, tok = base_policy
    torch.manual_seed(0)
    a = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=2, max_new_tokens=12)
    b = sample_completions(model, tok, make_queries(3, split="heldout", seed=5), group_size=2, max_new_tokens=30)
    both = concat_batches([a, b], tok.pad_token_id)
    assert both.num_completions == 10 and both.queries == a.queries + b.queries
    with torch.no_grad():
        joined, parts = _logp(model, both), [_logp(model, a), _logp(model, b)]
    torch.testing.assert_close(joined[:4, : a.completion_ids.shape[1]], parts[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(joined[4:, : b.completion_ids.shape[1]], parts[1], atol=1e-5, rtol=1e-5)
    assert torch.equal(both.completion_mask.sum(1), torch.cat([a.completion_mask.sum(1), b.completion_mask.sum(1)]))
    picked, _ = select_groups(both, [None] * 10, [3])  # group 3 = b's second query
    assert picked.texts == b.texts[2:4] and picked.queries == [b.queries[1]]


def test_dynamic_sampling_keeps_only_groups_with_signal(base_model_dir, tmp_path):
    cfg = load_config(
        None, [f"model.name={base_model_dir}", *SMALL, "algo.dynamic_sampling=true", "algo.max_sampling_rounds=4"]
    )
    trainer = Trainer(cfg, tmp_path)
    queries = batch_queries(trainer.train_queries, 0, 4, 0)
    rollouts = collect_rollouts(trainer.context, 0, queries, Timer())
    m = rollouts.metrics
    assert 1 <= m["dynamic_sampling/rounds"] <= 4
    assert m["dynamic_sampling/generated_groups"] == 4 * m["dynamic_sampling/rounds"]
    assert m["dynamic_sampling/kept_groups"] == len(rollouts.batch.queries) <= 4
    if m["dynamic_sampling/kept_groups"]:
        spread = rollouts.rewards.amax(1) - rollouts.rewards.amin(1)  # [B']
        assert (spread > 0).all()  # every kept group has a non-zero advantage somewhere
    assert rollouts.batch.num_completions == rollouts.rewards.numel() == len(rollouts.scored)
    # the batch's rows are the kept groups' own: reward i belongs to completion i
    flat = rollouts.rewards.flatten()
    assert all(float(flat[i]) == s.reward for i, s in enumerate(rollouts.scored))
    metrics = trainer.step(0)  # and a whole step runs on the stitched batch
    assert metrics["frac_reward_zero_std"] == 0.0 or metrics["dynamic_sampling/kept_groups"] == 0
    assert "dynamic_sampling/rounds" in metrics


def test_overlong_penalty_lowers_the_reward_of_long_completions(base_model_dir, tmp_path):
    # L_max = 16 and L_cache = 16: every token counts, so reward = correctness − |y| / 16 exactly.
    cfg = load_config(
        None,
        [
            f"model.name={base_model_dir}",
            *SMALL,
            "rollout.max_new_tokens=16",
            "algo.overlong_penalty=true",
            "algo.overlong_cache=16",
            "algo.beta=0",
        ],
    )
    trainer = Trainer(cfg, tmp_path)
    rollouts = collect_rollouts(trainer.context, 0, batch_queries(trainer.train_queries, 0, 4, 0), Timer())
    lengths = rollouts.batch.completion_mask.sum(1).float()  # [N]
    correctness = torch.tensor([s.reward for s in rollouts.scored])  # unshaped verifier reward
    torch.testing.assert_close(rollouts.rewards.flatten(), correctness - lengths / 16)


def test_overlong_filter_removes_truncated_samples_from_the_loss(base_policy):
    # Rows 0-3 are cut at 4 tokens (truncated), rows 4-7 may finish. Advantages sit only on the
    # truncated rows: without the filter they move the policy, with it there is no gradient at all.
    from rlvr.config import AlgoConfig
    from rlvr.engine.rollouts import loss_mask
    from rlvr.engine.update import accumulate_policy_gradient

    model, tok = base_policy
    torch.manual_seed(0)
    cut = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=2, max_new_tokens=4)
    full = sample_completions(model, tok, make_queries(2, split="heldout", seed=1), group_size=2, max_new_tokens=40)
    batch = concat_batches([cut, full], tok.pad_token_id)
    assert batch.finish_reasons[:4] == ["length"] * 4
    mask = loss_mask(batch, overlong_filter=True)
    assert mask[:4].sum() == 0
    kept = [i for i, r in enumerate(batch.finish_reasons) if r == "stop"]
    assert torch.equal(mask[kept], batch.completion_mask[kept]) and loss_mask(batch, False) is None
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.0])  # [N]
    algo = AlgoConfig(beta=0.0)
    for filtered in (False, True):
        model.zero_grad(set_to_none=True)
        accumulate_policy_gradient(
            model,
            batch,
            advantages,
            None,
            algo,
            temperature=1.0,
            max_new_tokens=40,
            loss_mask=mask if filtered else None,
        )
        grad = sum(float(p.grad.abs().sum()) for p in model.parameters() if p.grad is not None)
        assert (grad == 0.0) is filtered


def test_a_random_reward_is_a_coin_per_rollout_of_the_trainer(base_model_dir, tmp_path):
    """reward.fidelity=random (Shao et al. 2025): the trainer's rewards are the step's coins,
    whatever the completions say; the correctness the run logs stays gold's."""
    sets = [f"model.name={base_model_dir}", *SMALL, "reward.fidelity=random", "reward.random_rate=0.5"]
    trainer = Trainer(load_config(None, sets), tmp_path)
    queries = batch_queries(trainer.train_queries, 0, 4, 0)
    rollouts = collect_rollouts(trainer.context, 0, queries, Timer())
    assert rollouts.rewards.flatten().tolist() == coins(trainer.cfg.train.seed, "0-0", 16, 0.5)
    gold = [s.results["correctness"].verdict is Verdict.PASS for s in rollouts.scored]
    assert [s.correct for s in rollouts.scored] == gold
    again = collect_rollouts(trainer.context, 1, queries, Timer())  # another step: other coins
    assert again.rewards.flatten().tolist() == coins(trainer.cfg.train.seed, "1-0", 16, 0.5)
    assert trainer.context.hacking is None  # nothing in the text can exploit a coin
    # under DDP each process samples its own shard: another rank draws other coins for its rollouts
    other_rank = dataclasses.replace(trainer.context, dist=World(rank=1, world_size=2))
    shard = collect_rollouts(other_rank, 0, queries, Timer())
    assert shard.rewards.flatten().tolist() == coins(trainer.cfg.train.seed, "0-0/rank1", 16, 0.5)
    assert shard.rewards.flatten().tolist() != rollouts.rewards.flatten().tolist()
