"""Samplers by name (`rollout.backend`): what the trainer calls to turn queries into a RolloutBatch.

A sampler holds its own copy of the policy's weights, or the policy itself. The contract with the
trainer: `sample(...)` returns G completions per query with the sampler's per-token log-probs, and
`sync_weights(policy)`, which the trainer calls after every update, makes the next `sample` use
the updated weights. A sampler whose numbers differ from the trainer's (vLLM's kernels, bfloat16)
is what truncated importance sampling corrects (algo.tis_cap, algos/tis.py).

This module imports nothing heavy at the top: config validation calls `sampling_problem` before
torch loads, so that a missing vLLM or GPU is reported at once.
"""

from __future__ import annotations

import copy
import importlib.util
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from rlvr.config import RolloutConfig, RunConfig
    from rlvr.types import Query, RolloutBatch


class Sampler(Protocol):
    def sample(self, queries: list[Query], *, group_size: int, max_new_tokens: int, temperature: float,
               top_p: float) -> RolloutBatch:
        """G completions per query, query-major, with the sampler's log-probs in `old_logp`."""

    def sync_weights(self, policy: PreTrainedModel) -> None:
        """Load the policy's current weights; the next `sample` uses them."""

    def score(self, batch: RolloutBatch) -> torch.Tensor:
        """The sampler's log-probs [N, T] of a batch's completion tokens at temperature 1 (0 on padding)."""


class HFSampler:
    """transformers `generate` (rollout/hf.py). In float32 it samples with the policy itself, so there
    is nothing to sync; in bfloat16 with a bf16 copy of the policy, re-synced after every update:
    the same contract as vLLM's, and a real sampler/trainer mismatch on a CPU."""

    def __init__(self, rollout: RolloutConfig, policy: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 *, seed: int):
        import torch

        self.tokenizer = tokenizer
        self.model = policy
        if rollout.dtype != "float32":
            self.model = copy.deepcopy(policy).to(getattr(torch, rollout.dtype)).eval()
            self.model.requires_grad_(False)

    def sample(self, queries: list[Query], **sampling) -> RolloutBatch:
        from rlvr.rollout.hf import sample_completions

        return sample_completions(self.model, self.tokenizer, queries, **sampling)

    def sync_weights(self, policy: PreTrainedModel) -> None:
        if self.model is not policy:
            self.model.load_state_dict(policy.state_dict())  # copy_ casts float32 → the sampler's dtype

    def score(self, batch: RolloutBatch) -> torch.Tensor:
        import torch

        from rlvr.models.logprobs import token_logprobs

        with torch.no_grad():
            logp, _ = token_logprobs(self.model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids,
                                     batch.completion_mask, temperature=1.0)  # [N, T]
        return logp


def _vllm_sampler(rollout: RolloutConfig, policy: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                  *, seed: int) -> Sampler:
    from rlvr.rollout.vllm import VLLMSampler

    return VLLMSampler(rollout, policy, tokenizer, seed=seed)


SAMPLERS: dict[str, Callable[..., Sampler]] = {"hf": HFSampler, "vllm": _vllm_sampler}
"""rollout.backend → fn(rollout_config, policy, tokenizer, *, seed) -> Sampler."""


def make_sampler(rollout: RolloutConfig, policy: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 *, seed: int) -> Sampler:
    """The configured sampler, already holding the policy's current weights."""
    return SAMPLERS[rollout.backend](rollout, policy, tokenizer, seed=seed)


TIS_ALGORITHMS = ("grpo", "rloo", "reinforce_pp")
"""Algorithms whose step applies TIS: GRPO's per-token loss, fed weighted per-token advantages (algos/tis.py).
gspo takes one advantage per sequence; ppo and dpo run their own steps (train/ppo.py, train/dpo.py)."""


def sampling_problem(cfg: RunConfig) -> str | None:
    """What is wrong with the sampling settings (backend, precision, TIS), or None; no heavy import
    unless rollout.backend=vllm, which checks for vLLM and a CUDA device before any model loads."""
    r, cap = cfg.rollout, cfg.algo.tis_cap
    if not 0 < r.vllm_gpu_memory_utilization <= 1:
        return f"rollout.vllm_gpu_memory_utilization must be in (0, 1] (got {r.vllm_gpu_memory_utilization})"
    if cap > 0 and cfg.algo.algorithm not in TIS_ALGORITHMS:
        return (f"algo.tis_cap is not available with algo.algorithm={cfg.algo.algorithm} (truncated importance "
                f"sampling is built into the step of {', '.join(TIS_ALGORITHMS)} only); use one of those, or algo.tis_cap=0")
    if r.backend != "vllm":
        return None
    if cfg.model.device == "cpu":
        return "rollout.backend=vllm samples on a CUDA GPU, but model.device=cpu; use model.device=auto, or rollout.backend=hf"
    if importlib.util.find_spec("vllm") is None:
        return ("rollout.backend=vllm needs the vllm package, which is not installed; on a CUDA machine install it "
                "into its own venv (see docs/integrations.md, 'Rollouts on GPUs'), or use rollout.backend=hf")
    import torch

    if not torch.cuda.is_available():
        return "rollout.backend=vllm needs a CUDA GPU and torch sees none; run it on a GPU machine, or use rollout.backend=hf"
    return None
