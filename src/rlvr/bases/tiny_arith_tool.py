"""The `tiny-arith-tool` base: tiny-arith, its vocabulary grown by the tool tags (sandbox/tool.py
TOOL_TAGS), warmed up on arithmetic with two-digit operands, too large for it to compute reliably,
where a share of the solutions call the python tool instead of working the steps:

    (47*86)-13  ->  <think><tool_call>print((47*86)-13)</tool_call><tool_response>4029
                    </tool_response></think><answer>4029</answer>

and the rest work the steps as tiny-arith does (each step wrong with probability ERROR_RATE).
The observation, `<tool_response>…</tool_response>`, is tokenized on its own and left out of the
warm-up loss, as a tool rollout leaves it out of the RL loss (rollout/tools.py). So the base calls
the tool sometimes (about TOOL_RATE of its samples) and is right far more often when it does:
`rlvr train --config configs/arith-tool.yaml` measures whether RL raises the rate (README).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from rlvr.bases.store import Base, ReportFor, recipe_digest
from rlvr.bases.tiny_arith import BASE as TINY_ARITH
from rlvr.bases.tiny_arith import arith_queries
from rlvr.bases.warmup import WarmupSpec, warm_up_and_save
from rlvr.models.loading import load_pretrained
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.sandbox.tool import FORMATS, TOOL_TAGS
from rlvr.tasks.arith import ArithSpec, expression, worked_solution
from rlvr.types import Query

NAME = "tiny-arith-tool"
FORMAT_VERSION = 2
"""Bump when the tokenizer or the warm-up code changes what a given recipe produces. 2: the char
tokenizer keeps every newline a token (it had turned a run of them into <unk>)."""

TASK = ArithSpec(operands=3, digits=2, max_value=9999)
"""Two-digit operands, intermediate values up to 9999: products such as 47*86 that tiny-arith never saw."""

TOOL_RATE = 0.2
"""Share of warm-up solutions that call the tool."""
ERROR_RATE = 0.2
"""Probability that a worked step of a warm-up solution is wrong (the chain continues from it)."""

WARMUP = WarmupSpec(steps=800, batch_size=64, lr=1e-3, warmup_steps=20, error_rate=ERROR_RATE, seed=0)


def recipe() -> dict:
    """Everything that decides the base model; its hash names the cache entry."""
    return {
        "version": FORMAT_VERSION,
        "task": "arith",
        "init": {"from": "tiny-arith", "recipe_sha256": recipe_digest(TINY_ARITH.recipe())},
        "tool_tags": TOOL_TAGS,
        "tool_rate": TOOL_RATE,
        "warmup": dataclasses.asdict(WARMUP),
        "data": dataclasses.asdict(TASK) | {"num_train": 5000, "data_seed": 0},
    }


def tool_solution(query: Query, rng: random.Random) -> list[tuple[str, bool]]:
    """A warm-up completion as (text, written by the model) segments: a tool call with its
    observation (TOOL_RATE of them), or worked steps with mistakes."""
    if rng.random() >= TOOL_RATE:
        return [(worked_solution(query, rng=rng, error_rate=ERROR_RATE), True)]
    tags = FORMATS["tags"]
    answer = query.verifier["answer"]
    call = f"<think>{tags.call_open}print({expression(query.meta['operands'], query.meta['ops'])}){tags.call_close}"
    return [(call, True), (tags.observation(f"{answer}\n"), False), (f"</think><answer>{answer}</answer>", True)]


def build(path: Path, *, report: ReportFor | None = None) -> Path:
    """Grow tiny-arith's vocabulary by the tool tags, warm it up on tool and worked solutions, and
    save it (model + tokenizer) atomically at `path`; `report(tokenizer, heldout)`, if given, makes
    the progress line warm_up prints."""
    spec = recipe()
    model, _ = load_pretrained(TINY_ARITH.path())
    tokenizer = build_char_tokenizer(tuple(TOOL_TAGS))  # tiny-arith's ids, then the four tags
    model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    data = arith_queries(spec["data"], TASK)
    return warm_up_and_save(path, spec, model, tokenizer, data, tool_solution, WARMUP, report=report, report_every=200)


BASE = Base(NAME, recipe, build)
