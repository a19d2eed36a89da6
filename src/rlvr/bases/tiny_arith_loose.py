"""The `tiny-arith-loose` base: tiny-arith warmed up further on arith solutions of which half leave
out the ``<think>`` tags (``7*8=56;56-5=51<answer>51</answer>``).

The answer stays in its ``<answer>`` block, so the gold verifier reads either layout the same way,
and the steps are wrong at tiny-arith's rate in both: whether a completion is in the R1 format
(verifiers/format.py) is, by construction, independent of whether it is right. tiny-arith writes
the format on every sample, so a format-only reward gives it nothing to learn (every group has zero
advantage); this base samples both layouts, so the format is something a reward can teach.
`rlvr reproduce controls` starts from it (docs/reproduce.md).
"""

from __future__ import annotations

import random
from pathlib import Path

from rlvr.bases.store import Base, ReportFor
from rlvr.bases.tiny_arith import build_further, further_recipe
from rlvr.bases.warmup import WarmupSpec
from rlvr.tasks.arith import worked_solution
from rlvr.types import Query

NAME = "tiny-arith-loose"
FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given recipe produces."""

UNTAGGED_RATE = 0.5
"""Share of warm-up solutions written without the <think> tags."""

WARMUP = WarmupSpec(steps=600, batch_size=64, lr=1e-3, warmup_steps=20, error_rate=0.35, seed=0)
"""Short: it starts from tiny-arith, which already solves the task; only the second layout is new."""


def untagged(solution: str) -> str:
    """A worked solution with its <think> tags left out: the reasoning, then the answer block."""
    return solution.replace("<think>", "", 1).replace("</think>", "", 1)


def recipe() -> dict:
    """Everything that decides the base model; its hash names the cache entry."""
    return further_recipe(FORMAT_VERSION, WARMUP, untagged_rate=UNTAGGED_RATE)


def build(path: Path, *, report: ReportFor | None = None) -> Path:
    """Warm tiny-arith up on solutions in both layouts and save it (model + tokenizer) atomically at
    `path`; `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""

    def solution(query: Query, rng: random.Random) -> str:
        text = worked_solution(query, rng=rng, error_rate=WARMUP.error_rate)
        return untagged(text) if rng.random() < UNTAGGED_RATE else text

    return build_further(path, recipe(), WARMUP, solution, report)


BASE = Base(NAME, recipe, build)
