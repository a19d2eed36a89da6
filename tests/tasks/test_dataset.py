import json

import pytest

from rlvr.tasks.arith import make_queries
from rlvr.tasks.dataset import DatasetError, load_jsonl, write_jsonl


def test_roundtrip(tmp_path):
    queries = make_queries(10, split="train", seed=0)
    write_jsonl(queries, tmp_path / "rows.jsonl")
    assert load_jsonl(tmp_path / "rows.jsonl") == queries


@pytest.mark.parametrize(
    "row, words",
    [
        ({"id": "a", "prompt": "1+1"}, ["rows.jsonl:2", "missing 'verifier'"]),
        ({"id": "a", "verifier": {"type": "math"}}, ["rows.jsonl:2", "missing 'prompt'"]),
        ({"id": "a", "prompt": "x", "verifier": {"answer": "2"}}, ["rows.jsonl:2", "no 'type'"]),
        ([1, 2], ["rows.jsonl:2", "JSON object"]),
    ],
)
def test_bad_rows_are_named(tmp_path, row, words):
    good = {"id": "ok", "prompt": "1+1", "verifier": {"type": "math", "answer": "2"}}
    (tmp_path / "rows.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DatasetError) as err:
        load_jsonl(tmp_path / "rows.jsonl")
    for word in words:
        assert word in str(err.value)


def test_malformed_json_and_missing_file(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "prompt": \n')
    with pytest.raises(DatasetError, match=r"rows.jsonl:1: not valid JSON"):
        load_jsonl(tmp_path / "rows.jsonl")
    with pytest.raises(DatasetError, match="not found"):
        load_jsonl(tmp_path / "none.jsonl")
