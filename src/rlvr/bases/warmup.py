"""Supervised warm-up that turns a freshly initialised tiny model into an RLVR base model.

The warm-up corpus mixes right and wrong worked solutions (tasks/arith.py `worked_solution`), the
way a pretraining corpus does. The resulting base can already write the right solution, but often
writes a wrong one: pass@k is high, pass@1 is not, which is where RLVR has something to sharpen.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.bases.store import ReportFor, save_built_model
from rlvr.types import Query


@dataclass(frozen=True)
class WarmupSpec:
    """Everything that decides the base model; its hash names the cache entry."""

    steps: int = 1500
    batch_size: int = 128
    lr: float = 2e-3
    warmup_steps: int = 50
    error_rate: float = 0.35
    """Probability that a step of a warm-up solution is wrong (later steps chain from it)."""
    seed: int = 0


Completion = str | list[tuple[str, bool]]
"""A warm-up completion: text the model writes, or segments (text, written by the model): a tool
rollout's observations are not the model's to learn (bases/tiny_arith_tool.py)."""


def sft_batch(
    tokenizer: PreTrainedTokenizerBase, pairs: list[tuple[str, Completion]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """[BOS] prompt completion [EOS], right-padded; labels are -100 on prompt, padding and segments
    the model does not write. Each segment is tokenized on its own, as a rollout tokenizes an
    observation (rollout/tools.py)."""
    rows, labels = [], []
    for prompt, completion in pairs:
        p = [tokenizer.bos_token_id, *tokenizer(prompt, add_special_tokens=False).input_ids]
        segments = [(completion, True)] if isinstance(completion, str) else completion
        c, lab = [], []
        for text, own in segments:
            ids = tokenizer(text, add_special_tokens=False).input_ids
            c += ids
            lab += ids if own else [-100] * len(ids)
        rows.append(p + c + [tokenizer.eos_token_id])
        labels.append([-100] * len(p) + lab + [tokenizer.eos_token_id])
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])  # [B, L]
    lab = torch.tensor([r + [-100] * (width - len(r)) for r in labels])  # [B, L]
    return ids, lab


def warm_up(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    solution: Callable[[Query, random.Random], Completion],
    spec: WarmupSpec,
    *,
    report: Callable[[int, PreTrainedModel], str] | None = None,
    report_every: int = 250,
) -> PreTrainedModel:
    """Next-token training on (prompt, solution) pairs with AdamW and a cosine schedule."""
    rng = random.Random(spec.seed)
    torch.manual_seed(spec.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.lr, betas=(0.9, 0.98), weight_decay=0.0)
    model.train()
    bar = tqdm(range(spec.steps), desc="building base model (supervised warm-up)", unit="step", leave=False)
    for step in bar:
        warm = min(1.0, (step + 1) / max(spec.warmup_steps, 1))
        cosine = 0.5 * (1 + math.cos(math.pi * step / spec.steps))
        for group in optimizer.param_groups:
            group["lr"] = spec.lr * warm * cosine
        pairs = [(q.prompt, solution(q, rng)) for q in rng.sample(queries, spec.batch_size)]
        ids, labels = sft_batch(tokenizer, pairs)  # [B, L]
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 20 == 0:
            bar.set_postfix(loss=f"{float(loss.detach()):.3f}")
        if report is not None and (step + 1) % report_every == 0:
            bar.write(f"warm-up step {step + 1}: loss {float(loss):.3f}, {report(step + 1, model)}")
            model.train()
    model.eval()
    return model


def warm_up_and_save(
    path: Path,
    recipe: dict,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    data: tuple[list[Query], list[Query]],
    solution: Callable[[Query, random.Random], Completion],
    spec: WarmupSpec,
    *,
    report: ReportFor | None = None,
    report_every: int = 250,
) -> Path:
    """The end of every base's build: warm `model` up on the warm-up queries of `data` (warm-up,
    held-out) and save it with its tokenizer and `recipe` atomically at `path`; `report(tokenizer,
    held-out queries)`, if given, makes the progress line printed every `report_every` steps."""
    queries, heldout = data
    progress = report(tokenizer, heldout) if report else None
    warm_up(model, tokenizer, queries, solution, spec, report=progress, report_every=report_every)
    return save_built_model(model, tokenizer, recipe, path)
