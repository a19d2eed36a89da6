"""The `tiny-arith-deep` base: a tiny Llama warmed up on arith chains of 2 to 4 operands and on a
handful of 5-operand ones, so that it rarely solves a held-out 5-operand chain.

This is the start of `rlvr reproduce expansion` (docs/reproduce.md): the question is whether RL
with a correct-answer reward lifts pass@k at *every* k on a depth the base almost never completes
(Wen et al. 2025; ProRL), not only at small k as on tiny-arith (Yue et al. 2025).

The recipe, and why (docs/reproduce.md has the measurements behind it):
- chains of 2-4 operands teach the single steps and how to chain them; 4-operand chains are rare
  (8% of the share of 3-operand ones), and were learned anyway;
- 5-operand chains come from only DEEP_CHAINS distinct expressions, each seen a few times: enough
  that the base sometimes writes a right 5-operand chain, too few to learn the depth (with none,
  it never does, and RL has nothing to reinforce);
- intermediate values go up to 999 (three-digit steps such as 84*7=588). Measured afterwards, the
  same recipe at max_value 99 gives a like base (CoT-pass@256 10% as well, answer pass@256 33%
  against 41%); the study was measured with 999, so 999 stays;
- no mistakes in the warm-up solutions (error_rate 0): the failures left are of depth, not of sums.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from rlvr.bases.store import Base, ReportFor
from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.bases.warmup import WarmupSpec, warm_up_and_save
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.tasks.arith import ArithSpec, make_queries, worked_solution
from rlvr.types import Query

NAME = "tiny-arith-deep"
FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given recipe produces."""

ARCH = TinyArch(max_positions=256)
"""tiny-arith's shape with room for a 5-operand prompt and its 70-character solution."""

WARMUP = WarmupSpec(steps=1500, batch_size=64, lr=2e-3, warmup_steps=50, error_rate=0.0, seed=0)

TASK = ArithSpec(operands=5, max_value=999)
"""The held-out task the base is measured on: 5-operand chains (the digits and operators of arith)."""

MIX = {2: 250, 3: 4000, 4: 4000, 5: 4000}
"""Distinct train-split queries drawn per chain length (2-operand chains: every one there is)."""

SHARE = {2: 1.0, 3: 1.0, 4: 0.08, 5: 0.002}
"""Each length's share of the warm-up list, relative to the longest draw: 4000 x 0.002 = 8 distinct
5-operand chains (DEEP_CHAINS)."""

DEEP_CHAINS = round(max(MIX.values()) * SHARE[5])


def recipe(share: dict[int, float] = SHARE, task: ArithSpec = TASK) -> dict:
    """Everything that decides the base model; its hash names the cache entry. `share` and `task`
    make variants of the recipe (benchmarks/deep_base_variants.py measures why this one)."""
    return {
        "version": FORMAT_VERSION,
        "task": "arith",
        "arch": dataclasses.asdict(ARCH),
        "warmup": dataclasses.asdict(WARMUP),
        "data": dataclasses.asdict(task) | {"mix": MIX, "share": share, "data_seed": 0},
    }


def warmup_queries(share: dict[int, float] = SHARE, task: ArithSpec = TASK, data_seed: int = 0) -> list[Query]:
    """The warm-up list: each length's distinct queries, repeated or cut to its share (a length
    whose share is 0 is left out)."""
    longest = max(MIX.values())
    queries: list[Query] = []
    for operands, count in MIX.items():
        if not share.get(operands):
            continue
        drawn = _available(count, dataclasses.replace(task, operands=operands), data_seed)
        size = max(1, round(longest * share[operands]))
        queries += (drawn * (size // len(drawn) + 1))[:size]
    return queries


def _available(count: int, spec: ArithSpec, data_seed: int) -> list[Query]:
    """Up to `count` distinct train queries of `spec` (there are only about 300 of 2 operands)."""
    while True:
        try:
            return make_queries(count, split="train", seed=data_seed, spec=spec)
        except ValueError:
            if count <= 1:
                raise
            count = int(count * 0.9)


def build(
    path: Path, *, report: ReportFor | None = None, share: dict[int, float] = SHARE, task: ArithSpec = TASK
) -> Path:
    """Warm a fresh tiny Llama up on the mix and save it (model + tokenizer) atomically at `path`;
    `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(tokenizer, ARCH, seed=WARMUP.seed)

    def solution(query: Query, rng: random.Random) -> str:
        return worked_solution(query, rng=rng, error_rate=WARMUP.error_rate)

    data = warmup_queries(share, task), make_queries(200, split="heldout", seed=0, spec=task)
    return warm_up_and_save(path, recipe(share, task), model, tokenizer, data, solution, WARMUP, report=report)


BASE = Base(NAME, recipe, build)
