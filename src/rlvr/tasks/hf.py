"""Dataset rows from local Hugging Face ``datasets`` files (JSON Lines, Parquet or CSV).

A column mapping turns each record into rlvr's row schema ``{"id", "prompt", "verifier"}``:
the prompt column gives the prompt text; the verification criteria come either from a verifier
column (a criteria object, or the same object as a JSON string) or from an answer column, mapped to
``{"type": "math", "answer": ...}``. The dataset's layout (``rlvr.tasks.formats``: plain columns,
GSM8K or MATH) names the usual columns and cuts the reference answer out of a worked solution.
Every row then passes the same check as a JSONL row (``rlvr.tasks.dataset.parse_row``). Only
local files are read: nothing is downloaded.

A bad row is named by its file and line (JSON Lines, CSV) or row index (Parquet). JSON Lines files
are read line by line here, since ``datasets`` reports a malformed line without naming it; CSV and
Parquet values come from ``datasets``, and CSV records are matched to the lines they start on.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.errors import UserError
from rlvr.tasks.criteria import parse_criteria
from rlvr.tasks.dataset import DatasetError, RowPlace, json_lines, parse_row
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


@dataclass
class Table:
    """One file's records by place, or why a record is bad; ``columns`` in first-seen order."""

    columns: list[str]
    records: list[tuple[RowPlace, dict[str, Any] | str]]


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise UserError("task.name=hf needs the datasets package: .venv/bin/pip install -e '.[hf]'") from None
    datasets.disable_progress_bars()
    return datasets


@contextmanager
def _quiet(datasets: Any) -> Iterator[None]:
    """``datasets`` logs a bad file, then raises: one report is enough."""
    verbosity = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)


def _unreadable(path: Path, split: str, error: Exception) -> DatasetError:
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return DatasetError(f"{path}: could not read split '{split}' ({first_line[:200]})")


def split_files(path: str | Path, split: str) -> list[Path]:
    """The files of split ``split``: one file (its only split), or the files a directory in
    Hugging Face layout (``train-*.parquet``, ``data/test.jsonl``, ...) holds for that split."""
    path = Path(path).expanduser()
    if path.is_file():
        if path.suffix not in BUILDERS:
            raise DatasetError(f"{path}: unsupported file type '{path.suffix}'; use {', '.join(BUILDERS)}")
        return [path]
    if not path.is_dir():
        raise DatasetError(f"dataset file or directory not found: {path}")
    datasets = _datasets()
    try:
        with _quiet(datasets):
            data_files = datasets.load_dataset_builder(str(path)).config.data_files or {}
    except Exception as error:  # datasets' errors for a directory it cannot make splits of
        raise _unreadable(path, split, error) from None
    files_of = {str(name): files for name, files in data_files.items()}  # split names are NamedSplit objects
    if split not in files_of:
        raise DatasetError(f"{path}: could not read split '{split}' (splits here: {', '.join(files_of) or 'none'})")
    files = [Path(file) for file in files_of[split]]
    for file in files:
        if file.suffix not in BUILDERS:
            raise DatasetError(f"{file}: unsupported file type '{file.suffix}'; use {', '.join(BUILDERS)}")
    return files


def read_table(file: Path) -> Table:
    """A file's records. JSON Lines is read line by line, so that a line that is not JSON, or a
    record that does not fit the others, is named by its line; CSV and Parquet go through
    ``datasets`` (CSV rows then get their line numbers, Parquet rows their index)."""
    if file.suffix == ".jsonl" or (file.suffix == ".json" and not _starts_with_bracket(file)):
        records = list(json_lines(file))
        columns = dict.fromkeys(key for _, record in records if isinstance(record, dict) for key in record)
        return Table(list(columns), records)
    if file.suffix == ".csv":
        return _csv_table(file)
    return _indexed_table(file, _load_file(file))  # Parquet, or a .json file holding one JSON array


def _starts_with_bracket(file: Path) -> bool:
    """Whether a .json file is one JSON array rather than JSON Lines."""
    with open(file, encoding="utf-8", errors="replace") as handle:
        return handle.read(4096).lstrip().startswith("[")


def _indexed_table(file: Path, dataset: Any) -> Table:
    """A dataset's records placed by row index."""
    places = [RowPlace(file, index, "row index") for index in range(len(dataset))]
    return Table(list(dataset.column_names), list(zip(places, dataset, strict=True)))


def _load_file(file: Path) -> Any:
    """One file as a ``datasets.Dataset``; an unreadable file raises DatasetError."""
    datasets = _datasets()
    try:
        with _quiet(datasets):
            return datasets.load_dataset(BUILDERS[file.suffix], split="train", data_files=str(file))
    except Exception as error:  # pyarrow, json, pandas and datasets errors: all mean "this file is unreadable"
        raise _unreadable(file, "train", error) from None


def _csv_table(file: Path) -> Table:
    """A CSV file's records with the line each starts on. A record with more fields than the
    header (which ``datasets`` refuses, naming no line) is a bad row; the others still load."""
    starts, header_size, too_long = _csv_record_lines(file)
    try:
        dataset = _load_file(file)
    except DatasetError:
        if not too_long:
            _csv_syntax_error(file)
            raise
        dataset = _csv_without_long_records(file)
    if len(starts) - len(too_long) != len(dataset):  # a CSV dialect the line count cannot follow
        return _indexed_table(file, dataset)
    good = iter(dataset)
    too_many = "{} fields, but the header has {} (quote a cell that holds a comma)"
    records: list[tuple[RowPlace, dict[str, Any] | str]] = [
        (RowPlace(file, line), too_many.format(too_long[line], header_size) if line in too_long else next(good))
        for line in starts
    ]
    return Table(list(dataset.column_names), records)


def _csv_without_long_records(file: Path) -> Any:
    """The CSV file as ``datasets``' csv builder reads it (through pandas), less the records with
    too many fields."""
    import pandas

    try:
        frame = pandas.read_csv(file, on_bad_lines="skip")
    except Exception as error:  # pandas' parser errors: the file is unreadable even without those records
        raise _unreadable(file, "train", error) from None
    return _datasets().Dataset.from_pandas(frame, preserve_index=False)


def _csv_record_lines(file: Path, *, strict: bool = False) -> tuple[list[int], int, dict[int, int]]:
    """(the line each record after the header starts on, the header's field count, {line: field
    count} for records with more fields than the header). Blank lines hold no record. ``strict``
    raises DatasetError, naming the record's first line, where a quote is unbalanced."""
    starts: list[int] = []
    too_long: dict[int, int] = {}
    header_size = 0
    with open(file, newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle, strict=strict)
        line = 1
        try:
            for fields in reader:
                start, line = line, reader.line_num + 1
                if fields and not header_size:
                    header_size = len(fields)
                elif fields:
                    starts.append(start)
                    if len(fields) > header_size:
                        too_long[start] = len(fields)
        except csv.Error as error:  # only when strict
            raise DatasetError(
                f"{RowPlace(file, line)}: not valid CSV ({error}); a quoted cell must end with a closing quote"
            ) from None
    return starts, header_size, too_long


def _csv_syntax_error(file: Path) -> None:
    """Raise DatasetError naming the line where the CSV file stops being CSV, if a strict reading
    finds one (an unclosed quote, a quote inside an unquoted cell)."""
    _csv_record_lines(file, strict=True)


def hf_rows(path: str | Path, split: str, columns: ColumnMap) -> Iterator[tuple[RowPlace, Query | str]]:
    """(place, query) for each record, or (place, why the record is bad), so that a checker sees
    every bad row. An unreadable file, a missing column or an empty split raises DatasetError."""
    index = 0  # ids are '<split>-<index>', counting records over the split's files
    tables = [(file, read_table(file)) for file in split_files(path, split)]
    for file, table in tables:
        for field_name, column in columns.needed().items():
            if column not in table.columns:
                raise DatasetError(f"{file}: no column '{column}' ({field_name}); columns: {', '.join(table.columns)}")
    if not any(table.records for _, table in tables):
        raise DatasetError(f"{path} [{split}]: no rows")
    for _, table in tables:
        for place, record in table.records:
            if isinstance(record, str):
                yield place, record
            else:
                try:
                    yield place, _to_query(record, index, split, columns)
                except UserError as error:  # DatasetError, CriteriaError: this record is bad, the next may not be
                    yield place, str(error)
            index += 1


def load_hf_queries(path: str | Path, split: str, columns: ColumnMap) -> list[Query]:
    """Rows of one split mapped to queries; a missing column or a bad value names the file and row."""
    queries = []
    for place, row in hf_rows(path, split, columns):
        if isinstance(row, str):
            raise DatasetError(f"{place}: {row}")
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
    prompt = _cell(record, columns.prompt, "task.hf_prompt_column")
    if not isinstance(prompt, str) or not prompt.strip():
        kind = "chat messages" if isinstance(prompt, list) else repr(prompt)[:40]
        raise DatasetError(
            f"column '{columns.prompt}' must be non-empty text, got {kind} (task.hf_prompt_column names a text column)"
        )
    if columns.verifier:
        criteria = parse_criteria(
            _cell(record, columns.verifier, "task.hf_verifier_column"), f"column '{columns.verifier}'"
        )
    else:
        answer = _cell(record, columns.answer, "task.hf_answer_column")
        criteria = {"type": "math", "answer": _reference_answer(answer, columns)}
    row_id = _cell(record, columns.id, "task.hf_id_column") if columns.id else f"{split}-{index}"
    if row_id is None:
        raise DatasetError(f"column '{columns.id}' is empty (task.hf_id_column)")
    return parse_row({"id": str(row_id), "prompt": prompt, "verifier": criteria}, "the mapped row")


def _cell(record: dict[str, Any], column: str, field_name: str) -> Any:
    """The record's value in ``column``; a JSON record without that key is bad."""
    if column not in record:
        keys = ", ".join(record) or "none"
        raise DatasetError(f"no '{column}' key ({field_name}); this record has keys: {keys}")
    return record[column]


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
