"""Dataset rows in JSONL: one object per line, {"id", "prompt", "verifier": {"type": ..., ...}}."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from rlvr.errors import UserError
from rlvr.types import Query


class DatasetError(UserError):
    """A dataset file or row is malformed; the message names the file and the row."""


def row_problem(obj: object) -> str | None:
    """Why ``obj`` is not a dataset row, or None when it is one."""
    if not isinstance(obj, dict):
        return f"a row must be a JSON object, got {type(obj).__name__}"
    for key, kind in (("id", (str, int)), ("prompt", str), ("verifier", dict)):
        if key not in obj:
            hint = (
                ' (the query\'s verification criteria, e.g. {"type": "math", "answer": "42"})'
                if key == "verifier"
                else ""
            )
            return f"missing '{key}'{hint}"
        if not isinstance(obj[key], kind):
            return f"'{key}' has the wrong type ({type(obj[key]).__name__})"
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


def jsonl_rows(path: str | Path) -> Iterator[tuple[int, Query | str]]:
    """(line number, query) for each non-blank line, or (line number, why the row is bad), so that
    a checker sees every bad row. A missing or non-UTF-8 file raises DatasetError."""
    path = Path(path)
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
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            yield number, f"not valid JSON ({err.msg})"
            continue
        problem = row_problem(obj)
        yield number, problem if problem is not None else parse_row(obj, f"{path}:{number}")


def load_jsonl(path: str | Path) -> list[Query]:
    rows = []
    for number, row in jsonl_rows(path):
        if isinstance(row, str):
            raise DatasetError(f"{path}:{number}: {row}")
        rows.append(row)
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


def write_jsonl(queries: list[Query], path: str | Path) -> None:
    with open(path, "w") as f:
        for q in queries:
            f.write(json.dumps({"id": q.id, "prompt": q.prompt, "verifier": q.verifier, **q.meta}) + "\n")
