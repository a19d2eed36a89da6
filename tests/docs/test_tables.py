"""Every Markdown table in README.md and docs/*.md renders: a header row, a separator row with the
same number of cells, and body rows with that number of cells (GitHub drops extra cells and pads
missing ones, so a stray '|' silently shifts a row's text into the wrong column)."""

from __future__ import annotations

import pytest

from .mdtext import DOCS, is_separator, relative, split_cells, table_blocks


def table_problems(path) -> list[str]:
    problems = []
    for block in table_blocks(path):
        where = f"{relative(path)}:{block[0].number}"
        if len(block) < 2 or not is_separator(block[1].text):
            problems.append(
                f"{where}: rows starting with '|' without a header and a |---| separator row under "
                f"it (a blank line inside a table ends it): {block[0].text[:80]!r}"
            )
            continue
        columns = len(split_cells(block[0].text))
        separator = len(split_cells(block[1].text))
        if separator != columns:
            problems.append(f"{where}: header has {columns} cells, the separator row {separator}")
        for row in block[2:]:
            cells = len(split_cells(row.text))
            if cells != columns:
                problems.append(
                    f"{relative(path)}:{row.number}: {cells} cells, the header has {columns} "
                    f"(escape a '|' in text as '\\|'): {row.text[:80]!r}"
                )
    return problems


def _page(path):
    return pytest.param(path, id=relative(path))


@pytest.mark.parametrize("path", [_page(path) for path in DOCS])
def test_every_table_renders(path):
    assert table_problems(path) == []


@pytest.mark.parametrize(
    "row, cells",
    [
        ("| a | b |", ["a", "b"]),
        ("a | b", ["a", "b"]),  # borders are optional
        ("| `x | y` | b |", ["`x | y`", "b"]),  # a code span keeps its '|'
        ("| \\|G\\|² | b |", ["\\|G\\|²", "b"]),  # an escaped '|' is text
        ("| ``a`b|c`` | d |", ["``a`b|c``", "d"]),  # a double-backtick span holds a single backtick
        ("| a ` b | c |", ["a ` b", "c"]),  # an unclosed backtick is literal
        ("| |o| − t | b |", ["", "o", "− t", "b"]),  # an unescaped '|' splits, as on GitHub
        ("| | |", ["", ""]),
    ],
)
def test_cells_are_counted_as_github_renders_them(row, cells):
    assert split_cells(row) == cells


def test_a_table_split_by_a_blank_line_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n\n```\n| not | a | table |\n```\n")
    problems = table_problems(page)
    assert len(problems) == 1 and problems[0].startswith("page.md:5: rows starting with '|' without a header")
