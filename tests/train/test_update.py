import copy

import torch

from rlvr.config import AlgoConfig
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries
from rlvr.train.update import accumulate_policy_gradient, micro_batches, optimizer_step


def _grads(model):
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_micro_batches_cover_every_row_once_and_trim_only_padding(base_policy):
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(6, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    mbs = micro_batches(batch, 8)
    assert [len(mb.rows) for mb in mbs] == [8, 8, 8]
    assert sorted(torch.cat([mb.rows for mb in mbs]).tolist()) == list(range(24))
    for mb in mbs:
        # every real token survives the trim: the same number of prompt and completion tokens
        assert mb.prompt_mask.sum() == batch.prompt_mask[mb.rows].sum()
        assert mb.completion_mask.sum() == batch.completion_mask[mb.rows].sum()
        assert mb.completion_mask[:, -1].any() and mb.prompt_mask[:, 0].any()  # nothing left to trim
    assert len(micro_batches(batch, 0)) == 1


def test_micro_batched_gradient_equals_full_batch_for_each_aggregation(base_policy):
    model, tok = base_policy
    model = model.double()
    queries = make_queries(3, split="heldout", seed=0)
    torch.manual_seed(0)
    batch = sample_completions(model, tok, queries, group_size=4, max_new_tokens=40)
    advantages = torch.linspace(-1.5, 1.5, 12, dtype=torch.float64)  # [N]
    ref_logp = batch.old_logp.double() - 0.05 * batch.completion_mask  # a reference that differs a little
    cases = [("grpo", a) for a in ("sequence_mean", "token_mean", "constant")] + [("gspo", "sequence_mean")]
    for algorithm, aggregation in cases:
        algo = AlgoConfig(algorithm=algorithm, beta=0.04, aggregation=aggregation)
        full = copy.deepcopy(model)
        accumulate_policy_gradient(full, batch, advantages, ref_logp, algo, temperature=1.0, max_new_tokens=40)
        micro = copy.deepcopy(model)
        result = accumulate_policy_gradient(micro, batch, advantages, ref_logp, algo, temperature=1.0,
                                            max_new_tokens=40, micro_batch_size=4)
        for g_full, g_micro in zip(_grads(full), _grads(micro)):
            assert torch.allclose(g_full, g_micro, atol=1e-10), aggregation
        assert abs(result.stats["ratio_mean"] - 1.0) < 1e-6  # first pass: π_θ = π_old
        assert result.stats["kl"] > 0


def test_an_update_moves_the_policy_toward_positive_advantage(base_policy):
    model, tok = base_policy
    queries = make_queries(2, split="heldout", seed=0)
    torch.manual_seed(0)
    batch = sample_completions(model, tok, queries, group_size=4, max_new_tokens=40)
    advantages = torch.tensor([1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0])  # [N]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    algo = AlgoConfig(beta=0.0)
    from rlvr.models.logprobs import token_logprobs

    def seq_logp():
        logp, _ = token_logprobs(model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids,
                                 batch.completion_mask, temperature=1.0)
        return logp.sum(1)

    before = seq_logp().detach()
    accumulate_policy_gradient(model, batch, advantages, None, algo, temperature=1.0, max_new_tokens=40)
    grad_norm, update_norm = optimizer_step(model, optimizer, max_grad_norm=1.0)
    after = seq_logp().detach()
    assert grad_norm > 0 and update_norm > 0
    assert (after - before)[advantages > 0].mean() > (after - before)[advantages < 0].mean()


def test_micro_batching_stays_exact_with_per_token_advantages_entropy_bonus_and_a_loss_mask(base_policy):
    # The new loss terms (per-token advantages from KL-in-reward or GAE, the entropy bonus, DAPO's
    # overlong filter as a loss mask) must keep the summed micro-batch gradient equal to the
    # full-batch one, and so the AdamW update too, for each aggregation mode.
    model, tok = base_policy
    model = model.double()
    torch.manual_seed(1)
    batch = sample_completions(model, tok, make_queries(3, split="heldout", seed=1), group_size=4, max_new_tokens=40)
    g = torch.Generator().manual_seed(0)
    advantages = torch.randn(batch.completion_mask.shape, generator=g, dtype=torch.float64)  # [N, T]
    loss_mask = batch.completion_mask.clone()
    loss_mask[[1, 6]] = 0  # two samples filtered out of the loss
    for aggregation in ("sequence_mean", "token_mean", "constant"):
        algo = AlgoConfig(beta=0.04, aggregation=aggregation, entropy_coef=0.01)
        models, results = [], []
        for micro_batch_size in (0, 4):
            m = copy.deepcopy(model)
            results.append(accumulate_policy_gradient(
                m, batch, advantages, batch.old_logp.double() - 0.05 * batch.completion_mask, algo,
                temperature=1.0, max_new_tokens=40, micro_batch_size=micro_batch_size, loss_mask=loss_mask))
            optimizer_step(m, torch.optim.AdamW(m.parameters(), lr=1e-3), max_grad_norm=0.0)
            models.append(m)
        assert abs(results[0].loss - results[1].loss) < 1e-10, aggregation
        assert abs(results[0].stats["entropy"] - results[1].stats["entropy"]) < 1e-10
        for a, b in zip(models[0].parameters(), models[1].parameters()):
            assert torch.allclose(a, b, atol=1e-12), aggregation


def test_entropy_bonus_pushes_entropy_up(base_policy):
    # With zero advantages and no KL the only gradient is the bonus: one step must raise entropy.
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    algo = AlgoConfig(beta=0.0, entropy_coef=1.0, aggregation="token_mean")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    first = accumulate_policy_gradient(model, batch, torch.zeros(8), None, algo, temperature=1.0, max_new_tokens=40)
    optimizer_step(model, optimizer, max_grad_norm=0.0)
    second = accumulate_policy_gradient(model, batch, torch.zeros(8), None, algo, temperature=1.0, max_new_tokens=40)
    assert second.stats["entropy"] > first.stats["entropy"]
    # A = 0 makes the surrogate 0, so the loss is −1 · (token-mean entropy), the logged `entropy`
    assert abs(first.loss + first.stats["entropy"]) < 1e-5
