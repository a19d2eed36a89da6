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
