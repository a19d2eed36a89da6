"""Dataset rows in JSONL: one object per line, {"id", "prompt", "verifier": {"type": ..., ...}}."""

from __future__ import annotations

import json
from pathlib import Path

from rlvr.errors import UserError
from rlvr.types import Query


class DatasetError(UserError):
    """A dataset file or row is malformed; the message names the file and the row."""


def parse_row(obj: object, where: str) -> Query:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: a row must be a JSON object, got {type(obj).__name__}")
    for key, kind in (("id", (str, int)), ("prompt", str), ("verifier", dict)):
        if key not in obj:
            hint = (
                ' (the query\'s verification criteria, e.g. {"type": "math", "answer": "42"})'
                if key == "verifier"
                else ""
            )
            raise DatasetError(f"{where}: missing '{key}'{hint}")
        if not isinstance(obj[key], kind):
            raise DatasetError(f"{where}: '{key}' has the wrong type ({type(obj[key]).__name__})")
    if "type" not in obj["verifier"]:
        raise DatasetError(f"{where}: 'verifier' has no 'type' (e.g. \"math\", \"python\")")
    meta = {k: v for k, v in obj.items() if k not in ("id", "prompt", "verifier")}
    return Query(id=str(obj["id"]), prompt=obj["prompt"], verifier=obj["verifier"], meta=meta)


def load_jsonl(path: str | Path) -> list[Query]:
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise DatasetError(f"{where}: not valid JSON ({err.msg})") from None
        rows.append(parse_row(obj, where))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


def write_jsonl(queries: list[Query], path: str | Path) -> None:
    with open(path, "w") as f:
        for q in queries:
            f.write(json.dumps({"id": q.id, "prompt": q.prompt, "verifier": q.verifier, **q.meta}) + "\n")
