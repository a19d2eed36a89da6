"""Check every row of a dataset file before training on it: what ``rlvr data check`` runs.

The file is read the way training reads it: rlvr JSONL rows (``rows``, as task.name=jsonl does)
or a Hugging Face dataset file mapped through a task.hf_format layout (``columns``, ``gsm8k``,
``math``, as task.name=hf does). Unlike the loaders, which stop at the first bad row, the check
goes on and names every bad row, a repeated id and an unknown verifier type included.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.tasks.dataset import DatasetError, RowPlace, jsonl_rows
from rlvr.tasks.hf import ColumnMap, hf_rows
from rlvr.types import Query


@dataclass
class CheckReport:
    path: str
    file_format: str
    good: int = 0
    problems: list[tuple[RowPlace, str]] = field(default_factory=list)
    """(where the bad row is, why it is bad), in file order."""

    @property
    def rows(self) -> int:
        return self.good + len(self.problems)

    @property
    def numbering(self) -> str:
        """What the bad rows' numbers count, as the training loader's errors count them."""
        units = {place.unit for place, _ in self.problems}
        counts = {"line": "lines count from 1", "row index": "row indices count from 0"}
        return "; ".join(counts[unit] for unit in counts if unit in units) or counts["line"]

    def where(self, place: RowPlace) -> str:
        """'line 3', or 'data/train.jsonl line 3' for a row of one of a directory's files."""
        return place.within(Path(self.path))

    def problem_lines(self, limit: int = 20) -> list[str]:
        """'line N: reason' (or 'row index N: ...') for the first ``limit`` bad rows, then how many
        more there are."""
        lines = [f"{self.where(place)}: {reason}" for place, reason in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"... and {len(self.problems) - limit} more")
        return lines


def check_file(
    path: str | Path,
    file_format: str = "rows",
    *,
    columns: ColumnMap | None = None,
    split: str = "train",
    verifier_types: Collection[str] | None = None,
    criteria_problem: Callable[[Query], str | None] | None = None,
) -> CheckReport:
    """Every row of ``path`` checked. ``columns`` maps a Hugging Face file's columns (default: the
    layout's own); ``verifier_types``, when given, are the verifier types a row may name, and
    ``criteria_problem`` says what is wrong with a row's criteria as its verifier reads them. A missing,
    unreadable or empty file, or a missing column, raises DatasetError: then no row can be checked."""
    if file_format == "rows":
        rows: Iterator[tuple[RowPlace, Query | str]] = jsonl_rows(path)
    else:
        rows = hf_rows(path, split, columns or ColumnMap.for_format(file_format))
    report = CheckReport(str(path), file_format)
    first_row_of: dict[str, str] = {}
    for place, row in rows:
        if isinstance(row, Query):
            problem = _query_problem(row, first_row_of, verifier_types, criteria_problem)
            first_row_of.setdefault(row.id, report.where(place))
        else:
            problem = row
        if problem is None:
            report.good += 1
        else:
            report.problems.append((place, problem))
    if report.rows == 0:
        raise DatasetError(f"{path}: no rows")
    return report


def _query_problem(
    query: Query,
    first_row_of: dict[str, str],
    verifier_types: Collection[str] | None,
    criteria_problem: Callable[[Query], str | None] | None,
) -> str | None:
    """What is wrong with a well-formed row in the company of the rows before it, or None."""
    if query.id in first_row_of:
        return f"id {query.id!r} repeats the one on {first_row_of[query.id]} (ids must be unique)"
    kind = query.verifier["type"]
    if verifier_types is not None and kind not in verifier_types:
        return f"unknown verifier type {kind!r}; known types: {', '.join(sorted(verifier_types))}"
    return criteria_problem(query) if criteria_problem is not None else None
