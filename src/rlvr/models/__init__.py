"""Policies: the embedded tiny base models (shipped, or built once from their recipes and cached)
or any local Hugging Face model."""

from __future__ import annotations

from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.errors import UserError
from rlvr.models import funcsynth_base
from rlvr.models.arith_base import (
    EMBEDDED,
    SHIPPED,
    build_embedded,
    cache_root,
    embedded_path,
    embedded_recipe,
    matches_recipe,
)
from rlvr.models.loading import load_pretrained

__all__ = [
    "EMBEDDED",
    "SHIPPED",
    "ModelNotFoundError",
    "build_embedded",
    "cache_root",
    "embedded_path",
    "embedded_recipe",
    "funcsynth_base",
    "load_policy",
    "resolve_model_path",
]


class ModelNotFoundError(UserError):
    """model.name is neither the embedded model nor a local Hugging Face model directory."""


def resolve_model_path(name: str) -> Path:
    if name == EMBEDDED:
        if matches_recipe(SHIPPED):
            return SHIPPED
        path = embedded_path()
        if matches_recipe(path):
            return path
        print(f"rlvr: building the embedded base model into {path} (once; about 12 minutes on 2 cores)")
        return build_embedded(path)
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
        funcsynth_base.build(path)
    return path


def load_policy(name: str, device: str = "cpu") -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    return load_pretrained(resolve_model_path(name), device)
