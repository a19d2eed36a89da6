"""The embedded `tiny-arith` base: the tiny Llama warmed up on worked arithmetic (with mistakes),
built once from its recipe and cached, or shipped in the package."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.models.tiny import TinyArch, build_tiny_llama
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.models.warmup import WarmupSpec, built_from, built_path, save_built_model, warm_up
from rlvr.tasks.arith import ArithSpec, make_queries, worked_solution
from rlvr.types import Query

ReportFor = Callable[[PreTrainedTokenizerBase, list[Query]], Callable[[int, PreTrainedModel], str]]
"""report(tokenizer, held-out queries) -> the progress line for (step, model): evaluation lives
above models/ (engine/evaluate.py), so a builder is handed it rather than importing it."""


EMBEDDED = "tiny-arith"
BASE_FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given spec produces."""


def cache_root() -> Path:
    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr"))


def embedded_recipe() -> dict:
    """Everything that decides the embedded base model; its hash names the cache entry."""
    return {
        "version": BASE_FORMAT_VERSION,
        "arch": dataclasses.asdict(TinyArch()),
        "warmup": dataclasses.asdict(WarmupSpec()),
        "data": dataclasses.asdict(ArithSpec()) | {"num_train": 5000, "data_seed": 0},
    }


def embedded_path() -> Path:
    return built_path(cache_root(), EMBEDDED, embedded_recipe())


SHIPPED = Path(__file__).parent / "assets" / EMBEDDED
"""The embedded base as shipped in the package (built by `rlvr build-base --out` this folder)."""


def build_embedded(path: Path, *, report: ReportFor | None = None) -> Path:
    """Warm up the tiny Llama on arith and save it (model + tokenizer) atomically at `path`;
    `report(tokenizer, heldout)`, if given, makes the progress line warm_up prints."""
    recipe = embedded_recipe()
    spec = WarmupSpec(**recipe["warmup"])
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(tokenizer, TinyArch(**recipe["arch"]), seed=spec.seed)
    data = recipe["data"]
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
    return save_built_model(model, tokenizer, recipe, path)


def matches_recipe(path: Path) -> bool:
    return built_from(path, embedded_recipe())


def embedded_dir() -> Path:
    """Where tiny-arith is: shipped in the package, else in the cache, built there first (once) when
    neither holds it. `model.name=tiny-arith` and the bases warmed up from it all start here."""
    if matches_recipe(SHIPPED):
        return SHIPPED
    path = embedded_path()
    if not matches_recipe(path):
        print(f"rlvr: building the embedded base model into {path} (once; about 12 minutes on 2 cores)")
        build_embedded(path)
    return path
