"""Per-token log-probs (and entropy) of completions under a model, in one forward pass."""

from __future__ import annotations

import torch

from rlvr.models.forward import Runnable, as_forward
from rlvr.models.numerics import upcast


def completion_logits(
    model: Runnable,
    prompt_ids: torch.Tensor,  # [N, P] left-padded
    prompt_mask: torch.Tensor,  # [N, P]
    completion_ids: torch.Tensor,  # [N, T] right-padded
    completion_mask: torch.Tensor,  # [N, T]
) -> torch.Tensor:
    """Raw logits [N, T, V] of the model's prediction of each completion token.

    `model` is a Forward (models/forward.py) or a bare model, run as model.forward=auto decides.
    The fused Llama forward (models/fast_llama.py) computes the same math with each distinct prompt
    run once; otherwise the model's own HF forward runs over prompt + completion.
    """
    forward = as_forward(model)
    if forward.fused is not None:
        forward.hooks.scoring()  # the fused forward never calls model(), so no module hook fires
        return forward.fused.completion_logits(prompt_ids, prompt_mask, completion_ids)
    model = forward.model
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)  # [N, P+T]
    attention = torch.cat([prompt_mask, completion_mask], dim=1)  # [N, P+T]
    positions = (attention.cumsum(dim=1) - 1).clamp(min=0)  # [N, P+T]
    # no KV cache: scoring runs once, and a cache would hold every layer's keys and values meanwhile
    logits = model(input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=False).logits
    return logits[:, prompt_ids.shape[1] - 1 : -1]  # [N, T, V]


def token_logprobs(
    model: Runnable,
    prompt_ids: torch.Tensor,  # [N, P] left-padded
    prompt_mask: torch.Tensor,  # [N, P]
    completion_ids: torch.Tensor,  # [N, T] right-padded
    completion_mask: torch.Tensor,  # [N, T]
    *,
    temperature: float,
    with_entropy: bool = False,
    entropy_grad: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log π(o_t | q, o_<t) for every completion token, with logits / temperature as when sampling.

    Positions are counted from the first real prompt token (as `generate` does for left-padded
    prompts), so the numbers match the sampler's and the first ratio is 1 up to rounding.
    Returns logp [N, T] (0 on padding) and, if asked, the entropy of each next-token distribution [N, T]
    (detached unless `entropy_grad`, which an entropy bonus in the loss needs).
    """
    logits = upcast(completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask))
    logits = logits / temperature  # [N, T, V] predicts o_t
    logp_all = torch.log_softmax(logits, dim=-1)  # [N, T, V]
    logp = logp_all.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)  # [N, T]
    logp = logp * completion_mask
    entropy = None
    if with_entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            entropy = -(logp_all.exp() * logp_all).sum(-1) * completion_mask  # [N, T]
    return logp, entropy
