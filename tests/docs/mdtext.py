"""Just enough Markdown for the doc tests: fenced code blocks, tables and their cells.

Line numbers are 1-based, as an editor shows them, so a failure can name `file:line`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def relative(path: Path) -> str:
    """The name a failure shows: relative to the repository root (a test's own page: its file name)."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name


@dataclass(frozen=True)
class Line:
    number: int
    text: str


def fenced_blocks(path: Path) -> list[list[Line]]:
    """The content lines of each fenced code block (the fences themselves left out)."""
    blocks, current, fence = [], None, ""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _FENCE.match(text)
        if current is None and match:
            current, fence = [], match.group(1)
        elif (
            current is not None
            and match
            and match.group(1).startswith(fence)
            and not text.strip()[len(match.group(1)) :]
        ):
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(Line(number, text))
    return blocks


def logical_lines(lines: list[Line]) -> list[tuple[int, str]]:
    """(first line number, text) per logical line of a block: backslash-newline continuations joined."""
    joined, start, parts = [], None, []
    for line in lines:
        start = line.number if start is None else start
        text = line.text.strip()
        if text.endswith("\\"):
            parts.append(text[:-1].strip())
            continue
        joined.append((start, " ".join([*parts, text])))
        start, parts = None, []
    if parts:
        joined.append((start, " ".join(parts)))
    return joined


def prose_lines(path: Path) -> list[Line]:
    """Every line outside fenced code blocks."""
    inside = {line.number for block in fenced_blocks(path) for line in block}
    lines = path.read_text(encoding="utf-8").splitlines()
    fences = {n for n, text in enumerate(lines, start=1) if _FENCE.match(text)}
    return [Line(n, text) for n, text in enumerate(lines, start=1) if n not in inside and n not in fences]


def table_blocks(path: Path) -> list[list[Line]]:
    """Runs of consecutive prose lines that start and end with '|': a table, or a piece of one.
    (A line of prose may start with '|', as in |G|², but does not also end with one.)"""
    blocks: list[list[Line]] = []
    previous = None
    for line in prose_lines(path):
        text = line.text.strip()
        if len(text) > 1 and text.startswith("|") and text.endswith("|"):
            if blocks and previous == line.number - 1:
                blocks[-1].append(line)
            else:
                blocks.append([line])
            previous = line.number
    return blocks


def split_cells(row: str) -> list[str]:
    """Cells of a table row. A '|' escaped as '\\|' or inside a `code span` does not split a cell;
    one leading and one trailing '|' are the row's borders."""
    cells, current, i, text = [], [], 0, row.strip()
    border_at_end = False
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
        elif char == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            close = text.find("`" * run, i + run)
            while close != -1 and text[close + run : close + run + 1] == "`":  # a longer run does not close it
                close = text.find("`" * run, close + run + 1)
            end = i + run if close == -1 else close + run  # an unclosed run is literal backticks
            current.append(text[i:end])
            i = end
        elif char == "|":
            cells.append("".join(current))
            current = []
            i += 1
            border_at_end = i == len(text)
        else:
            current.append(char)
            i += 1
    if not border_at_end:
        cells.append("".join(current))
    if text.startswith("|"):
        cells = cells[1:]
    return [cell.strip() for cell in cells]


_SEPARATOR_CELL = re.compile(r"^:?-{3,}:?$")


def is_separator(row: str) -> bool:
    cells = split_cells(row)
    return bool(cells) and all(_SEPARATOR_CELL.match(cell) for cell in cells)


def code_spans(text: str) -> list[str]:
    """The contents of the `code spans` in a piece of Markdown."""
    return [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", text)]
