"""Sampling with a colocated vLLM engine on the trainer's GPU (`rollout.backend: vllm`).

NOT RUN IN THIS REPOSITORY: it is written against vLLM's public API (`vllm.LLM`, `SamplingParams`)
and follows TRL 1.16's colocate mode (trl/generation/vllm_generation.py), but no GPU with vLLM was
available where it was written. `benchmarks/gpu_vllm_check.py` is the one script that exercises it
on a GPU; docs/integrations.md says what it checks and how to run it. The parts that need no vLLM
(`assemble_batch`, the startup checks in rollout/backends.py) are tested on the CPU.

How it works, and why:
- One `vllm.LLM` in this process, on this GPU, beside the trainer ("colocated"), with
  `distributed_executor_backend="external_launcher"` so that the engine runs in-process (its model
  object is reachable for weight loading) and reads RANK/WORLD_SIZE from the environment.
- `logprobs_mode="processed_logprobs"`: the log-probs vLLM returns are of the distribution it
  sampled from, after temperature (and top-p, see below), like rollout/hf.py's.
  With top_p < 1 vLLM renormalises over the kept tokens while the trainer does not: every ratio
  then carries the kept mass (huggingface/trl#6789). Keep rollout.top_p=1 with algo.tis_cap.
- Prompts go in as token ids encoded by rlvr's own tokenizer (`encode_prompts`, unpadded, in
  task.prompt_format), and vLLM is told to skip its tokenizer: the ids, the stop tokens
  (rollout/prompts.py `stop_token_ids`: EOS, a chat template's end of turn, the model's
  generation_config eos ids, which vLLM adds by itself too) and the decoded texts are rlvr's.
- `sync_weights` streams the policy's parameters into vLLM's model (`model.load_weights`, the
  Hugging Face names; a LoRA policy's with its adapters merged, `hf_weights`) and clears the prefix
  cache, whose KV entries were computed with old weights.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from rlvr.errors import UserError
from rlvr.models.lora import is_lora
from rlvr.rollout.hf import encode_prompts, package_samples
from rlvr.rollout.prompts import stop_token_ids
from rlvr.types import Query, RolloutBatch

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from rlvr.config import RolloutConfig
    from rlvr.rollout.sampler import SamplerSetup


def assemble_batch(
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    group_size: int,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,  # [N, P] each, left-padded as encode_prompts
    token_ids: list[list[int]],
    logprobs: list[list[float]],  # [N] ragged: sampled ids, their log-probs
    *,
    stop_ids: list[int],
) -> RolloutBatch:
    """A RolloutBatch like rollout/hf.py's from per-row samples: completions right-padded to the
    longest, masked through the first stop token (any of `stop_ids`), log-probs 0 on padding;
    "stop" iff the row has one."""
    if len(token_ids) != prompt_ids.shape[0] or any(len(i) != len(p) for i, p in zip(token_ids, logprobs)):
        raise ValueError("token_ids and logprobs need one row per prompt, with one log-prob per token")
    width = max(1, max(len(ids) for ids in token_ids))
    completion_ids = torch.full((len(token_ids), width), tokenizer.pad_token_id, dtype=torch.long)  # [N, T]
    old_logp = torch.zeros((len(token_ids), width), dtype=torch.float32)  # [N, T]
    for row, (ids, lps) in enumerate(zip(token_ids, logprobs)):
        completion_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        old_logp[row, : len(lps)] = torch.tensor(lps, dtype=torch.float32)
    filled = torch.arange(width)[None, :] < torch.tensor([len(ids) for ids in token_ids])[:, None]  # [N, T]
    return package_samples(
        tokenizer,
        queries,
        group_size,
        prompt_ids,
        prompt_mask,
        completion_ids,
        old_logp,
        stop_ids=stop_ids,
        filled=filled.long(),
    )


def unpadded_rows(ids: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
    """The real tokens of each row of a padded [N, W] batch, as lists."""
    return [row[m.bool()].tolist() for row, m in zip(ids.cpu(), mask.cpu())]


def _single_process_env() -> None:
    """The torch.distributed variables vLLM's external launcher reads, for one process on one GPU
    (TRL sets the same from accelerate); existing values (torchrun's) are left alone."""
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "localhost")):
        os.environ.setdefault(key, value)
    if not os.environ.get("MASTER_PORT"):
        with socket.socket() as s:
            s.bind(("localhost", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])


class VLLMSampler:
    """A colocated vLLM engine holding a copy of the policy's weights (see the module docstring)."""

    def __init__(self, rollout: RolloutConfig, policy: PreTrainedModel, setup: SamplerSetup):
        """`setup`'s tokenizer, seed and prompt format (its tools and forward are the hf sampler's)."""
        from vllm import LLM

        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise UserError(
                "rollout.backend=vllm runs in a single process here; launch without "
                "accelerate/torchrun, or use rollout.backend=hf"
            )
        _single_process_env()
        tokenizer, seed, self.prompt_format = setup.tokenizer, setup.seed, setup.prompt_format
        self.tokenizer, self.device = tokenizer, next(policy.parameters()).device
        self.stop_ids = stop_token_ids(tokenizer, self.prompt_format, policy)
        self.engine_finish_reasons: list[str] = []
        self.llm = LLM(
            model=str(policy.name_or_path),
            dtype=rollout.dtype,
            seed=seed,
            gpu_memory_utilization=rollout.vllm_gpu_memory_utilization,
            distributed_executor_backend="external_launcher",  # in-process engine, as TRL's colocate mode
            logprobs_mode="processed_logprobs",  # log-probs after temperature: of what was sampled
            skip_tokenizer_init=True,  # rlvr encodes and decodes; vLLM sees token ids only
            max_num_batched_tokens=4096,  # TRL: the default misleads vLLM's memory profiler
        )
        self.sync_weights(policy)  # the policy may be a resumed checkpoint, not the files on disk

    def sample(
        self,
        queries: list[Query],
        *,
        group_size: int,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
    ) -> RolloutBatch:
        from vllm import SamplingParams

        prompts = [q.prompt for q in queries for _ in range(group_size)]
        prompt_ids, prompt_mask = encode_prompts(self.tokenizer, prompts, fmt=self.prompt_format)  # [N, P]
        params = SamplingParams(
            n=1,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_new_tokens,
            logprobs=0,
            stop_token_ids=self.stop_ids,
            detokenize=False,
        )
        outputs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in unpadded_rows(prompt_ids, prompt_mask)],
            params,
            use_tqdm=False,
        )
        samples = [out.outputs[0] for out in outputs]
        self.engine_finish_reasons = [str(s.finish_reason) for s in samples]  # vLLM's own, for the GPU check
        token_ids = [list(s.token_ids) for s in samples]
        logprobs = [[_logprob(lp, t) for lp, t in zip(s.logprobs, s.token_ids)] for s in samples]  # sampled tokens
        batch = assemble_batch(
            self.tokenizer, queries, group_size, prompt_ids, prompt_mask, token_ids, logprobs, stop_ids=self.stop_ids
        )
        return _to_device(batch, self.device)

    holds_copy = True
    """vLLM's engine holds weights of its own (health check sampler_sync, engine/sync_probe.py)."""

    @torch.no_grad()
    def sync_weights(self, policy: PreTrainedModel) -> None:
        # The in-process model, as TRL 1.16 reaches it in colocate mode (VLLMGeneration.sync_weights).
        model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        model.load_weights(hf_weights(policy))
        self.llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights

    def score(self, batch: RolloutBatch) -> torch.Tensor:
        """vLLM's log-probs [N, T] of the batch's completion tokens, from prompt log-probs of
        prompt + completion: raw model log-probs, so comparable to the trainer's at temperature 1."""
        from vllm import SamplingParams

        prompts = unpadded_rows(batch.prompt_ids, batch.prompt_mask)
        completions = unpadded_rows(batch.completion_ids, batch.completion_mask)
        params = SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False)
        outputs = self.llm.generate(
            [{"prompt_token_ids": p + c} for p, c in zip(prompts, completions)],
            params,
            use_tqdm=False,
        )
        scores = torch.zeros(batch.completion_ids.shape, dtype=torch.float32)  # [N, T]
        for row, (out, p, c) in enumerate(zip(outputs, prompts, completions)):
            scores[row, : len(c)] = torch.tensor(completion_logprobs(out.prompt_logprobs, len(p), c))
        return scores.to(self.device)


@torch.no_grad()
def hf_weights(policy: PreTrainedModel) -> Iterator[tuple[str, torch.Tensor]]:
    """The policy's weights under their Hugging Face names, as vLLM's `load_weights` reads them.

    A LoRA policy (models/lora.py) yields each adapted projection's merged weight W + (α/r)·B A
    under the base name (`...q_proj.weight`, not `...q_proj.base_layer.weight`), and no adapter
    tensors: vLLM holds the plain model. The sum is computed per tensor; the policy's own weights
    are never merged in place (peft's merge_adapter / unmerge_adapter round trip, which TRL uses,
    would add bf16 rounding to the frozen base, and so to the reference, at every sync)."""
    if not is_lora(policy):
        yield from ((name, param.data) for name, param in policy.named_parameters())
        return
    from peft.tuners.lora import LoraLayer

    model = policy.get_base_model()
    adapted = {name: module for name, module in model.named_modules() if isinstance(module, LoraLayer)}
    for name, param in model.named_parameters():
        if ".lora_" in name:
            continue
        owner, _, leaf = name.rpartition(".base_layer.")
        if not owner:
            yield name, param.data
        elif leaf == "weight" and owner in adapted:  # one projection's delta at a time: [out, in]
            module = adapted[owner]
            delta = sum(module.get_delta_weight(adapter) for adapter in module.active_adapters)
            yield f"{owner}.weight", (param.data.float() + delta.float()).to(param.dtype)  # rounded once
        else:
            yield f"{owner}.{leaf}", param.data


def _logprob(position: dict | None, token: int) -> float:
    """The log-prob vLLM gives a token at one position (a {token id: Logprob} dict); NaN when it
    gave none, which TIS then leaves uncorrected (as TRL)."""
    value = position[token].logprob if position and token in position else float("nan")
    return float("nan") if math.isnan(value) else value


def completion_logprobs(prompt_logprobs: list[dict | None], prompt_len: int, completion: list[int]) -> list[float]:
    """Log-probs of the completion tokens from vLLM's prompt log-probs of prompt + completion: entry i
    is token i's given tokens < i (entry 0, the first token's, is None), so completion token t is at
    prompt_len + t."""
    return [_logprob(prompt_logprobs[prompt_len + t], token) for t, token in enumerate(completion)]


def _to_device(batch: RolloutBatch, device: torch.device) -> RolloutBatch:
    for name in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "old_logp"):
        setattr(batch, name, getattr(batch, name).to(device))
    return batch
