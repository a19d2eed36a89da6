"""The files the lab finds under its folder of runs (eval.json, compare.json, capture.html) and
the JSON reports among them it reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def find_files(root: str | Path, name: str) -> list[Path]:
    """Every file called `name` under root (any depth), sorted by path; [] when root is no folder."""
    root = Path(root)
    return sorted(root.rglob(name)) if root.is_dir() else []


def read_report(path: str | Path, keys: set[str]) -> dict[str, Any] | None:
    """The JSON object in `path` when it has every one of `keys`; None when the file is unreadable,
    not JSON, or a report of another kind."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return report if isinstance(report, dict) and keys <= report.keys() else None
