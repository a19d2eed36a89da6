"""The sampler contract: what the trainer calls on any rollout backend (``Sampler``), and what
every backend is built with besides the rollout config and the policy (``SamplerSetup``).
rollout/backends.py picks the backend by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rlvr.rollout.prompts import PromptFormat

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from rlvr.models.forward import Forward
    from rlvr.rollout.tools import ToolUse
    from rlvr.types import Query, RolloutBatch


class Sampler(Protocol):
    def sample(
        self, queries: list[Query], *, group_size: int, max_new_tokens: int, temperature: float, top_p: float
    ) -> RolloutBatch:
        """G completions per query, query-major, with the sampler's log-probs in `old_logp`."""

    def sync_weights(self, policy: PreTrainedModel) -> None:
        """Load the policy's current weights; the next `sample` uses them."""

    def score(self, batch: RolloutBatch) -> torch.Tensor:
        """The sampler's log-probs [N, T] of a batch's completion tokens at temperature 1 (0 on padding)."""


@dataclass(frozen=True)
class SamplerSetup:
    """What every sampler is built with besides the rollout config and the policy."""

    tokenizer: PreTrainedTokenizerBase
    seed: int
    prompt_format: PromptFormat = PromptFormat()
    """task.prompt_format and task.system_prompt (rollout/prompts.py)."""
    tools: ToolUse | None = None
    """The rollout's tool use (rollout/tools.py, rollout.tools); None: single-turn completions.
    hf only: config/checks.py refuses vllm with tools."""
    forward: Forward | None = None
    """The policy's Forward (models/forward.py; None: model.forward=auto). hf only: vLLM runs its
    own kernels."""
    own_copy: bool = False
    """Hold a copy of the policy's weights even in the policy's own precision: the policy will be
    sharded (train.sharding=fsdp2), so its forward is a collective and each process samples from
    whole weights of its own, gathered at every sync (engine/sharding.py)."""
