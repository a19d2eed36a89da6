"""Samplers by name (`rollout.backend`): what the trainer calls to turn queries into a RolloutBatch.

A sampler holds its own copy of the policy's weights, or the policy itself. The contract with the
trainer: `sample(...)` returns G completions per query with the sampler's per-token log-probs, and
`sync_weights(policy)`, which the trainer calls after every update, makes the next `sample` use
the updated weights. A sampler whose numbers differ from the trainer's (vLLM's kernels, bfloat16)
is what truncated importance sampling corrects (algo.tis_cap, algos/tis.py).

Whether the sampling settings can run here (vLLM installed, a GPU, TIS with this algorithm) is
checked by config validation (config/checks.py, `sampling_problem`) before any model loads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

from rlvr.rollout.sampler import Sampler, SamplerSetup

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

    from rlvr.config import RolloutConfig
    from rlvr.types import Query, RolloutBatch


class HFSampler:
    """transformers `generate`, or the fused sampler (rollout/hf.py). In the policy's own precision
    (float32, or bfloat16 with model.dtype=bfloat16) it samples with the policy itself, so there is
    nothing to sync; in bfloat16 from a float32 policy with a bf16 copy, re-synced after every
    update: the same contract as vLLM's, and a real sampler/trainer mismatch on a CPU. A sharded
    policy (setup.own_copy) is copied in any precision, and each sync gathers its shards. The copy
    runs the policy's Forward choice, with the same hooks."""

    def __init__(self, rollout: RolloutConfig, policy: PreTrainedModel, setup: SamplerSetup):
        import torch

        from rlvr.models.forward import forward_for

        self.tokenizer, self.prompt_format, self.tools = setup.tokenizer, setup.prompt_format, setup.tools
        if self.tools is not None:  # before any model work: the chat format needs a template with tool calls
            from rlvr.rollout.prompts import resolve_style

            self.tools.check(self.tokenizer, resolve_style(self.tokenizer, self.prompt_format))
        self.model = self.policy = policy
        if getattr(torch, rollout.dtype) != policy.dtype or setup.own_copy:  # a bf16 policy samples itself
            self.model = copy.deepcopy(policy).to(getattr(torch, rollout.dtype)).eval()
            self.model.requires_grad_(False)
        self.forward = forward_for(self.model) if setup.forward is None else setup.forward.of(self.model)

    def sample(self, queries: list[Query], **sampling) -> RolloutBatch:
        from rlvr.rollout.hf import sample_completions

        return sample_completions(
            self.forward, self.tokenizer, queries, prompt_format=self.prompt_format, tools=self.tools, **sampling
        )

    @property
    def holds_copy(self) -> bool:
        """A copy of the policy's weights of its own (a bfloat16 copy), synced after each update."""
        return self.model is not self.policy

    def sync_weights(self, policy: PreTrainedModel) -> None:
        from rlvr.models.sharded import full_state_dict

        if self.model is not policy:  # copy_ casts float32 → the sampler's dtype; shards are gathered
            self.model.load_state_dict(full_state_dict(policy))

    def score(self, batch: RolloutBatch) -> torch.Tensor:
        import torch

        from rlvr.models.logprobs import token_logprobs

        with torch.no_grad():
            logp, _ = token_logprobs(
                self.forward,
                batch.prompt_ids,
                batch.prompt_mask,
                batch.completion_ids,
                batch.completion_mask,
                temperature=1.0,
            )  # [N, T]
        return logp


def _vllm_sampler(rollout: RolloutConfig, policy: PreTrainedModel, setup: SamplerSetup) -> Sampler:
    from rlvr.rollout.vllm import VLLMSampler

    return VLLMSampler(rollout, policy, setup)


SAMPLERS: dict[str, Callable[[RolloutConfig, PreTrainedModel, SamplerSetup], Sampler]] = {
    "hf": HFSampler,
    "vllm": _vllm_sampler,
}
"""rollout.backend → fn(rollout config, policy, setup) -> Sampler."""


def make_sampler(rollout: RolloutConfig, policy: PreTrainedModel, setup: SamplerSetup) -> Sampler:
    """The configured sampler (rollout.backend), already holding the policy's current weights."""
    return SAMPLERS[rollout.backend](rollout, policy, setup)
