"""Where built bases live, and the record that says how one is built.

A base is shipped in the package (bases/assets/NAME) or built once into the cache
(RLVR_CACHE, default ~/.cache/rlvr, under models/NAME-DIGEST), where DIGEST is the sha256 of the
recipe that decides it. Either copy counts only if its saved recipe is the current one, so a
changed recipe rebuilds the base instead of loading stale weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.types import Query

ASSETS = Path(__file__).parent / "assets"
"""The bases the package ships, one folder per name (`rlvr build-base --out` writes one)."""

ReportFor = Callable[[PreTrainedTokenizerBase, list[Query]], Callable[[int, PreTrainedModel], str]]
"""report(tokenizer, held-out queries) -> the progress line for (step, model) while a base warms up
(bases/reports.py has one per base)."""


def cache_root() -> Path:
    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr"))


def recipe_digest(recipe: dict) -> str:
    """The sha256 of a recipe (keys sorted): what names a built base's cache entry."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def built_path(root: Path, name: str, recipe: dict) -> Path:
    """Where a base of this name and recipe is cached under ``root``."""
    return root / "models" / f"{name}-{recipe_digest(recipe)[:12]}"


def built_from(path: Path, recipe: dict) -> bool:
    """Whether ``path`` holds a base that ``save_built_model`` wrote from this recipe (compared
    through one JSON round trip, since JSON turns tuples into lists)."""
    saved = path / "rlvr_recipe.json"
    return saved.is_file() and json.loads(saved.read_text()) == json.loads(json.dumps(recipe))


def save_built_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, recipe: dict, path: Path) -> Path:
    """Write a built base (weights, tokenizer, ``rlvr_recipe.json``) to ``path`` atomically: into a
    temporary sibling first, then one rename, so a reader never sees half a model."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=".building-"))
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "rlvr_recipe.json").write_text(json.dumps(recipe, indent=2))
    try:
        tmp.rename(path)
    except OSError:  # another process finished first; its copy is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return path


@dataclass(frozen=True)
class Base:
    """One built-in base model: its name, the recipe that decides it and the build that follows it."""

    name: str
    recipe: Callable[[], dict]
    """Everything that decides the base; its hash names the cache entry."""
    build: Callable[..., Path]
    """build(path, *, report=None) -> path: warm the base up and save it atomically at `path`;
    `report(tokenizer, heldout)`, if given, makes the progress line the warm-up prints."""
    building: str = "rlvr: building the {name} base model into {path} (once; `rlvr build-base --help`)"
    """The line printed before the base builds on first use."""

    @property
    def shipped(self) -> Path:
        return ASSETS / self.name

    def cache_path(self, root: Path | None = None) -> Path:
        return built_path(cache_root() if root is None else root, self.name, self.recipe())

    def matches_recipe(self, path: Path) -> bool:
        return built_from(path, self.recipe())

    def path(self) -> Path:
        """Where the base is: shipped in the package, else in the cache, built there first (once,
        minutes on a CPU) when neither holds its current recipe."""
        if self.matches_recipe(self.shipped):
            return self.shipped
        path = self.cache_path()
        if not self.matches_recipe(path):
            print(self.building.format(name=self.name, path=path))
            self.build(path)
        return path
