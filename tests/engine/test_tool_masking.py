"""Tool observations are masked out of the loss, the KL term and the entropy: the one update
function (engine/update.py) against a hand-computed loss on a real tool batch, and the same update
with the observations' numbers made garbage."""

from __future__ import annotations

import copy

import torch

from rlvr.bases import resolve_model_path, tiny_arith_tool
from rlvr.config import AlgoConfig
from rlvr.engine.update import accumulate_policy_gradient
from rlvr.models import load_policy
from rlvr.models.logprobs import token_logprobs
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.tools import ToolUse
from rlvr.sandbox.tool import FORMATS
from rlvr.tasks.arith import make_queries

BETA, EPS, COEF, MAX_NEW = 0.04, 0.2, 0.01, 48


def _tool_batch():
    model, tok = load_policy(resolve_model_path("tiny-arith-tool"))
    model = model.double()
    tools = ToolUse(FORMATS["tags"], max_turns=2, slots=1)
    try:
        torch.manual_seed(3)
        queries = make_queries(6, split="heldout", seed=0, spec=tiny_arith_tool.TASK)
        batch = sample_completions(model, tok, queries, group_size=4, max_new_tokens=MAX_NEW, tools=tools)
    finally:
        tools.close()
    observed = batch.completion_mask * (1 - batch.tool_mask)
    assert observed.sum() > 0, "some completions called the tool"
    return model, batch, observed.bool()


def _hand_loss(model, batch, advantages, ref_logp) -> tuple[float, float]:
    """GRPO's sequence-mean loss (DeepSeekMath eq. 3) with the k3 KL and an entropy bonus, summed
    over each completion's POLICY tokens only, by hand; and the policy-token mean KL."""
    with torch.no_grad():
        logp, entropy = token_logprobs(
            model,
            batch.prompt_ids,
            batch.prompt_mask,
            batch.completion_ids,
            batch.completion_mask,
            temperature=1.0,
            with_entropy=True,
        )
    total, kl_sum, kl_count = 0.0, 0.0, 0
    n = batch.num_completions
    for i in range(n):
        own = [t for t in range(batch.completion_ids.shape[1]) if batch.completion_mask[i, t] and batch.tool_mask[i, t]]
        row = 0.0
        for t in own:
            ratio = torch.exp(logp[i, t] - batch.old_logp[i, t])
            a = advantages[i]
            surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - EPS, 1 + EPS) * a)
            delta = ref_logp[i, t] - logp[i, t]
            kl = torch.exp(delta) - delta - 1  # k3
            row += float(-surrogate + BETA * kl - COEF * entropy[i, t])
            kl_sum, kl_count = kl_sum + float(kl), kl_count + 1
        total += row / len(own)
    return total / n, kl_sum / kl_count


def test_the_update_masks_observations_out_of_loss_kl_and_entropy_as_computed_by_hand():
    model, batch, observed = _tool_batch()
    n = batch.num_completions
    torch.manual_seed(0)
    advantages = torch.randn(n, dtype=torch.float64)  # [N]
    policy = batch.policy_mask.bool()
    noise = 0.3 * torch.randn(batch.old_logp.shape, dtype=torch.float64)
    batch.old_logp = batch.old_logp.double() + noise * policy  # ratios away from 1: clipping engages
    ref_logp = batch.old_logp - 0.1 * policy  # [N, T] a reference that differs on policy tokens
    algo = AlgoConfig(beta=BETA, epsilon=EPS, entropy_coef=COEF, aggregation="sequence_mean")
    m = copy.deepcopy(model)
    result = accumulate_policy_gradient(
        m, batch, advantages, ref_logp, algo, temperature=1.0, max_new_tokens=MAX_NEW, micro_batch_size=8
    )
    expected_loss, expected_kl = _hand_loss(model, batch, advantages, ref_logp)
    assert abs(result.loss - expected_loss) < 1e-9
    assert abs(result.stats["kl"] - expected_kl) < 1e-9
    grads = [p.grad.clone() for p in m.parameters()]

    # Garbage on the observations' old and reference log-probs changes nothing: they are not in the loss
    garbage = copy.deepcopy(batch)
    garbage.old_logp = garbage.old_logp.masked_fill(observed, -50.0)
    junk_ref = ref_logp.masked_fill(observed, 30.0)
    m2 = copy.deepcopy(model)
    again = accumulate_policy_gradient(
        m2, garbage, advantages, junk_ref, algo, temperature=1.0, max_new_tokens=MAX_NEW, micro_batch_size=8
    )
    assert again.loss == result.loss and again.stats == result.stats
    assert all(torch.equal(a, b.grad) for a, b in zip(grads, m2.parameters()))

    # Without the tool mask the same numbers give another loss: the mask is what keeps them out
    unmasked = copy.deepcopy(garbage)
    unmasked.tool_mask = None
    m3 = copy.deepcopy(model)
    other = accumulate_policy_gradient(
        m3, unmasked, advantages, junk_ref, algo, temperature=1.0, max_new_tokens=MAX_NEW, micro_batch_size=8
    )
    assert abs(other.loss - result.loss) > 1e-3
