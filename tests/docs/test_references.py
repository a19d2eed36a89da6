"""What README.md and docs/*.md point at exists: relative links and their #anchors, and the
Markdown pages they name (README.md, docs/x.md, ...); and user-facing text cites no issue numbers
of this project (an upstream reference such as huggingface/trl#123 is a source, and stays)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .mdtext import DOCS, REPO, prose_lines, relative

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PAGE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[A-Z][A-Z_]*\.md|docs/[\w./-]+\.md)\b")  # DESIGN.md, docs/x.md
_ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![\w/-])#\d+\b", re.IGNORECASE)


def anchors(page: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    ids = set()
    for line in prose_lines(page):
        if line.text.startswith("#"):
            title = line.text.lstrip("#").strip().lower()
            ids.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return ids


def _missing_target(page: Path, target: str) -> str | None:
    if re.match(r"^[a-z]+:", target):  # https:, mailto:
        return None
    path, _, anchor = target.partition("#")
    file = (page.parent / path) if path else page
    if not file.exists():
        return f"{target}: no such file"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"{target}: no heading with id '{anchor}' in {relative(file)}"
    return None


def reference_problems(page: Path) -> list[str]:
    problems = []
    for line in prose_lines(page):
        where = f"{relative(page)}:{line.number}"
        for target in _LINK.findall(line.text):
            missing = _missing_target(page, target)
            if missing:
                problems.append(f"{where}: link {missing}")
        for name in _PAGE.findall(line.text):
            if not ((REPO / name).exists() or (page.parent / name).exists()):
                problems.append(f"{where}: names {name}, which is not in the repository")
        for issue in _ISSUE.findall(line.text):
            problems.append(f"{where}: cites '{issue}'; say what the text means instead of an issue number")
    return problems


def _page(path):
    return pytest.param(path, id=relative(path))


@pytest.mark.parametrize("page", [_page(path) for path in DOCS])
def test_references_resolve(page):
    assert reference_problems(page) == []


def test_broken_references_are_named(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Comparing paradigms: `rlvr compare`\n")
    page = tmp_path / "page.md"
    page.write_text(
        "See [it](other.md#comparing-paradigms-rlvr-compare) and [gone](gone.md), [x](other.md#nope),\n"
        "DESIGN.md, [web](https://example.com), huggingface/trl#12 and (issue 4).\n"
        "```\nDESIGN.md #1 in a code block is not prose\n```\n"
    )
    assert reference_problems(page) == [
        "page.md:1: link gone.md: no such file",
        "page.md:1: link other.md#nope: no heading with id 'nope' in other.md",
        "page.md:2: names DESIGN.md, which is not in the repository",
        "page.md:2: cites 'issue 4'; say what the text means instead of an issue number",
    ]
