"""Does a sampler that holds its own copy of the weights hold the ones it claims? (health check
``sampler_sync``, engine/health.py)

The probe is a fixed batch: the first ``PROBE_ROWS`` completions of the run's first rollout batch.
After each weight sync the sampler scores it with its copy (``Sampler.score``: log-probs at
temperature 1), the trainer scores it with the policy of that version, and ``sync/probe_error`` is
the mean over the probe's tokens of |log π_sampler − log π_θ|. A sync that happened leaves the
precision's difference (below 1e-4 in float32, 0.0005 to 0.005 in bfloat16 on the default run); a
sync that did not leaves one step's drift or more. The sampler process of ``rollout.max_staleness`` scores the
probe on its side after applying each version (engine/async_rollouts.py); a sampler that is the
policy itself (float32 HF sampling) has nothing to check and logs nothing.
"""

from __future__ import annotations

import torch

from rlvr.models.logprobs import token_logprobs
from rlvr.types import RolloutBatch

PROBE_ROWS = 4


def probe_of(batch: RolloutBatch) -> RolloutBatch:
    """The fixed probe batch: the first rows of a rollout batch."""
    return batch.select(list(range(min(PROBE_ROWS, batch.num_completions))), group_size=1)


def probe_logp(forward, probe: RolloutBatch) -> torch.Tensor:
    """log π of the probe's completion tokens [P, T] under `forward`'s weights, at temperature 1."""
    with torch.no_grad():
        logp, _ = token_logprobs(
            forward, probe.prompt_ids, probe.prompt_mask, probe.completion_ids, probe.completion_mask, temperature=1.0
        )
    return logp.float()


def probe_error(sampler_logp: torch.Tensor, policy_logp: torch.Tensor, probe: RolloutBatch) -> float:
    """Mean |Δ log-prob| over the probe's completion tokens."""
    mask = probe.completion_mask.bool()
    return float((sampler_logp.float() - policy_logp.float()).abs()[mask].mean())


class SyncProbe:
    """The in-process check: after `sync_weights`, the sampler's copy scores the probe."""

    def __init__(self) -> None:
        self.probe: RolloutBatch | None = None

    def after_sync(self, sampler, forward, batch: RolloutBatch) -> dict[str, float]:
        """`sync/probe_error` when the sampler holds a copy of its own (``holds_copy``), else nothing."""
        if not getattr(sampler, "holds_copy", False):
            return {}
        if self.probe is None:
            self.probe = probe_of(batch)
        return {"sync/probe_error": probe_error(sampler.score(self.probe), probe_logp(forward, self.probe), self.probe)}
