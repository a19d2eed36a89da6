"""The embedded `tiny-arith` base: the tiny Llama warmed up on worked arithmetic (with mistakes),
shipped in the package, or built once from its recipe and cached. The other bases but
tiny-arith-deep start from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rlvr.bases.store import Base, ReportFor, save_built_model
from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.bases.warmup import WarmupSpec, warm_up
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.tasks.arith import ArithSpec, make_queries, worked_solution

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


def build(path: Path, *, report: ReportFor | None = None) -> Path:
    """Warm up the tiny Llama on arith and save it (model + tokenizer) atomically at `path`;
    `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""
    spec_recipe = recipe()
    spec = WarmupSpec(**spec_recipe["warmup"])
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(tokenizer, TinyArch(**spec_recipe["arch"]), seed=spec.seed)
    data = spec_recipe["data"]
    arith = ArithSpec(**{k: data[k] for k in ("operands", "digits", "max_value", "operators")})
    queries = make_queries(data["num_train"], split="train", seed=data["data_seed"], spec=arith)
    heldout = make_queries(200, split="heldout", seed=data["data_seed"], spec=arith)
    warm_up(
        model,
        tokenizer,
        queries,
        lambda q, rng: worked_solution(q, rng=rng, error_rate=spec.error_rate),
        spec,
        report=report(tokenizer, heldout) if report else None,
    )
    return save_built_model(model, tokenizer, spec_recipe, path)


BASE = Base(
    NAME,
    recipe,
    build,
    building="rlvr: building the embedded base model into {path} (once; about 12 minutes on 2 cores)",
)
