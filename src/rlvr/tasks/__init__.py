"""Tasks: what a run trains and is evaluated on. Each registers itself in tasks/registry.py, whose
`load_task(task section)` returns (train queries, held-out queries).

Importing this package is cheap (no torch): `load_task` and the registry load a task's modules
when it is first used; `DatasetError` loads on first access.
"""

from __future__ import annotations

from typing import Any

from rlvr.tasks.registry import get_task, load_heldout, load_task, task_names

__all__ = ["DatasetError", "get_task", "load_heldout", "load_task", "task_names"]


def __getattr__(name: str) -> Any:
    if name == "DatasetError":
        from rlvr.tasks.dataset import DatasetError

        return DatasetError
    raise AttributeError(f"module 'rlvr.tasks' has no attribute {name!r}")
