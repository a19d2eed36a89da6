"""Policies: the embedded tiny base models (shipped, or built once from their recipes and cached)
or any local Hugging Face model."""

from __future__ import annotations

from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.errors import UserError
from rlvr.models import deep_base, funcsynth_base, selfcheck_base, tool_base
from rlvr.models.arith_base import (
    EMBEDDED,
    SHIPPED,
    build_embedded,
    cache_root,
    embedded_dir,
    embedded_path,
    embedded_recipe,
)
from rlvr.models.loading import enable_gradient_checkpointing, load_pretrained

__all__ = [
    "EMBEDDED",
    "SHIPPED",
    "ModelNotFoundError",
    "build_embedded",
    "cache_root",
    "embedded_path",
    "embedded_recipe",
    "BASE_NAMES",
    "DERIVED",
    "deep_base",
    "funcsynth_base",
    "load_policy",
    "resolve_model_path",
    "tool_base",
]


DERIVED = {base.NAME: base for base in (funcsynth_base, selfcheck_base, deep_base, tool_base)}
"""The other built bases, by name (warmed up further from tiny-arith, or from scratch on another
mix): each module has NAME, SHIPPED, matches_recipe, cache_path and build."""

BASE_NAMES = (EMBEDDED, *DERIVED)
"""Every model.name rlvr resolves without a path."""


class ModelNotFoundError(UserError):
    """model.name is neither the embedded model nor a local Hugging Face model directory."""


def resolve_model_path(name: str) -> Path:
    if name == EMBEDDED:
        return embedded_dir()
    if name in DERIVED:
        return _resolve_derived(DERIVED[name])
    path = Path(name).expanduser()
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"model.name={name!r} is neither '{EMBEDDED}' nor a directory with a Hugging Face "
            f"config.json (nor one of {', '.join(DERIVED)}); models cannot be downloaded here, so pass a local path"
        )
    return path


def _resolve_derived(base) -> Path:
    if base.matches_recipe(base.SHIPPED):
        return base.SHIPPED
    path = base.cache_path(cache_root())
    if not base.matches_recipe(path):
        print(f"rlvr: building the {base.NAME} base model into {path} (once; `rlvr build-base --help`)")
        base.build(path)
    return path


def load_policy(
    name: str, device: str = "cpu", *, dtype: str = "float32", gradient_checkpointing: bool = False
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model `name` resolves to, with its weights in `dtype` (model.dtype), its decoder layers
    checkpointed if asked (model.gradient_checkpointing), and its tokenizer."""
    model, tokenizer = load_pretrained(resolve_model_path(name), device, dtype)
    if gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model, tokenizer
