"""`rlvr data check` through the real CLI: what a user sees, and the exit code a script tests."""

from __future__ import annotations

import json

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("datasets")

ROW = {"id": "q1", "prompt": "2+3=", "verifier": {"type": "math", "answer": "5"}}


def _jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_a_good_file_of_rows_exits_0(cli, tmp_path):
    path = _jsonl(tmp_path / "rows.jsonl", [ROW, {**ROW, "id": "q2"}])
    run = cli("data", "check", str(path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"rlvr data check: {path} (format rows): 2 of 2 rows good"
    assert run.stderr == ""


def test_every_bad_row_is_listed_and_the_exit_code_is_2(cli, tmp_path):
    path = _jsonl(tmp_path / "rows.jsonl", [ROW, {"id": "q2", "prompt": "x"}, ROW, {**ROW, "id": "q4"}])
    run = cli("data", "check", str(path))
    assert run.returncode == 2
    assert run.stdout.splitlines() == [
        f"rlvr data check: {path} (format rows): 2 of 4 rows good",
        '  line 2: missing \'verifier\' (the query\'s verification criteria, e.g. {"type": "math", "answer": "42"})',
        "  line 3: id 'q1' repeats the one on line 1 (ids must be unique)",
    ]
    assert run.stderr == f"rlvr: error: {path}: 2 of 4 rows are bad (lines count from 1)\n"


def test_a_gsm8k_csv_file_is_checked_with_its_layout(cli, tmp_path):
    path = tmp_path / "gsm8k.csv"
    records = [{"question": f"q{i}", "answer": f"work\n#### {i}"} for i in range(3)]
    pd.DataFrame.from_records([*records, {"question": "bad", "answer": "no marker"}]).to_csv(path, index=False)
    run = cli("data", "check", str(path), "--format", "gsm8k")
    assert run.returncode == 2
    assert "3 of 4 rows good" in run.stdout
    # The header is line 1 and each solution takes two lines: the fourth record starts on line 8.
    assert "  line 8: column 'answer' (task.hf_format=gsm8k): no '####' in the solution" in run.stdout
    assert "lines count from 1" in run.stderr and "Traceback" not in run.stderr
    good = cli("data", "check", str(path.with_name("good.csv")), "--format", "gsm8k")
    assert good.returncode == 2 and "not found" in good.stderr  # not written yet
    pd.DataFrame.from_records(records).to_csv(path.with_name("good.csv"), index=False)
    assert cli("data", "check", str(path.with_name("good.csv")), "--format", "gsm8k").returncode == 0


def test_a_long_list_of_bad_rows_is_cut_at_twenty(cli, tmp_path):
    path = tmp_path / "math.parquet"
    pd.DataFrame.from_records([{"problem": f"p{i}", "solution": "no box"} for i in range(25)]).to_parquet(path)
    run = cli("data", "check", str(path), "--format", "math")
    lines = run.stdout.splitlines()
    assert run.returncode == 2 and len(lines) == 1 + 20 + 1
    assert lines[1].startswith("  row index 0: ") and lines[20].startswith("  row index 19: ")
    assert lines[-1] == "  ... and 5 more"
    assert run.stderr.count("\n") == 1  # one line, no traceback


@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "columns", "--prompt-column", "text"], "no column 'text' (task.hf_prompt_column); columns: q, a"),
        (["--format", "columns", "--prompt-column", "q"], "no column 'answer' (task.hf_answer_column); columns: q, a"),
        (["--format", "rows"], "--format rows reads one JSONL file; for a .parquet file pass --format columns"),
        (["--format", "columns", "--split", "test"], "is a single file (one split)"),
        (["--format", "math", "--verifier-column", "a"], "--format math cuts the answer out of a solution column"),
    ],
)
def test_columns_and_flags_that_do_not_fit_are_one_line_errors(cli, tmp_path, args, message):
    path = tmp_path / "qa.parquet"
    pd.DataFrame.from_records([{"q": "1+1", "a": 2}]).to_parquet(path)
    run = cli("data", "check", str(path), *args)
    assert run.returncode == 2
    assert message in run.stderr and run.stderr.startswith("rlvr: error: ") and run.stderr.count("\n") == 1
    assert run.stdout == ""
    ok = cli("data", "check", str(path), "--format", "columns", "--prompt-column", "q", "--answer-column", "a")
    assert ok.returncode == 0 and "1 of 1 rows good" in ok.stdout


def test_an_unreadable_file_is_a_one_line_error(cli, tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    run = cli("data", "check", str(broken), "--format", "columns")
    assert run.returncode == 2 and run.stderr.startswith(f"rlvr: error: {broken}: could not read split 'train'")
    assert run.stderr.count("\n") == 1  # datasets' own log of the failure is not shown as well
    (tmp_path / "latin1.jsonl").write_bytes('{"id": "é"}\n'.encode("latin-1"))
    run = cli("data", "check", str(tmp_path / "latin1.jsonl"))
    assert run.returncode == 2 and "not UTF-8 text" in run.stderr


def test_a_directory_in_hugging_face_layout_is_checked_split_by_split(cli, tmp_path):
    data = tmp_path / "gsm8k" / "data"
    data.mkdir(parents=True)
    pd.DataFrame.from_records([{"question": "q", "answer": "#### 3"}]).to_parquet(data / "train-00000-of-00001.parquet")
    pd.DataFrame.from_records([{"question": "q", "answer": "3"}]).to_parquet(data / "test-00000-of-00001.parquet")
    directory = str(tmp_path / "gsm8k")
    assert cli("data", "check", directory, "--format", "gsm8k").returncode == 0
    run = cli("data", "check", directory, "--format", "gsm8k", "--split", "test")
    assert run.returncode == 2 and run.stdout.startswith(f"rlvr data check: {directory} [test] (format gsm8k): 0 of 1")
    run = cli("data", "check", directory)
    assert run.returncode == 2 and "for a directory pass --format columns, gsm8k or math" in run.stderr


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_every_bad_row_of_a_gsm8k_file_is_listed_by_line_or_index(cli, tmp_path, suffix):
    good = {"question": "2+3=", "answer": "2 + 3 = 5 #### 5"}
    records = [good, {"question": "a"}, {"question": "b", "answer": "It is 5."}, {"question": "", "answer": "#### 1"}]
    path = tmp_path / f"gsm8k{suffix}"
    if suffix == ".jsonl":  # records on lines 1, 3, 4, 5: line 2 is not JSON
        lines = [json.dumps(record) for record in records]
        path.write_text("\n".join([lines[0], "question: 7+1=", *lines[1:]]) + "\n")
    elif suffix == ".csv":  # the header is line 1: records on lines 2 to 5
        pd.DataFrame.from_records(records).to_csv(path, index=False)
    else:  # Parquet: records at row indices 0 to 3
        pd.DataFrame.from_records(records).to_parquet(path)
    run = cli("data", "check", str(path), "--format", "gsm8k")
    where = {".jsonl": ["line 2", "line 3", "line 4", "line 5"], ".csv": ["line 3", "line 4", "line 5"]}
    expected = where.get(suffix, ["row index 1", "row index 2", "row index 3"])
    lines = run.stdout.splitlines()
    assert run.returncode == 2 and [line.split(":")[0].strip() for line in lines[1:]] == expected
    assert "answer" in lines[-3] and "no '####'" in lines[-2] and "column 'question' must be non-empty" in lines[-1]
    if suffix == ".jsonl":
        assert lines[1].startswith("  line 2: not valid JSON (Expecting value at column 1): 'question: 7+1='")
    assert run.stderr.startswith(f"rlvr: error: {path}: {len(expected)} of ") and run.stderr.count("\n") == 1


def test_training_on_a_gsm8k_file_with_a_malformed_line_names_the_line(cli, tmp_path):
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(json.dumps({"question": "2+3=", "answer": "#### 5"}) + '\n{"question": "x", "answer": "#### 1"\n')
    run = cli(
        "train",
        *("--set", "task.name=hf", "--set", f"task.hf_path={path}", "--set", f"task.hf_eval_path={path}"),
        *("--set", "task.hf_format=gsm8k", "--out", str(tmp_path / "run")),
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"rlvr: error: {path}:2: not valid JSON (Expecting ',' delimiter")


CRITERIA_NEEDED = ["math", "python", "stdio", "c", "pytest", "smt", "checklist", "coq", "lean", "reasoning_gym"]


@pytest.mark.parametrize("kind", CRITERIA_NEEDED)
def test_a_row_whose_criteria_its_verifier_cannot_read_is_named(cli, tmp_path, kind):
    """The criteria are read by the row's own verifier, as training would: a math row with no
    answer, a python row with no entry point ... is a bad row before any sample is drawn."""
    path = _jsonl(tmp_path / "rows.jsonl", [ROW, {"id": "q2", "prompt": "x", "verifier": {"type": kind}}])
    run = cli("data", "check", str(path))
    assert run.returncode == 2
    assert run.stdout.splitlines()[0] == f"rlvr data check: {path} (format rows): 1 of 2 rows good"
    assert run.stdout.splitlines()[1].startswith(f"  line 2: query 'q2' has bad {kind} criteria: ")
    assert "Traceback" not in run.stderr


def test_rows_in_the_documented_forms_pass_their_verifiers_reading(cli, tmp_path):
    rows = [
        ROW,
        {"id": "q2", "prompt": "x", "verifier": {"type": "math", "answer": 42}},
        {"id": "q3", "prompt": "x", "verifier": {"type": "math", "answer": "\\frac{1}{2}"}},
        {
            "id": "q4",
            "prompt": "x",
            "verifier": {"type": "python", "entry_point": "f", "tests": [{"args": [1], "expected": 1}]},
        },
        {"id": "q5", "prompt": "x", "verifier": {"type": "checklist", "items": [{"check": "contains", "value": "a"}]}},
    ]
    run = cli("data", "check", str(_jsonl(tmp_path / "rows.jsonl", rows)))
    assert run.returncode == 0, run.stdout
