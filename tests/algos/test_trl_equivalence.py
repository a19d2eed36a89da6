"""Our losses equal TRL's GRPOTrainer loss on identical inputs, for loss_type grpo, bnpo, dr_grpo, dapo.

TRL computes the loss inside `GRPOTrainer._compute_loss` (trl 1.16.0, trl/trainer/grpo_trainer.py,
lines 3083-3173): a method that runs the model forward itself and logs through the accelerator, so
it cannot be called on tensors without a full trainer. `trl_loss` below re-implements those lines
independently (no rlvr code), for the configuration TRL uses by default: no vLLM importance
sampling correction, no entropy or off-policy masks, `delta=None`, `use_bias_correction_kl=False`,
one process. `test_the_cited_trl_source_still_says_this` reads the installed TRL file (when it is
there) and checks that the lines re-implemented here are still in it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from rlvr.algos import group_advantages, grpo_loss, gspo_loss

TRL_AGGREGATION = {"grpo": "sequence_mean", "bnpo": "token_mean", "dr_grpo": "constant", "dapo": "token_mean"}


def trl_loss(
    logps,
    old_logps,
    ref_logps,
    advantages,
    mask,
    *,
    loss_type,
    beta,
    epsilon_low,
    epsilon_high,
    max_completion_length,
    importance_sampling_level="token",
    num_items_in_batch=None,
    gradient_accumulation_steps=1,
):
    """TRL 1.16.0 GRPOTrainer._compute_loss, lines 3083-3173, on one micro-batch (see module docstring)."""
    advantages = advantages.unsqueeze(1)  # (B,) -> (B, 1), line 3059
    log_ratio = logps - old_logps
    if importance_sampling_level == "token":
        log_importance_weights = log_ratio
    else:  # "sequence" (GSPO)
        log_importance_weights = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    coef_1 = torch.exp(log_importance_weights)
    if beta != 0.0:
        per_token_kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
    coef_2 = torch.clamp(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    per_token_loss = -torch.min(coef_1 * advantages, coef_2 * advantages)
    if beta != 0.0:
        per_token_loss = per_token_loss + beta * per_token_kl
    if loss_type == "grpo":
        loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
        return loss / gradient_accumulation_steps
    if loss_type == "bnpo":
        return (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0) / gradient_accumulation_steps
    if loss_type == "dr_grpo":
        loss = (per_token_loss * mask).sum() / (per_token_loss.size(0) * max_completion_length)
        return loss / gradient_accumulation_steps
    if loss_type == "dapo":
        # normalizer = num_items_in_batch / num_processes * GA / steps_per_generation; with one
        # process and TRL's default steps_per_generation = GA it is the generation batch's tokens.
        return (per_token_loss * mask).sum() / num_items_in_batch.clamp(min=1.0)
    raise ValueError(loss_type)


def _inputs(seed=0, n=8, t=6):
    g = torch.Generator().manual_seed(seed)
    logps = (-torch.rand(n, t, generator=g, dtype=torch.float64) * 3).requires_grad_()  # [N, T]
    old = logps.detach() + 0.3 * torch.randn(n, t, generator=g, dtype=torch.float64)  # ρ off 1, some clipped
    ref = logps.detach() - 0.2 * torch.rand(n, t, generator=g, dtype=torch.float64)
    lengths = torch.tensor([6, 1, 3, 6, 2, 5, 4, 6])[:n]
    mask = (torch.arange(t)[None, :] < lengths[:, None]).to(torch.float64)  # [N, T] right-padded
    advantages = torch.randn(n, generator=g, dtype=torch.float64)  # [N]
    return logps, old, ref, advantages, mask


KNOBS = dict(epsilon_low=0.2, epsilon_high=0.28, beta=0.04)


@pytest.mark.parametrize("loss_type", sorted(TRL_AGGREGATION))
def test_full_batch_loss_and_gradient_equal_trl(loss_type):
    logps, old, ref, adv, mask = _inputs()
    theirs = trl_loss(
        logps,
        old,
        ref,
        adv,
        mask,
        loss_type=loss_type,
        max_completion_length=10,
        num_items_in_batch=mask.sum(),
        **KNOBS,
    )
    (their_grad,) = torch.autograd.grad(theirs, logps)
    ours, stats = grpo_loss(
        logps, old, adv, mask, ref_logp=ref, aggregation=TRL_AGGREGATION[loss_type], max_tokens=10, **KNOBS
    )
    (our_grad,) = torch.autograd.grad(ours, logps)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(our_grad, their_grad)
    assert 0 < stats["clip_ratio/region_mean"] < 1  # the inputs exercise both clipped and unclipped tokens


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_gradient_accumulation_matches_trl(loss_type):
    # Two equal micro-batches of 4: TRL divides each by GA (grpo, dr_grpo) or by the whole
    # generation batch's tokens (dapo); rlvr passes whole-batch counts. The sums agree.
    logps, old, ref, adv, mask = _inputs(seed=1)
    theirs = ours = 0.0
    for rows in (slice(0, 4), slice(4, 8)):
        theirs = theirs + trl_loss(
            logps[rows],
            old[rows],
            ref[rows],
            adv[rows],
            mask[rows],
            loss_type=loss_type,
            max_completion_length=10,
            num_items_in_batch=mask.sum(),
            gradient_accumulation_steps=2,
            **KNOBS,
        )
        ours = (
            ours
            + grpo_loss(
                logps[rows],
                old[rows],
                adv[rows],
                mask[rows],
                ref_logp=ref[rows],
                aggregation=TRL_AGGREGATION[loss_type],
                num_sequences=8,
                num_tokens=int(mask.sum()),
                max_tokens=10,
                **KNOBS,
            )[0]
        )
    torch.testing.assert_close(ours, theirs)


def test_bnpo_under_accumulation_is_a_mean_of_local_token_means_not_ours():
    # Documented difference: TRL's bnpo normalises by each micro-batch's own tokens, so with
    # micro-batches of unequal token counts it is not the global token mean that rlvr (and TRL's
    # dapo) compute. Micro-batch 0 has 6+1+3+6 = 16 tokens, micro-batch 1 has 2+5+4+6 = 17.
    logps, old, ref, adv, mask = _inputs(seed=2)
    bnpo = sum(
        trl_loss(
            logps[r],
            old[r],
            ref[r],
            adv[r],
            mask[r],
            loss_type="bnpo",
            max_completion_length=10,
            gradient_accumulation_steps=2,
            **KNOBS,
        )
        for r in (slice(0, 4), slice(4, 8))
    )
    dapo = trl_loss(
        logps, old, ref, adv, mask, loss_type="dapo", max_completion_length=10, num_items_in_batch=mask.sum(), **KNOBS
    )
    ours = grpo_loss(logps, old, adv, mask, ref_logp=ref, aggregation="token_mean", **KNOBS)[0]
    torch.testing.assert_close(ours, dapo)
    assert not torch.isclose(ours, bnpo)


def test_gspo_equals_trl_sequence_level_importance_sampling():
    # TRL's GSPO: importance_sampling_level="sequence" with loss_type "grpo"; the KL stays per token.
    logps, old, ref, adv, mask = _inputs(seed=3)
    knobs = dict(epsilon_low=3e-4, epsilon_high=4e-4, beta=0.04)
    old = logps.detach() + 1e-4 * torch.randn(logps.shape, dtype=torch.float64)  # ratios near the tiny clip range
    theirs = trl_loss(
        logps,
        old,
        ref,
        adv,
        mask,
        loss_type="grpo",
        max_completion_length=10,
        importance_sampling_level="sequence",
        **knobs,
    )
    ours, _ = gspo_loss(logps, old, adv, mask, ref_logp=ref, aggregation="sequence_mean", **knobs)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(torch.autograd.grad(ours, logps)[0], torch.autograd.grad(theirs, logps)[0])


def trl_group_advantages(rewards, num_generations, scale):
    """TRL 1.16.0 `_generate_and_score_completions`, lines 2765-2788 (sum_then_normalize, one reward
    function), with `nanstd` of trl/trainer/utils.py lines 1021-1047 (Bessel-corrected)."""
    grouped = rewards.view(-1, num_generations)
    mean = torch.nanmean(grouped, dim=1).repeat_interleave(num_generations)
    count = (~torch.isnan(grouped)).sum(1, keepdim=True)
    var = torch.nanmean((grouped - torch.nanmean(grouped, 1, keepdim=True)) ** 2, 1, keepdim=True) * count / (count - 1)
    std = var.sqrt().squeeze(1).repeat_interleave(num_generations)
    advantages = rewards - mean
    return advantages / (std + 1e-4) if scale else advantages


@pytest.mark.parametrize("scale", [True, False])
def test_group_advantages_equal_trl(scale):
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.3, 0.9, 0.1, 0.2]])
    ours, _ = group_advantages(rewards, scale_by_std=scale)
    theirs = trl_group_advantages(rewards.flatten(), 4, scale).view(4, 4)
    torch.testing.assert_close(ours, theirs)


def test_the_cited_trl_source_still_says_this():
    spec = importlib.util.find_spec("trl")
    if spec is None or spec.origin is None:
        pytest.skip("trl is not installed (the bench extra): nothing to compare the citation with")
    source = (Path(spec.origin).parent / "trainer" / "grpo_trainer.py").read_text().splitlines()
    cited = "\n".join(source[3082:3173])  # lines 3083-3173, 1-based
    for line in [
        "log_ratio = per_token_logps - old_per_token_logps",
        "torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1",
        "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
        "per_token_loss = -torch.min(per_token_loss1, per_token_loss2)",
        "loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()",
        "loss = (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0)",
        "loss = (per_token_loss * mask).sum() / (per_token_loss.size(0) * self.max_completion_length)",
        'normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes',
    ]:
        assert line in cited, f"trl's grpo_trainer.py lines 3083-3173 changed: {line!r} not found"
