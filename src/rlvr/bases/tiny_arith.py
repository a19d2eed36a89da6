"""The embedded `tiny-arith` base: the tiny Llama warmed up on worked arithmetic (with mistakes),
shipped in the package, or built once from its recipe and cached. The other bases but
tiny-arith-deep start from it."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

from rlvr.bases.store import Base, ReportFor, recipe_digest
from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.bases.warmup import WarmupSpec, warm_up_and_save
from rlvr.models.loading import load_pretrained
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.tasks.arith import ArithSpec, make_queries, worked_solution
from rlvr.types import Query

NAME = "tiny-arith"
BASE_FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given spec produces."""


def recipe() -> dict:
    """Everything that decides the embedded base model; its hash names the cache entry."""
    return {
        "version": BASE_FORMAT_VERSION,
        "arch": dataclasses.asdict(TinyArch()),
        "warmup": dataclasses.asdict(WarmupSpec()),
        "data": dataclasses.asdict(ArithSpec()) | {"num_train": 5000, "data_seed": 0},
    }


def arith_queries(data: dict, spec: ArithSpec | None = None) -> tuple[list[Query], list[Query]]:
    """An arith recipe's warm-up queries (data["num_train"] of the train split) and 200 held-out
    ones, drawn with data["data_seed"] from `spec` (default: the one the data section records)."""
    if spec is None:
        spec = ArithSpec(**{k: data[k] for k in ("operands", "digits", "max_value", "operators")})
    queries = make_queries(data["num_train"], split="train", seed=data["data_seed"], spec=spec)
    return queries, make_queries(200, split="heldout", seed=data["data_seed"], spec=spec)


def build(path: Path, *, report: ReportFor | None = None) -> Path:
    """Warm up the tiny Llama on arith and save it (model + tokenizer) atomically at `path`;
    `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""
    spec_recipe = recipe()
    spec = WarmupSpec(**spec_recipe["warmup"])
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(tokenizer, TinyArch(**spec_recipe["arch"]), seed=spec.seed)

    def solution(query: Query, rng: random.Random) -> str:
        return worked_solution(query, rng=rng, error_rate=spec.error_rate)

    data = arith_queries(spec_recipe["data"])
    return warm_up_and_save(path, spec_recipe, model, tokenizer, data, solution, spec, report=report)


BASE = Base(
    NAME,
    recipe,
    build,
    building="rlvr: building the embedded base model into {path} (once; about 12 minutes on 2 cores)",
)


def further_recipe(version: int, warmup: WarmupSpec, **twist) -> dict:
    """The recipe of a base warmed up further from tiny-arith on arith solutions with a twist
    (tiny-arith-check's checks, tiny-arith-loose's untagged layout): `twist` names it."""
    return {
        "version": version,
        "task": "arith",
        "init": {"from": NAME, "recipe_sha256": recipe_digest(recipe())},
        "warmup": dataclasses.asdict(warmup),
        **twist,
        "data": dataclasses.asdict(ArithSpec()) | {"num_train": 5000, "data_seed": 0},
    }


def build_further(
    path: Path,
    spec_recipe: dict,
    warmup: WarmupSpec,
    solution: Callable[[Query, random.Random], str],
    report: ReportFor | None = None,
) -> Path:
    """Warm tiny-arith up further on `solution`s of the recipe's arith queries and save the result
    (model + tokenizer, the same char tokenizer and architecture) atomically at `path`."""
    model, tokenizer = load_pretrained(BASE.path())
    data = arith_queries(spec_recipe["data"])
    return warm_up_and_save(
        path, spec_recipe, model, tokenizer, data, solution, warmup, report=report, report_every=100
    )
