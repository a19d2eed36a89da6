"""docs/architecture.md's layout lists every module of src/rlvr/ (package faces aside), and only
modules that exist: the map a newcomer reads is the tree as it is."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "rlvr"


def _layout() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("## Layout, one line per module")
    return text[start : text.index("\n## ", start + 1)]


def _listed() -> set[str]:
    return {path for path in re.findall(r"`([\w/]+\.py)`", _layout()) if not path.startswith("tests/")}


def test_every_module_is_on_the_map() -> None:
    modules = {p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if p.name != "__init__.py"}
    assert sorted(modules - _listed()) == []


def test_every_module_on_the_map_exists() -> None:
    assert sorted(path for path in _listed() if not (SRC / path).is_file()) == []


def test_one_line_per_module() -> None:
    lines = [line for line in _layout().splitlines() if line.startswith("- `")]
    named = [path for line in lines for path in re.findall(r"`([\w/]+\.py)`", line.split(":")[0])]
    assert len(named) == len(set(named)), "a module is described on two lines"
