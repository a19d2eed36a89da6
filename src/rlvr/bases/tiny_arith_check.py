"""The `tiny-arith-check` base: tiny-arith warmed up further on arith solutions that sometimes check
a step and redo it when the check disagrees (tasks/arith.py `worked_solution(check_rate=...)`).

The base checks a step at a low rate (CHECK_RATE of the warm-up corpus) and makes mistakes at
tiny-arith's rate, so a checked step is more often right than an unchecked one. Whether RL with an
answer-only reward raises the rate of checking, as DeepSeek-R1 reports self-verification emerging,
is what `rlvr reproduce self-verification` measures (docs/reproduce.md).
"""

from __future__ import annotations

import random
from pathlib import Path

from rlvr.bases.store import Base, ReportFor
from rlvr.bases.tiny_arith import build_further, further_recipe
from rlvr.bases.warmup import WarmupSpec
from rlvr.tasks.arith import worked_solution
from rlvr.types import Query

NAME = "tiny-arith-check"
FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given recipe produces."""

CHECK_RATE = 0.2
"""Share of warm-up steps followed by a check."""

WARMUP = WarmupSpec(steps=1000, batch_size=64, lr=1e-3, warmup_steps=20, error_rate=0.35, seed=0)
"""Short: it starts from tiny-arith, which already solves the task; only the check format is new."""


def recipe() -> dict:
    """Everything that decides the base model; its hash names the cache entry."""
    return further_recipe(FORMAT_VERSION, WARMUP, check_rate=CHECK_RATE)


def build(path: Path, *, report: ReportFor | None = None) -> Path:
    """Warm tiny-arith up on solutions with checks and save it (model + tokenizer) atomically at
    `path`; `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""

    def solution(query: Query, rng: random.Random) -> str:
        return worked_solution(query, rng=rng, error_rate=WARMUP.error_rate, check_rate=CHECK_RATE)

    return build_further(path, recipe(), WARMUP, solution, report)


BASE = Base(NAME, recipe, build)
