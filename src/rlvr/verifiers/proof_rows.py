"""What a Lean row and a Coq row share: a theorem statement, an optional preamble of commands, and a
proof taken from the completion's last fenced block of the prover's language, else its answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.base import extract_answer


@dataclass(frozen=True)
class TheoremCriteria:
    """What a proof row states: the theorem, its name and the commands before it."""

    statement: str
    name: str
    """The theorem's name, read from ``statement``."""
    preamble: str = ""


def read_theorem(
    criteria: dict[str, Any],
    statement: re.Pattern[str],
    form: str,
    language: str,
    *,
    name_group: int,
    ends_with: str = "",
) -> tuple[str, str, str]:
    """(statement, the theorem's name, preamble) of a proof row; a ValueError says which key is
    wrong. The statement must match ``statement`` (the name is its group ``name_group``), end with
    ``ends_with`` and hold no ":=" (the proof follows it); the preamble defaults to ""."""
    text = criteria.get("statement")
    match = statement.match(text) if isinstance(text, str) else None
    if match is None or not text.rstrip().endswith(ends_with) or ":=" in text:
        raise ValueError(f'"statement" must be "{form}" without ":=", got {text!r}')
    preamble = criteria.get("preamble", "")
    if not isinstance(preamble, str):
        raise ValueError(f'"preamble" must be a string of {language} commands, got {preamble!r}')
    return text.strip(), match.group(name_group), preamble


def fenced_proof(completion: str, fence: re.Pattern[str]) -> str:
    """The last block ``fence`` finds, else the ``<answer>`` content, else "", stripped."""
    blocks = fence.findall(completion)
    return blocks[-1].strip() if blocks else extract_answer(completion) or ""
