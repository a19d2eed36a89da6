"""Every bad row of a dataset file is named by its file and line (JSON Lines, CSV) or row index
(Parquet), with what is wrong: in every layout, by the training loaders (which stop at the first)
and by the checker (which lists them all). Honest files load the rows they loaded before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.tasks.check import check_file
from rlvr.tasks.dataset import DatasetError, load_jsonl
from rlvr.tasks.hf import ColumnMap, _to_query, load_hf_queries

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
datasets = pytest.importorskip("datasets")

# layout -> (columns, a good answer cell and its reference, an answer cell with no answer to cut out)
LAYOUTS = {
    "gsm8k": (ColumnMap.for_format("gsm8k"), "2 + 3 = 5 #### 5", "5", "It is 5."),
    "math": (ColumnMap.for_format("math"), "so $\\boxed{5}$", "5", "the answer is 5"),
    "columns": (ColumnMap.for_format("columns"), "5", "5", ""),
    "qa": (ColumnMap(prompt="question", answer="answer"), "5", "5", ""),
}
WHY_NO_ANSWER = {
    "gsm8k": "no '####'",
    "math": "no \\boxed{...}",
    "columns": "non-empty answer",
    "qa": "non-empty answer",
}


def _records(layout: str) -> list[dict]:
    """Six records: good, answer missing, good, answer that cannot be cut out, empty prompt, good."""
    columns, good, _, uncut = LAYOUTS[layout]
    p, a = columns.prompt, columns.answer
    return [
        {p: "2+3=", a: good},
        {p: "2+3 again"},
        {p: "3+2=", a: good},
        {p: "no answer", a: uncut},
        {p: "", a: good},
        {p: "5+0=", a: good},
    ]


def _write(path: Path, records: list[dict]) -> Path:
    """The records as the file type ``path`` names. JSON Lines also gets a line that is not JSON
    after the first record, so its records sit on lines 1, 3, 4, ...; a CSV file's on 2, 3, ...
    (line 1 is the header); a Parquet file's at row indices 0, 1, ..."""
    if path.suffix == ".jsonl":
        lines = [json.dumps(record) for record in records]
        path.write_text("\n".join([lines[0], '{"question": "7+1=", answer: 8}', *lines[1:]]) + "\n")
    elif path.suffix == ".csv":
        pd.DataFrame.from_records(records).to_csv(path, index=False)  # a missing cell is written empty
    else:
        pd.DataFrame.from_records(records).to_parquet(path)
    return path


def _expected(suffix: str, layout: str) -> dict[int, str]:
    """Bad row's number -> words its reason holds."""
    columns = LAYOUTS[layout][0]
    missing = f"no '{columns.answer}' key" if suffix == ".jsonl" else f"column '{columns.answer}' must be a non-empty"
    reasons = [missing, WHY_NO_ANSWER[layout], f"column '{columns.prompt}' must be non-empty text"]
    numbers = {".jsonl": [3, 5, 6], ".csv": [3, 5, 6], ".parquet": [1, 3, 4]}[suffix]
    expected = dict(zip(numbers, reasons, strict=True))
    return {2: "not valid JSON (Expecting property name"} | expected if suffix == ".jsonl" else expected


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_the_checker_names_every_bad_row_by_line_or_index(tmp_path, suffix, layout):
    path = _write(tmp_path / f"data{suffix}", _records(layout))
    report = check_file(path, "columns" if layout == "qa" else layout, columns=LAYOUTS[layout][0])
    expected = _expected(suffix, layout)
    assert {place.number: reason for place, reason in report.problems}.keys() == expected.keys()
    for place, reason in report.problems:
        assert expected[place.number] in reason, reason
        assert place.file == path
    assert report.good == 3
    unit = "row index" if suffix == ".parquet" else "line"
    assert [line.split(":")[0] for line in report.problem_lines()] == [f"{unit} {n}" for n in expected]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_training_stops_at_the_first_bad_row_and_names_it(tmp_path, suffix, layout):
    path = _write(tmp_path / f"data{suffix}", _records(layout))
    number, words = next(iter(_expected(suffix, layout).items()))
    place = f"{path} row index {number}" if suffix == ".parquet" else f"{path}:{number}"
    with pytest.raises(DatasetError) as error:
        load_hf_queries(path, "train", LAYOUTS[layout][0])
    assert str(error.value).startswith(f"{place}: ") and words in str(error.value)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_honest_files_of_each_type_load_the_same_rows(tmp_path, layout):
    columns, _, reference, _ = LAYOUTS[layout]
    first, second, last = (_records(layout)[i] for i in (0, 2, 5))  # the good ones
    records = [first, second | {columns.prompt: 'with "quotes", a comma\nand a second line'}, last]
    loaded = [load_hf_queries(_write(tmp_path / f"ok{s}", records), "train", columns) for s in (".csv", ".parquet")]
    (tmp_path / "ok.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    loaded.append(load_hf_queries(tmp_path / "ok.jsonl", "train", columns))
    assert loaded[0] == loaded[1] == loaded[2]
    assert [(q.id, q.prompt, q.verifier) for q in loaded[0]] == [
        (f"train-{i}", record[columns.prompt], {"type": "math", "answer": reference})
        for i, record in enumerate(records)
    ]


def test_json_lines_read_line_by_line_give_the_rows_datasets_gave(tmp_path):
    # The rows datasets.load_dataset makes of the same file, mapped the same way: integers,
    # floats, text answers and a JSON-text criteria column.
    records = [
        {"q": "2+3=", "a": 5, "c": json.dumps({"type": "math", "answer": "5"}), "uid": 7},
        {"q": "1/2=", "a": 0.5, "c": json.dumps({"type": "python", "entry_point": "f", "tests": []}), "uid": 8},
        {"q": "x", "a": 3.0, "c": json.dumps({"type": "math", "answer": "3", "tolerance": None}), "uid": 9},
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    for columns in (ColumnMap(prompt="q", answer="a", id="uid"), ColumnMap(prompt="q", verifier="c")):
        through_datasets = datasets.load_dataset("json", data_files=str(path), split="train")
        expected = [_to_query(record, index, "train", columns) for index, record in enumerate(through_datasets)]
        assert load_hf_queries(path, "train", columns) == expected


def test_a_bad_row_in_a_directory_names_its_file(tmp_path):
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text('{"prompt": "1+1", "answer": "2"}\n\n{"prompt": "2+2", "answer": \n')
    (data / "test.jsonl").write_text('{"prompt": "3+3", "answer": "6"}\n')
    report = check_file(tmp_path / "ds", "columns")
    assert report.problem_lines() == ["data/train.jsonl line 3: not valid JSON (Expecting value at column 29): "
                                      "'{\"prompt\": \"2+2\", \"answer\":'"]  # fmt: skip
    with pytest.raises(DatasetError, match=f"^{data / 'train.jsonl'}:3: not valid JSON"):
        load_hf_queries(tmp_path / "ds", "train", ColumnMap())
    assert [q.id for q in load_hf_queries(tmp_path / "ds", "test", ColumnMap())] == ["test-0"]


@pytest.mark.parametrize(
    "text, words",
    [
        ("prompt,answer\n1+1,2\n2+2,4,extra\n3+3,6\n", "line 3: 3 fields, but the header has 2"),
        ('prompt,answer\n1+1,2\n"2+2,4\n3+3,6\n', ":3: not valid CSV (unexpected end of data)"),
    ],
)
def test_a_csv_line_that_is_not_a_record_is_named(tmp_path, text, words):
    path = tmp_path / "qa.csv"
    path.write_text(text)
    try:
        problems = check_file(path, "columns").problem_lines()
    except DatasetError as error:  # an unclosed quote swallows the rest: no row after it can be read
        problems = [str(error)]
    assert any(words in problem for problem in problems), problems
    with pytest.raises(DatasetError, match=f"qa.csv:3: .*{'fields' if 'fields' in words else 'CSV'}"):
        load_hf_queries(path, "train", ColumnMap())


def test_rlvr_rows_name_each_bad_line(tmp_path):
    good = {"id": "a", "prompt": "1+1", "verifier": {"type": "math", "answer": "2"}}
    lines = [
        json.dumps(good),
        '{"id": "b", "prompt": "2+2", verifier: {}}',
        json.dumps({"id": "c", "prompt": "3+3"}),
        json.dumps({"id": "d", "prompt": "4+4", "verifier": {"answer": "8"}}),
        json.dumps({"id": "e", "prompt": " ", "verifier": good["verifier"]}),
        json.dumps({"id": "f", "prompt": ["chat"], "verifier": good["verifier"]}),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert check_file(path).problem_lines() == [
        "line 2: not valid JSON (Expecting property name enclosed in double quotes at column 30): "
        '\'{"id": "b", "prompt": "2+2", verifier: {}}\'',
        'line 3: missing \'verifier\' (the query\'s verification criteria, e.g. {"type": "math", "answer": "42"})',
        "line 4: 'verifier' has no 'type' (e.g. \"math\", \"python\")",
        "line 5: 'prompt' is empty; expected the text the model is asked",
        "line 6: 'prompt' has the wrong type (list); expected text",
    ]
    with pytest.raises(DatasetError, match=f"^{path}:2: not valid JSON"):
        load_jsonl(path)
