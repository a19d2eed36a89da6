"""Dataset rows from local Hugging Face ``datasets`` files (JSON Lines, Parquet or CSV).

A column mapping turns each record into rlvr's row schema ``{"id", "prompt", "verifier"}``:
the prompt column gives the prompt text; the verification criteria come either from a verifier
column (a criteria object, or the same object as a JSON string) or from an answer column, mapped to
``{"type": "math", "answer": ...}``. The dataset's layout (``rlvr.tasks.formats``: plain columns,
GSM8K or MATH) names the usual columns and cuts the reference answer out of a worked solution.
Every row then passes the same check as a JSONL row (``rlvr.tasks.dataset.parse_row``). Only
local files are read: nothing is downloaded.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import UserError
from rlvr.tasks.criteria import parse_criteria
from rlvr.tasks.dataset import DatasetError, parse_row
from rlvr.tasks.formats import FORMATS, AnswerNotFound
from rlvr.types import Query

BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
"""File suffix -> the ``datasets`` builder that reads it."""


@dataclass(frozen=True)
class ColumnMap:
    """Which dataset column feeds which part of a row (names as in the task.hf_* config fields)."""

    prompt: str = "prompt"
    answer: str = "answer"
    verifier: str = ""
    """When set, this column's criteria are used and ``answer`` is ignored."""
    id: str = ""
    """When empty, ids are '<split>-<row index>'."""
    layout: str = "columns"
    """How the answer cell becomes the reference answer: a key of ``rlvr.tasks.formats.FORMATS``."""

    @classmethod
    def for_format(
        cls, layout: str, *, prompt: str = "", answer: str = "", verifier: str = "", id: str = ""
    ) -> ColumnMap:
        """The layout's own prompt and answer columns where ``prompt``/``answer`` are empty or the
        'columns' layout's names (the task.hf_*_column defaults): GSM8K's 'question', MATH's 'problem'."""
        usual, plain = FORMATS[layout], FORMATS["columns"]
        return cls(
            prompt=usual.prompt_column if prompt in ("", plain.prompt_column) else prompt,
            answer=usual.answer_column if answer in ("", plain.answer_column) else answer,
            verifier=verifier,
            id=id,
            layout=layout,
        )

    def needed(self) -> dict[str, str]:
        """Columns that must exist, by the config field that names them."""
        needed = {"task.hf_prompt_column": self.prompt}
        if self.verifier:
            needed["task.hf_verifier_column"] = self.verifier
        else:
            needed["task.hf_answer_column"] = self.answer
        if self.id:
            needed["task.hf_id_column"] = self.id
        return needed


def read_split(path: str | Path, split: str) -> Any:
    """A ``datasets.Dataset``: one file (its only split), or split ``split`` of a directory in
    Hugging Face layout (``train-*.parquet``, ``data/test.jsonl``, ...)."""
    try:
        import datasets
    except ImportError:
        raise UserError("task.name=hf needs the datasets package: .venv/bin/pip install -e '.[hf]'") from None
    path = Path(path).expanduser()
    datasets.disable_progress_bars()
    if path.is_file():
        if path.suffix not in BUILDERS:
            raise DatasetError(f"{path}: unsupported file type '{path.suffix}'; use {', '.join(BUILDERS)}")
        source, kwargs, split = BUILDERS[path.suffix], {"data_files": str(path)}, "train"
    elif path.is_dir():
        source, kwargs = str(path), {}
    else:
        raise DatasetError(f"dataset file or directory not found: {path}")
    verbosity = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # a bad file is logged, then raised: one report
    try:
        return datasets.load_dataset(source, split=split, **kwargs)
    except Exception as error:  # pyarrow, json and datasets errors: all mean "this file is unreadable"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DatasetError(f"{path}: could not read split '{split}' ({first_line[:200]})") from None
    finally:
        datasets.logging.set_verbosity(verbosity)


def hf_rows(path: str | Path, split: str, columns: ColumnMap) -> Iterator[tuple[int, Query | str]]:
    """(row index, query) for each record, or (row index, why the record is bad), so that a checker
    sees every bad row. An unreadable file, a missing column or an empty split raises DatasetError."""
    dataset = read_split(path, split)
    where = f"{path} [{split}]"
    for field_name, column in columns.needed().items():
        if column not in dataset.column_names:
            raise DatasetError(
                f"{where}: no column '{column}' ({field_name}); columns: {', '.join(dataset.column_names)}"
            )
    if len(dataset) == 0:
        raise DatasetError(f"{where}: no rows")
    for index, record in enumerate(dataset):
        try:
            query = _to_query(record, index, split, columns)
        except UserError as error:  # DatasetError, CriteriaError: this record is bad, the next may not be
            yield index, str(error)
            continue
        yield index, query


def load_hf_queries(path: str | Path, split: str, columns: ColumnMap) -> list[Query]:
    """Rows of one split mapped to queries; a missing column or a bad value names the row."""
    queries = []
    for index, row in hf_rows(path, split, columns):
        if isinstance(row, str):
            raise DatasetError(f"{path} [{split}] row index {index}: {row}")
        queries.append(row)
    return queries


def load_hf_task(
    path: str | Path, split: str, eval_path: str | Path, eval_split: str, columns: ColumnMap
) -> tuple[list[Query], list[Query]]:
    """(training queries, held-out queries); held-out rows come from ``eval_path``, else from split
    ``eval_split`` of the directory ``path`` (a single file has no second split to hold out)."""
    if not eval_path and Path(path).expanduser().is_file():
        raise DatasetError(
            f"task.hf_path={path} is a single file, so it has no held-out split; "
            "set task.hf_eval_path to a file of held-out rows"
        )
    return load_hf_queries(path, split, columns), load_hf_queries(eval_path or path, eval_split, columns)


def _to_query(record: dict[str, Any], index: int, split: str, columns: ColumnMap) -> Query:
    """The record as a query; a DatasetError or CriteriaError says what is wrong with it (the
    caller names the file and row)."""
    prompt = record[columns.prompt]
    if not isinstance(prompt, str) or not prompt.strip():
        kind = "chat messages" if isinstance(prompt, list) else repr(prompt)[:40]
        raise DatasetError(
            f"column '{columns.prompt}' must be non-empty text, got {kind} (task.hf_prompt_column names a text column)"
        )
    if columns.verifier:
        criteria = parse_criteria(record[columns.verifier], f"column '{columns.verifier}'")
    else:
        criteria = {"type": "math", "answer": _reference_answer(record[columns.answer], columns)}
    row_id = record[columns.id] if columns.id else f"{split}-{index}"
    if row_id is None:
        raise DatasetError(f"column '{columns.id}' is empty (task.hf_id_column)")
    return parse_row({"id": str(row_id), "prompt": prompt, "verifier": criteria}, "the mapped row")


def _reference_answer(value: Any, columns: ColumnMap) -> str:
    """The answer cell's reference answer, cut out of it as the layout says."""
    text = _answer_text(value, columns.answer)
    try:
        return FORMATS[columns.layout].reference(text)
    except AnswerNotFound as error:
        raise DatasetError(f"column '{columns.answer}' (task.hf_format={columns.layout}): {error}") from None


def _answer_text(value: Any, column: str) -> str:
    """An answer cell as text: strings stripped, integers (also integral floats) as digits."""
    text = None
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, int) and not isinstance(value, bool):  # true/false is a mistake, not 1/0
        text = str(value)
    elif isinstance(value, float) and math.isfinite(value):
        text = str(int(value)) if value.is_integer() else repr(value)
    if not text:
        raise DatasetError(f"column '{column}' must be a non-empty answer (text or a number), got {value!r}")
    return text
