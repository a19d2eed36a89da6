"""rollout/logprob_mismatch: how far the sampler's log-probs of the sampled tokens are from the
trainer's, per token, read off the update's first forward pass at no extra cost.

    mismatch = mean over the loss's tokens of |log π_θ(o_t) − log π_sampler(o_t)|

π_θ is the policy as the update's first pass sees it (before any optimizer step of the step). With a
float32 sampler that samples with the policy itself the two differ only by the numerics of the
cached decode against one full forward (~1e-7); with a bfloat16 sampler copy or vLLM by the
sampler's precision and kernels (TIS's `sampling/sampling_logp_difference/mean` is the same
quantity); with rollout.max_staleness >= 1 also by the policy's drift over the batch's staleness.
"""

from __future__ import annotations

import torch


class LogprobMismatch:
    """Called after each micro-batch of one pass (`on_micro_batch`); `metrics()` is the pass's mean."""

    def __init__(self, sampler_logp: torch.Tensor, mask: torch.Tensor):
        self.sampler_logp, self.mask = sampler_logp, mask.bool()  # [N, T] each
        self.total, self.tokens = 0.0, 0

    def __call__(self, mb, logp: torch.Tensor) -> None:
        """`mb`: the micro-batch (engine/update.py MicroBatch: its rows and width); `logp` [n, t] its log-probs."""
        mask = self.mask[mb.rows, : mb.width]  # [n, t]
        delta = (logp.detach().double() - self.sampler_logp[mb.rows, : mb.width].double()).abs()  # [n, t]
        self.total += float(delta[mask].sum())
        self.tokens += int(mask.sum())

    def metrics(self) -> dict[str, float]:
        return {"rollout/logprob_mismatch": self.total / self.tokens if self.tokens else 0.0}
