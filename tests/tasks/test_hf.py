"""Local Hugging Face dataset files (Parquet, JSONL) mapped to rlvr rows, through task.name=hf."""

from __future__ import annotations

import json

import pytest

from rlvr.config import load_config
from rlvr.errors import UserError
from rlvr.tasks import load_task
from rlvr.tasks.hf import ColumnMap, load_hf_queries
from rlvr.verifiers import RewardFunction

pd = pytest.importorskip("pandas")
pytest.importorskip("datasets")

RECORDS = [
    {"question": "2+3=", "solution": 5, "uid": "q1"},
    {"question": "7-4=", "solution": 3, "uid": "q2"},
    {"question": "1/2+1/2=", "solution": 1, "uid": "q3"},
]


def _parquet(path, records):
    pd.DataFrame.from_records(records).to_parquet(path)
    return path


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_parquet_and_jsonl_map_to_the_same_rows(tmp_path):
    columns = ColumnMap(prompt="question", answer="solution", id="uid")
    from_parquet = load_hf_queries(_parquet(tmp_path / "a.parquet", RECORDS), "train", columns)
    from_jsonl = load_hf_queries(_jsonl(tmp_path / "a.jsonl", RECORDS), "train", columns)
    assert from_parquet == from_jsonl
    assert [(q.id, q.prompt, q.verifier) for q in from_parquet] == [
        ("q1", "2+3=", {"type": "math", "answer": "5"}),  # the integer column value becomes text
        ("q2", "7-4=", {"type": "math", "answer": "3"}),
        ("q3", "1/2+1/2=", {"type": "math", "answer": "1"}),
    ]
    judged = RewardFunction().score(from_parquet[0], "<answer>5</answer>")  # the real math verifier
    assert judged.reward == 1.0


def test_task_config_selects_a_directory_with_train_and_test_splits(tmp_path):
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    _parquet(data / "train-00000-of-00001.parquet", RECORDS[:2])
    _parquet(data / "test-00000-of-00001.parquet", RECORDS[2:])
    cfg = load_config(
        None,
        [
            "task.name=hf",
            f"task.hf_path={tmp_path / 'ds'}",
            "task.hf_prompt_column=question",
            "task.hf_answer_column=solution",
        ],
    )
    train, heldout = load_task(cfg.task)
    assert [q.prompt for q in train] == ["2+3=", "7-4="] and [q.id for q in train] == ["train-0", "train-1"]
    assert [(q.id, q.verifier["answer"]) for q in heldout] == [("test-0", "1")]


def test_verifier_column_with_json_criteria_of_mixed_types(tmp_path):
    python = {"type": "python", "entry_point": "add", "tests": [{"args": [1, 2], "expected": 3}]}
    records = [
        {"prompt": "write add", "criteria": json.dumps(python)},
        {"prompt": "2+2=", "criteria": json.dumps({"type": "math", "answer": "4"})},
    ]
    queries = load_hf_queries(_parquet(tmp_path / "mixed.parquet", records), "train", ColumnMap(verifier="criteria"))
    assert [q.verifier for q in queries] == [python, {"type": "math", "answer": "4"}]


def test_single_train_file_needs_an_eval_file(tmp_path):
    train = _parquet(tmp_path / "train.parquet", RECORDS)
    base = ["task.name=hf", f"task.hf_path={train}", "task.hf_prompt_column=question", "task.hf_answer_column=solution"]
    with pytest.raises(UserError, match="single file.*task.hf_eval_path"):
        load_task(load_config(None, base).task)
    held = _jsonl(tmp_path / "held.jsonl", RECORDS[:1])
    train_q, held_q = load_task(load_config(None, [*base, f"task.hf_eval_path={held}"]).task)
    assert len(train_q) == 3 and [q.prompt for q in held_q] == ["2+3="]
    with pytest.raises(UserError, match="task.name=hf needs task.hf_path"):
        load_config(None, ["task.name=hf"])


@pytest.mark.parametrize(
    "records, columns, words",
    [
        (
            RECORDS,
            ColumnMap(prompt="question", answer="answer"),
            ["no column 'answer'", "task.hf_answer_column", "columns: question, solution, uid"],
        ),
        (RECORDS, ColumnMap(prompt="text", answer="solution"), ["no column 'text'", "task.hf_prompt_column"]),
        (
            [*RECORDS, {"question": "9+9=", "solution": None, "uid": "q4"}],
            ColumnMap(prompt="question", answer="solution"),
            ["rows.jsonl:4: column 'solution'", "non-empty answer"],
        ),
        (
            [{"question": None, "solution": "1", "uid": "a"}],
            ColumnMap(prompt="question", answer="solution"),
            ["rows.jsonl:1: column 'question'", "non-empty text"],
        ),
        (
            [{"q": "x", "c": '{"type": "math", "answer": "1"}'}, {"q": "y", "c": "{broken"}],
            ColumnMap(prompt="q", verifier="c"),
            ["rows.jsonl:2: column 'c'", "not valid JSON"],
        ),
        ([{"q": "x", "c": '{"answer": "1"}'}], ColumnMap(prompt="q", verifier="c"), ["rows.jsonl:1", '"type"']),
    ],
)
def test_bad_columns_and_rows_are_named(tmp_path, records, columns, words):
    path = _jsonl(tmp_path / "rows.jsonl", records)
    with pytest.raises(UserError) as error:
        load_hf_queries(path, "train", columns)
    for word in words:
        assert word in str(error.value)


def test_unreadable_or_missing_files(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"this is not parquet")
    with pytest.raises(UserError, match="broken.parquet: could not read"):
        load_hf_queries(broken, "train", ColumnMap())
    with pytest.raises(UserError, match="not found"):
        load_hf_queries(tmp_path / "nothing.parquet", "train", ColumnMap())
    (tmp_path / "rows.tsv").write_text("prompt\tanswer\n1+1\t2\n")
    with pytest.raises(UserError, match=r"unsupported file type '.tsv'; use .jsonl, .json, .parquet, .csv"):
        load_hf_queries(tmp_path / "rows.tsv", "train", ColumnMap())
    directory = tmp_path / "ds"
    directory.mkdir()
    _parquet(directory / "train.parquet", RECORDS)
    with pytest.raises(UserError, match="could not read split 'test'"):
        load_hf_queries(directory, "test", ColumnMap(prompt="question", answer="solution"))
