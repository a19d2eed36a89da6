import copy

import pytest
import torch

from rlvr.config import AlgoConfig
from rlvr.engine.update import accumulate_policy_gradient, micro_batches, optimizer_step
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries


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
        result = accumulate_policy_gradient(
            micro, batch, advantages, ref_logp, algo, temperature=1.0, max_new_tokens=40, micro_batch_size=4
        )
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
        logp, _ = token_logprobs(
            model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=1.0
        )
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
            results.append(
                accumulate_policy_gradient(
                    m,
                    batch,
                    advantages,
                    batch.old_logp.double() - 0.05 * batch.completion_mask,
                    algo,
                    temperature=1.0,
                    max_new_tokens=40,
                    micro_batch_size=micro_batch_size,
                    loss_mask=loss_mask,
                )
            )
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


def test_gspo_clip_fractions_count_sequences_across_micro_batches(base_policy):
    # TRL logs GSPO's clip ratios per sequence (tests/algos/test_gspo.py). Shift each row's old
    # log-probs by c so that its sequence ratio is s = e^c (its own log-probs cancel in the mean):
    #   rows 0-3: c = +0.01, s ≈ 1.010 > 1 + 4e-4; high-clipped where A > 0: rows 0, 1
    #   rows 4-7: c = -0.01, s ≈ 0.990 < 1 - 3e-4; low-clipped where A < 0: rows 4, 5
    #   rows 8-11: c = 0, s = 1: never clipped
    # so 2/12 high, 2/12 low, 4/12 in all, however long each row is and however rows are split.
    from dataclasses import replace

    from rlvr.models.logprobs import token_logprobs

    model, tok = base_policy
    model = model.double()
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(3, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    with torch.no_grad():
        logp, _ = token_logprobs(
            model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=1.0
        )  # [N, T]
    shift = torch.tensor([0.01] * 4 + [-0.01] * 4 + [0.0] * 4, dtype=torch.float64)  # [N] c
    batch = replace(batch, old_logp=(logp - shift[:, None]) * batch.completion_mask)  # [N, T]
    advantages = torch.tensor([1, 1, -1, -1, -1, -1, 1, 1, 1, -1, 1, -1], dtype=torch.float64)  # [N]
    lengths = batch.completion_mask.sum(dim=1)  # [N]
    assert lengths[:2].sum() / lengths.sum() != 2 / 12  # a token-weighted fraction would differ
    algo = AlgoConfig(algorithm="gspo", epsilon=3e-4, epsilon_high=4e-4, beta=0.0)
    for micro_batch_size in (0, 4, 5):
        stats = accumulate_policy_gradient(
            copy.deepcopy(model),
            batch,
            advantages,
            None,
            algo,
            temperature=1.0,
            max_new_tokens=40,
            micro_batch_size=micro_batch_size,
        ).stats
        assert stats["clip_ratio/high_mean"] == pytest.approx(2 / 12), micro_batch_size
        assert stats["clip_ratio/low_mean"] == pytest.approx(2 / 12), micro_batch_size
        assert stats["clip_ratio/region_mean"] == pytest.approx(4 / 12), micro_batch_size


def _copy_based_step(model, optimizer, max_grad_norm):
    """The reference: clip, copy every parameter, step, and measure |θ_after − θ_before|."""
    params = [p for p in model.parameters() if p.requires_grad]
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    before = [p.detach().clone() for p in params]
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return sum(float((p.detach() - b).pow(2).sum()) for p, b in zip(params, before)) ** 0.5


def test_update_norm_equals_the_full_copy_and_copies_one_tensor_at_a_time(base_policy):
    # Two AdamW steps (weight decay on, gradients clipped) of the same real gradients: optimizer_step
    # must move the weights exactly as one plain step does and report the same |Δθ|, while no step
    # call is given more parameters (so no more copied weights) than the largest parameter tensor holds.
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(2, split="heldout", seed=0), group_size=4, max_new_tokens=40)
    advantages = torch.linspace(-1.0, 1.0, 8)  # [N]
    reference = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1) for m in (model, reference))
    largest = max(p.numel() for p in model.parameters())
    seen: list[int] = []
    plain_step = opt.step

    def recording_step(*args, **kwargs):
        seen.append(sum(p.numel() for group in opt.param_groups for p in group["params"]))
        return plain_step(*args, **kwargs)

    opt.step = recording_step
    for _ in range(2):
        accumulate_policy_gradient(
            model, batch, advantages, None, AlgoConfig(beta=0.0), temperature=1.0, max_new_tokens=40
        )
        for p, q in zip(model.parameters(), reference.parameters()):
            q.grad = p.grad.clone()
        _, update_norm = optimizer_step(model, opt, max_grad_norm=0.5)
        expected = _copy_based_step(reference, ref_opt, max_grad_norm=0.5)
        assert update_norm == pytest.approx(expected, rel=1e-6) and update_norm > 0
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-7)
            assert p.grad is None
    assert len(seen) > 2 and max(seen) <= largest < sum(p.numel() for p in model.parameters())
    assert all(state["step"] == 2 for state in opt.state.values())  # each parameter stepped once a step
