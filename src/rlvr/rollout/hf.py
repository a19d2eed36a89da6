"""Sampling on the trainer's own model: the CPU path (and a GPU path for small models).

A policy whose Forward has the fused Llama forward (models/forward.py: plain Llamas on the CPU by
default) samples through rollout/fast_decode.py (each distinct prompt prefilled once for its G
samples, a preallocated cache, finished rows dropped); others, and model.forward=hf, through
Hugging Face `generate`. Both return the same RolloutBatch, and both stop a completion at
the first of the same stop tokens (rollout/prompts.py `stop_token_ids`: EOS, and a chat template's
end of turn).

The sampling policy's per-token log-probs come back with the samples: a logits processor sees the
raw logits of every step, and we take log_softmax(logits / temperature) at the sampled token. That is
the same quantity the trainer computes for π_θ (logits scaled by the same temperature, no top-p
truncation), so the first optimisation pass has ratio ρ = 1 up to float rounding, without a
second forward pass just to get old log-probs.
"""

from __future__ import annotations

import torch
from transformers import (
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedTokenizerBase,
    StoppingCriteria,
    StoppingCriteriaList,
)

from rlvr.models.forward import Forward, Runnable, as_forward
from rlvr.models.numerics import upcast
from rlvr.rollout import fast_decode
from rlvr.rollout.draws import Draws, inverse_cdf
from rlvr.rollout.prompts import PromptFormat, prompt_token_ids, resolve_style, stop_token_ids
from rlvr.rollout.tools import ToolUse, package_turns, sample_turns
from rlvr.types import Query, RolloutBatch


def encode_prompts(
    tokenizer: PreTrainedTokenizerBase,
    prompts: list[str],
    device: torch.device | str = "cpu",
    fmt: PromptFormat = PromptFormat(),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded prompt ids (rollout/prompts.py: [BOS] + text, or the chat template) and their
    mask, ready for generation."""
    return left_pad([prompt_token_ids(tokenizer, p, fmt) for p in prompts], tokenizer.pad_token_id, device)


def left_pad(
    rows: list[list[int]], pad_id: int, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id rows left-padded into [n, p] ids and their mask."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # [n, p]
    mask = torch.zeros((len(rows), width), dtype=torch.long)  # [n, p]
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        mask[i, width - len(row) :] = 1
    return ids.to(device), mask.to(device)


def completion_mask(completion_ids: torch.Tensor, stop_ids: list[int] | torch.Tensor) -> torch.Tensor:
    """1 on every sampled token up to and including the first stop token (any of `stop_ids`: EOS,
    a chat template's end of turn), 0 after it."""
    is_stop = is_stop_token(completion_ids, stop_ids)  # [N, T]
    after_stop = (is_stop.cumsum(dim=1) - is_stop.long()) > 0  # [N, T] strictly after the first stop
    return (~after_stop).long()


def is_stop_token(token_ids: torch.Tensor, stop_ids: list[int] | torch.Tensor) -> torch.Tensor:
    """Bool, shaped as `token_ids`: which of them are stop tokens."""
    return torch.isin(token_ids, torch.as_tensor(stop_ids, dtype=token_ids.dtype, device=token_ids.device))


@torch.no_grad()
def sample_completions(
    model: Runnable,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    *,
    group_size: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    greedy: bool = False,
    prompt_format: PromptFormat = PromptFormat(),
    tools: ToolUse | None = None,
    draw_seed: int | None = None,
    first_sample: int = 0,
) -> RolloutBatch:
    """Sample `group_size` completions for each query (query-major order), with their log-probs;
    `prompt_format` says how each prompt is laid out and so which tokens end a completion
    (rollout/prompts.py; auto by default). With `tools` (rollout.tools), each completion is a
    multi-turn trajectory of turns and tool observations (rollout/tools.py). `model` is a Forward
    (models/forward.py) or a bare model, run as model.forward=auto decides. With `draw_seed`, the
    completions are samples `first_sample`.. of each query's paired draws (rollout/draws.py), so a
    draw can be continued where an earlier one stopped."""
    forward = as_forward(model)
    model = forward.model
    device = next(model.parameters()).device
    stop_ids = stop_token_ids(tokenizer, prompt_format, model)
    sampling = dict(temperature=temperature, top_p=top_p, greedy=greedy)
    if draw_seed is not None and not greedy:
        sampling["draws"] = Draws.for_queries(draw_seed, [q.id for q in queries], group_size, first_sample)
    if tools is not None:
        return _sample_with_tools(
            forward, tokenizer, queries, group_size, max_new_tokens, device, prompt_format, stop_ids, tools, sampling
        )
    if forward.fused is not None:
        return _sample_fused(
            forward,
            tokenizer,
            queries,
            group_size=group_size,
            max_new_tokens=max_new_tokens,
            device=device,
            prompt_format=prompt_format,
            stop_ids=stop_ids,
            **sampling,
        )
    prompts = [q.prompt for q in queries for _ in range(group_size)]
    prompt_ids, prompt_mask = encode_prompts(tokenizer, prompts, device, prompt_format)  # [N, P]
    completion_ids, old_logp = _generate(
        model, tokenizer, prompt_ids, prompt_mask, max_new_tokens=max_new_tokens, stop_ids=stop_ids, **sampling
    )  # [N, T] each
    return package_samples(
        tokenizer, queries, group_size, prompt_ids, prompt_mask, completion_ids, old_logp, stop_ids=stop_ids
    )


def _generate(
    model,
    tokenizer,
    prompt_ids,
    prompt_mask,
    *,
    max_new_tokens,
    temperature,
    top_p,
    greedy,
    stop_ids,
    stop_when=None,
    draws: Draws | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """HF `generate` from left-padded prompts [N, P]: completion ids [N, T] and the sampling
    policy's log-probs [N, T]. `stop_when(rows, tokens) -> bool [m]` also ends rows (a tool call).
    `draws`: each row's token from its common random number (rollout/draws.py)."""
    was_training = model.training
    model.eval()
    recorder = SampledLogProbs(1.0 if greedy else temperature)
    processors = [recorder] if draws is None or greedy else [recorder, DrawnTokens(draws, temperature, top_p)]
    sequences = model.generate(
        input_ids=prompt_ids,
        attention_mask=prompt_mask,
        do_sample=not greedy,
        temperature=temperature if not greedy else None,
        top_p=top_p if not greedy else None,
        top_k=0 if not greedy else None,
        # the model's generation_config.json may set one (Qwen2.5-Instruct's does): the trainer's π_θ has none
        repetition_penalty=1.0,
        max_new_tokens=max_new_tokens,
        logits_processor=LogitsProcessorList(processors),
        stopping_criteria=StoppingCriteriaList([_StopWhen(stop_when)]) if stop_when is not None else None,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=stop_ids,  # a row ends at the first of them (replaces generation_config's list)
    )
    model.train(was_training)
    completion_ids = sequences[:, prompt_ids.shape[1] :]  # [N, T]
    return completion_ids, recorder.logprobs(completion_ids[:, -1])  # [N, T] each


class _StopWhen(StoppingCriteria):
    """`generate` asks after every step which rows are done; `stop_when` answers from their last token."""

    def __init__(self, stop_when):
        self.stop_when = stop_when

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        rows = torch.arange(input_ids.shape[0], device=input_ids.device)
        return self.stop_when(rows, input_ids[:, -1])  # [N]


def _sample_with_tools(
    forward: Forward, tokenizer, queries, group_size, max_new_tokens, device, prompt_format, stop_ids, tools, sampling
) -> RolloutBatch:
    """Multi-turn trajectories (rollout/tools.py), each turn sampled from the exact ids so far by
    the fused sampler (rollout/fast_decode.py) or `generate`."""
    tools.check(tokenizer, resolve_style(tokenizer, prompt_format))
    prompts = [prompt_token_ids(tokenizer, q.prompt, prompt_format) for q in queries]

    draws = sampling.pop("draws", None)

    def generate(prefixes, g, budget, watcher, at):
        ids, mask = left_pad(prefixes, tokenizer.pad_token_id, device)  # [u, p]
        drawn = None if draws is None else {"draws": draws.subset(*at)}
        if forward.fused is not None:
            return fast_decode.sample(
                forward.fused,
                ids,
                mask,
                group_size=g,
                max_new_tokens=budget,
                stop_ids=stop_ids,
                pad_id=tokenizer.pad_token_id,
                stop_when=watcher,
                on_cache=forward.hooks.cache,
                **sampling,
                **(drawn or {}),
            )
        ids, mask = ids.repeat_interleave(g, dim=0), mask.repeat_interleave(g, dim=0)  # [n, p]
        return _generate(
            forward.model,
            tokenizer,
            ids,
            mask,
            max_new_tokens=budget,
            stop_ids=stop_ids,
            stop_when=watcher,
            **sampling,
            **(drawn or {}),
        )

    rows = sample_turns(
        generate, tokenizer, prompts, group_size, max_new_tokens=max_new_tokens, stop_ids=stop_ids, tools=tools
    )
    prompt_ids, prompt_mask = left_pad(prompts, tokenizer.pad_token_id, device)  # [B, P]
    return package_turns(
        tokenizer,
        queries,
        group_size,
        prompt_ids.repeat_interleave(group_size, dim=0),
        prompt_mask.repeat_interleave(group_size, dim=0),
        rows,
    )


class SampledLogProbs(LogitsProcessor):
    """log softmax(raw logits / temperature) at each sampled token, kept as [N] per step instead of
    `generate`'s `output_logits` ([N, V] per step, all kept: 40 GB for 128 completions of 512 tokens
    over Qwen2.5's 151,936-token vocabulary).

    transformers applies the processors a caller passes before its temperature and top-p warpers,
    so `scores` are the raw logits; the token drawn from step t's scores is the last input id of
    step t + 1, and the last step's is the final column of the returned sequences."""

    def __init__(self, temperature: float):
        self.temperature = temperature
        self.previous: torch.Tensor | None = None  # [N, V] the last step's log-probs
        self.steps: list[torch.Tensor] = []  # [N] per finished step

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.previous is not None:
            self.steps.append(self.previous.gather(-1, input_ids[:, -1:])[:, 0])  # [N]
        self.previous = torch.log_softmax(upcast(scores) / self.temperature, dim=-1)  # [N, V]
        return scores

    def logprobs(self, last_tokens: torch.Tensor) -> torch.Tensor:
        """[N, T] once generation is over; `last_tokens` [N] are the final step's samples."""
        return torch.stack([*self.steps, self.previous.gather(-1, last_tokens[:, None])[:, 0]], dim=1)


class DrawnTokens(LogitsProcessor):
    """Common random numbers through `generate`: the token each row's uniform picks by inverse CDF
    from softmax(logits / T) after the top-p cut (rollout/draws.py), left as the only token with
    finite score, so `generate`'s own draw can only take it. It runs after SampledLogProbs, which
    records the raw logits' log-probs, and before `generate`'s warpers, which leave one token as is."""

    def __init__(self, draws: Draws, temperature: float, top_p: float):
        self.draws, self.temperature, self.top_p = draws, temperature, top_p
        self.step = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        probs = fast_decode.top_p_filter(upcast(scores) / self.temperature, self.top_p).softmax(dim=-1)  # [N, V]
        rows = torch.arange(scores.shape[0], device=scores.device)
        token = inverse_cdf(probs, self.draws.uniforms(rows, self.step))  # [N]
        self.step += 1
        only = torch.full_like(scores, float("-inf"))
        return only.scatter_(1, token[:, None], 0.0)


def _sample_fused(forward: Forward, tokenizer, queries, *, group_size, device, prompt_format, stop_ids, **sampling):
    """The fused sampler (rollout/fast_decode.py): each distinct prompt prefilled once for its G
    samples; `sampling` is max_new_tokens, temperature, top_p and greedy."""
    prompts = [q.prompt for q in queries]
    prompt_ids, prompt_mask = encode_prompts(tokenizer, prompts, device, prompt_format)  # [B, P]
    completion_ids, old_logp = fast_decode.sample(
        forward.fused,
        prompt_ids,
        prompt_mask,
        group_size=group_size,
        stop_ids=stop_ids,
        pad_id=tokenizer.pad_token_id,
        on_cache=forward.hooks.cache,
        **sampling,
    )  # [N, T] each
    prompt_ids = prompt_ids.repeat_interleave(group_size, dim=0)  # [N, P]
    prompt_mask = prompt_mask.repeat_interleave(group_size, dim=0)
    return package_samples(
        tokenizer, queries, group_size, prompt_ids, prompt_mask, completion_ids, old_logp, stop_ids=stop_ids
    )


def package_samples(
    tokenizer,
    queries,
    group_size,
    prompt_ids,
    prompt_mask,
    completion_ids,
    old_logp,
    *,
    stop_ids: list[int],
    filled: torch.Tensor | None = None,
) -> RolloutBatch:
    """Mask everything after each completion's first stop token (`stop_ids`, from
    rollout/prompts.py `stop_token_ids`) and package the samples as a RolloutBatch. The mask, and so
    the loss and the log-probs, include the stop token; the texts the verifiers read do not.
    `filled` [N, T] marks the positions a sampler actually returned, for samplers whose rows come
    back ragged and were padded here (rollout/vllm.py); by default every position was sampled."""
    mask = completion_mask(completion_ids, stop_ids)  # [N, T]
    if filled is not None:
        mask = mask * filled
    old_logp = old_logp * mask
    completion_ids = completion_ids.masked_fill(mask == 0, tokenizer.pad_token_id)
    stopped = is_stop_token(completion_ids, stop_ids) & mask.bool()  # [N, T] the stop token, if sampled
    # Decoded without the stop token: an end-of-turn token that is an added but not a special token
    # (so skip_special_tokens keeps it) must not reach a verifier as text.
    text_ids = completion_ids.masked_fill((mask == 0) | stopped, -1).tolist()  # one copy off the device
    texts = tokenizer.batch_decode([[t for t in row if t >= 0] for row in text_ids], skip_special_tokens=True)
    return RolloutBatch(
        queries=list(queries),
        group_size=group_size,
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=completion_ids,
        completion_mask=mask,
        old_logp=old_logp,
        texts=texts,
        finish_reasons=["stop" if f else "length" for f in stopped.any(dim=1).tolist()],
    )
