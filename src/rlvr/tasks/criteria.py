"""A row's verification criteria from a dataset cell: an object, or the same object as JSON text.

Shared by the TRL reward adapter and the Hugging Face dataset loader. Arrow stores a column of
objects as one struct type, so rows of one verifier type gain the other types' keys set to null;
null top-level keys are dropped here, which undoes that for flat criteria (not inside nested lists,
which is why mixed-type datasets should store criteria as JSON strings).
"""

from __future__ import annotations

import json
from typing import Any

from rlvr.errors import UserError


class CriteriaError(UserError):
    """A criteria cell is not a JSON object with a "type"; the message names the row and column."""


def parse_criteria(value: Any, where: str) -> dict[str, Any]:
    """The criteria object in ``value`` (a dict or JSON text), null top-level keys dropped."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise CriteriaError(f"{where}: not valid JSON ({error})") from None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise CriteriaError(
            f'{where}: expected a criteria object with a "type" (e.g. {{"type": "math", "answer": "42"}}), '
            f"got {value!r:.80}"
        )
    return {key: item for key, item in value.items() if item is not None}
