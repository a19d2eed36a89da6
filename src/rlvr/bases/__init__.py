"""The built-in base models: tiny Llamas warmed up from recipes (one module each), shipped in the
package or built once into the cache, and the resolution of `model.name` to a model directory.

models/ loads and runs a model from a directory; a caller resolves a name here first. Resolving a
built-in name whose current recipe neither the package nor the cache holds builds that base
(minutes on a CPU), and says so on one line before it starts.
"""

from __future__ import annotations

from pathlib import Path

from rlvr.bases import (
    tiny_arith,
    tiny_arith_check,
    tiny_arith_deep,
    tiny_arith_loose,
    tiny_arith_tool,
    tiny_funcsynth,
)
from rlvr.bases.store import Base, cache_root
from rlvr.errors import UserError

__all__ = [
    "BASES",
    "BASE_NAMES",
    "EMBEDDED",
    "SHIPPED",
    "Base",
    "ModelNotFoundError",
    "cache_root",
    "check_model",
    "resolve_model_path",
]

EMBEDDED = tiny_arith.NAME
"""The default policy (model.name), from which most other bases are warmed up further."""
SHIPPED = tiny_arith.BASE.shipped
"""The embedded base as shipped in the package."""

BASES: dict[str, Base] = {
    base.name: base
    for base in (
        tiny_arith.BASE,
        tiny_funcsynth.BASE,
        tiny_arith_check.BASE,
        tiny_arith_deep.BASE,
        tiny_arith_tool.BASE,
        tiny_arith_loose.BASE,
    )
}
BASE_NAMES = tuple(BASES)
"""Every model.name rlvr resolves without a path."""


class ModelNotFoundError(UserError):
    """model.name is neither a built-in base nor a local Hugging Face model directory."""


def _is_model_dir(name: str) -> bool:
    return (Path(name).expanduser() / "config.json").is_file()


def check_model(name: str, label: str) -> None:
    """Refuse a `name` that `resolve_model_path` would not find, without building or loading
    anything; `label` (the flag or field that gave it) starts the message."""
    if name not in BASES and not _is_model_dir(name):
        raise ModelNotFoundError(
            f"{label} {name}: neither a built-in base ({', '.join(BASE_NAMES)}) nor a directory with a "
            "Hugging Face config.json"
        )


def resolve_model_path(name: str) -> Path:
    """The directory `name` (model.name) stands for: a built-in base's (building it first if it is
    neither shipped nor cached), or `name` itself when it holds a Hugging Face config.json."""
    if name in BASES:
        return BASES[name].path()
    path = Path(name).expanduser()
    if not _is_model_dir(name):
        others = ", ".join(n for n in BASE_NAMES if n != EMBEDDED)
        raise ModelNotFoundError(
            f"model.name={name!r} is neither '{EMBEDDED}' nor a directory with a Hugging Face "
            f"config.json (nor one of {others}); models cannot be downloaded here, so pass a local path"
        )
    return path
