"""The per-token view of the shipped losses: return_token_stats, the weights ∂loss/∂logp and the
per-completion shares of the loss."""

import pytest
import torch

from rlvr.algos import grpo_loss, gspo_loss
from rlvr.config import AlgoConfig
from rlvr.diagnostics.terms import LossInputs, loss_terms


def _inputs():
    generator = torch.Generator().manual_seed(0)
    old_logp = -torch.rand(4, 5, generator=generator, dtype=torch.float64)  # [N, T]
    logp = old_logp + 0.3 * torch.randn(4, 5, generator=generator, dtype=torch.float64)  # [N, T]
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0]])  # [N, T]
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64)  # [N]
    return LossInputs(logp, old_logp, old_logp - 0.1, advantages, mask, max_tokens=8)


def test_default_return_is_unchanged_and_token_stats_are_zero_on_padding():
    x = _inputs()
    kwargs = dict(ref_logp=x.ref_logp, epsilon_low=0.2, epsilon_high=0.2, beta=0.1)
    for loss_fn in (grpo_loss, gspo_loss):
        plain = loss_fn(x.logp, x.old_logp, x.advantages, x.mask, **kwargs)
        loss, stats, tokens = loss_fn(x.logp, x.old_logp, x.advantages, x.mask, **kwargs, return_token_stats=True)
        assert len(plain) == 2 and float(plain[0]) == float(loss) and plain[1] == stats
        for name in ("per_token_loss", "ratio", "kl", "clipped"):
            assert tokens[name].shape == (4, 5) and not tokens[name][~x.mask.bool()].any(), name
    # GSPO: one ratio per sequence, written on each of its real tokens
    _, _, tokens = gspo_loss(x.logp, x.old_logp, x.advantages, x.mask, **kwargs, return_token_stats=True)
    assert torch.allclose(tokens["ratio"][1, :3], tokens["ratio"][1, 0].expand(3))


@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
@pytest.mark.parametrize("aggregation", ["sequence_mean", "token_mean", "constant"])
def test_weights_and_row_shares(algorithm, aggregation):
    x = _inputs()
    algo = AlgoConfig(algorithm=algorithm, aggregation=aggregation, beta=0.1, epsilon=0.1)
    terms = loss_terms(algo, x)
    assert float(terms["row_loss"].sum()) == pytest.approx(float(terms["loss"]), rel=1e-12)
    # ∂loss/∂logp by central differences on one real token
    h, (i, t) = 1e-6, (3, 2)
    bumped = []
    for sign in (1, -1):
        logp = x.logp.clone()
        logp[i, t] += sign * h
        bumped.append(
            float(loss_terms(algo, LossInputs(logp, x.old_logp, x.ref_logp, x.advantages, x.mask, 8))["loss"])
        )
    assert float(terms["token_weight"][i, t]) == pytest.approx((bumped[0] - bumped[1]) / (2 * h), rel=1e-5, abs=1e-9)
    assert not terms["token_weight"][~x.mask.bool()].any()  # padding gets no push
