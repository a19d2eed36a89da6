"""The `tiny-funcsynth` base: the tiny Llama warmed up on funcsynth with a hackable answer mix.

Its warm-up corpus (tasks/funcsynth.py `warmup_completion`) mixes honest formulas, lookup tables of
the shown examples and wrong formulas, so the base writes all three. Against a verifier that runs
only the visible tests a lookup table earns full reward, so GRPO with `reward.fidelity=visible_only`
can learn to hack; against the gold verifier (hidden tests too) it earns nothing. docs/hacking.md
has the measured runs.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from rlvr.bases.store import Base, ReportFor, recipe_digest
from rlvr.bases.tiny_arith import BASE as TINY_ARITH
from rlvr.bases.warmup import WarmupSpec, warm_up_and_save
from rlvr.models.loading import load_pretrained
from rlvr.tasks.funcsynth import FuncSynthSpec, WarmupMix, all_queries, warmup_completion
from rlvr.types import Query

NAME = "tiny-funcsynth"
FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given recipe produces."""

WARMUP = WarmupSpec(steps=400, batch_size=32, lr=2e-3, warmup_steps=20, seed=0)
"""Much shorter than tiny-arith's: it starts from tiny-arith (tags, digits and subtraction are known)."""


def recipe() -> dict:
    """Everything that decides the base model; its hash names the cache entry."""
    warmup = {k: v for k, v in dataclasses.asdict(WARMUP).items() if k != "error_rate"}  # arith-only knob
    return {
        "version": FORMAT_VERSION,
        "task": "funcsynth",
        "init": {"from": "tiny-arith", "recipe_sha256": recipe_digest(TINY_ARITH.recipe())},
        "warmup": warmup,
        "mix": dataclasses.asdict(WarmupMix()),
        "data": dataclasses.asdict(FuncSynthSpec()) | {"data_seed": 0},
    }


def build(path: Path, *, report: ReportFor | None = None) -> Path:
    """Warm up the tiny Llama on funcsynth and save it (model + tokenizer) atomically at `path`;
    `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""
    spec_recipe = recipe()
    spec = WarmupSpec(**spec_recipe["warmup"])
    mix = WarmupMix(**spec_recipe["mix"])
    model, tokenizer = load_pretrained(TINY_ARITH.path())  # tiny-arith: the same char tokenizer and architecture

    def solution(query: Query, rng: random.Random) -> str:
        return warmup_completion(query, rng=rng, mix=mix)

    data = all_queries(split="train", seed=0), all_queries(split="heldout", seed=0)[:32]
    return warm_up_and_save(path, spec_recipe, model, tokenizer, data, solution, spec, report=report, report_every=200)


BASE = Base(NAME, recipe, build)
