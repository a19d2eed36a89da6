"""Dataset rows in JSONL: one object per line, {"id", "prompt", "verifier": {"type": ..., ...}}."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rlvr.errors import UserError
from rlvr.types import Query


class DatasetError(UserError):
    """A dataset file or row is malformed; the message names the file and the row."""


@dataclass(frozen=True)
class RowPlace:
    """Where a row sits: its file and line number (JSON Lines, CSV: the line a record starts on,
    counted from 1, as an editor counts) or row index (Parquet, counted from 0)."""

    file: Path
    number: int
    unit: Literal["line", "row index"] = "line"

    def __str__(self) -> str:
        """'rows.jsonl:3' (the form editors jump to) or 'rows.parquet row index 3'."""
        return f"{self.file}:{self.number}" if self.unit == "line" else f"{self.file} row index {self.number}"

    def within(self, source: Path) -> str:
        """'line 3' for a row of the file ``source`` itself; 'data/train.jsonl line 3' in a directory."""
        here = f"{self.unit} {self.number}"
        file, source = self.file.resolve(), source.expanduser().resolve()
        if file == source:
            return here
        return f"{file.relative_to(source) if file.is_relative_to(source) else self.file} {here}"


def row_problem(obj: object) -> str | None:
    """Why ``obj`` is not a dataset row, or None when it is one."""
    if not isinstance(obj, dict):
        return f"a row must be a JSON object, got {type(obj).__name__}"
    expected = {"id": "text or an integer", "prompt": "text", "verifier": "an object"}
    for key, kind in (("id", (str, int)), ("prompt", str), ("verifier", dict)):
        if key not in obj:
            hint = (
                ' (the query\'s verification criteria, e.g. {"type": "math", "answer": "42"})'
                if key == "verifier"
                else ""
            )
            return f"missing '{key}'{hint}"
        if not isinstance(obj[key], kind):
            return f"'{key}' has the wrong type ({type(obj[key]).__name__}); expected {expected[key]}"
    if not obj["prompt"].strip():
        return "'prompt' is empty; expected the text the model is asked"
    if "type" not in obj["verifier"]:
        return "'verifier' has no 'type' (e.g. \"math\", \"python\")"
    return None


def parse_row(obj: object, where: str) -> Query:
    problem = row_problem(obj)
    if problem is not None:
        raise DatasetError(f"{where}: {problem}")
    assert isinstance(obj, dict)  # row_problem said so
    meta = {k: v for k, v in obj.items() if k not in ("id", "prompt", "verifier")}
    return Query(id=str(obj["id"]), prompt=obj["prompt"], verifier=obj["verifier"], meta=meta)


def json_lines(path: Path) -> Iterator[tuple[RowPlace, object | str]]:
    """(place, the line's JSON value) for each non-blank line of a JSON Lines file, or (place, why
    the line is not JSON). A missing or non-UTF-8 file raises DatasetError."""
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DatasetError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); is it a JSONL file?") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            yield RowPlace(path, number), f"not valid JSON ({err.msg} at column {err.colno}): {line.strip()[:60]!r}"
            continue
        if not isinstance(value, dict):
            yield RowPlace(path, number), f"a row must be a JSON object {{...}}, got {type(value).__name__}"
            continue
        yield RowPlace(path, number), value


def jsonl_rows(path: str | Path) -> Iterator[tuple[RowPlace, Query | str]]:
    """(place, query) for each non-blank line, or (place, why the row is bad), so that a checker
    sees every bad row. A missing or non-UTF-8 file raises DatasetError."""
    for place, obj in json_lines(Path(path)):
        problem = obj if isinstance(obj, str) else row_problem(obj)
        yield place, problem if problem is not None else parse_row(obj, str(place))


def load_jsonl(path: str | Path) -> list[Query]:
    rows = []
    for place, row in jsonl_rows(path):
        if isinstance(row, str):
            raise DatasetError(f"{place}: {row}")
        rows.append(row)
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


def write_jsonl(queries: list[Query], path: str | Path) -> None:
    with open(path, "w") as f:
        for q in queries:
            f.write(json.dumps({"id": q.id, "prompt": q.prompt, "verifier": q.verifier, **q.meta}) + "\n")
