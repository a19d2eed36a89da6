"""Policies: the embedded tiny base model (built once and cached) or any local Hugging Face model."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from rlvr.errors import UserError
from rlvr.models.tiny import TinyArch, build_tiny_llama
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.models import funcsynth_base
from rlvr.models.warmup import WarmupSpec, save_built_model, warm_up
from rlvr.tasks.arith import ArithSpec, make_queries, worked_solution

EMBEDDED = "tiny-arith"
BASE_FORMAT_VERSION = 1
"""Bump when the tokenizer or the warm-up code changes what a given spec produces."""


class ModelNotFoundError(UserError):
    """model.name is neither the embedded model nor a local Hugging Face model directory."""


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
    digest = hashlib.sha256(json.dumps(embedded_recipe(), sort_keys=True).encode()).hexdigest()[:12]
    return cache_root() / "models" / f"{EMBEDDED}-{digest}"


SHIPPED = Path(__file__).parent / "assets" / EMBEDDED
"""The embedded base as shipped in the package (built by `rlvr build-base --out` this folder)."""


def _progress_report(tokenizer: PreTrainedTokenizerBase, queries: list) -> Callable[[int, PreTrainedModel], str]:
    from rlvr.train.evaluate import evaluate_heldout
    from rlvr.verifiers import RewardFunction

    reward_fn = RewardFunction()

    def report(step: int, model: PreTrainedModel) -> str:
        result = evaluate_heldout(model, tokenizer, queries, reward_fn, n=4, temperature=1.0,
                                  top_p=1.0, max_new_tokens=40)
        return f"held-out pass@1 {result.pass_at_1:.3f} (n=4, T=1), greedy {result.greedy:.3f}"

    return report


def build_embedded(path: Path, *, report: bool = False) -> Path:
    """Warm up the tiny Llama on arith and save it (model + tokenizer) atomically at `path`."""
    recipe = embedded_recipe()
    spec = WarmupSpec(**recipe["warmup"])
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(tokenizer, TinyArch(**recipe["arch"]), seed=spec.seed)
    data = recipe["data"]
    arith = ArithSpec(**{k: data[k] for k in ("operands", "digits", "max_value", "operators")})
    queries = make_queries(data["num_train"], split="train", seed=data["data_seed"], spec=arith)
    heldout = make_queries(200, split="heldout", seed=data["data_seed"], spec=arith)
    warm_up(model, tokenizer, queries,
            lambda q, rng: worked_solution(q, rng=rng, error_rate=spec.error_rate), spec,
            report=_progress_report(tokenizer, heldout) if report else None)
    return save_built_model(model, tokenizer, recipe, path)


def _matches_recipe(path: Path) -> bool:
    recipe = path / "rlvr_recipe.json"
    return recipe.is_file() and json.loads(recipe.read_text()) == embedded_recipe()


def resolve_model_path(name: str) -> Path:
    if name == EMBEDDED:
        if _matches_recipe(SHIPPED):
            return SHIPPED
        path = embedded_path()
        if _matches_recipe(path):
            return path
        print(f"rlvr: building the embedded base model into {path} (once; about 12 minutes on 2 cores)")
        return build_embedded(path, report=True)
    if name == funcsynth_base.NAME:
        return _resolve_funcsynth()
    path = Path(name).expanduser()
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"model.name={name!r} is neither '{EMBEDDED}' nor a directory with a Hugging Face "
            f"config.json (nor '{funcsynth_base.NAME}'); models cannot be downloaded here, so pass a local path"
        )
    return path


def _resolve_funcsynth() -> Path:
    if funcsynth_base.matches_recipe(funcsynth_base.SHIPPED):
        return funcsynth_base.SHIPPED
    path = funcsynth_base.cache_path(cache_root())
    if not funcsynth_base.matches_recipe(path):
        print(f"rlvr: building the {funcsynth_base.NAME} base model into {path} (once; see docs/hacking.md)")
        funcsynth_base.build(path, report=True)
    return path


def load_policy(name: str, device: str = "cpu") -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    path = resolve_model_path(name)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.bos_token_id is None:
        tokenizer.bos_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).to(device)
    return model, tokenizer

