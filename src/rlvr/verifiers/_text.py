"""Text helpers shared by verifiers and their worker processes (standard library only)."""

from __future__ import annotations

DETAIL_CHARS = 80
"""Longest quoted answer in a result's one-line detail; completions can be megabytes long."""


def clip(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` shortened to at most ``limit`` characters, marked with "..." when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
