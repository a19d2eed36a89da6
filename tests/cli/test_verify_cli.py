"""`rlvr verify` end to end: the real command on a small mixed file with bad rows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.sandbox import bwrap

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
    pytest.mark.skipif(shutil.which("gcc", path=bwrap.TOOL_PATH) is None, reason="gcc is not installed"),
]

ADD_TESTS = [{"stdin": "1 2\n", "stdout": "3\n"}]
ROWS = [
    {
        "query": {"id": "add-py", "prompt": "", "verifier": {"type": "stdio", "tests": ADD_TESTS}},
        "completion": "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
    },
    {
        "query": {"id": "add-py", "prompt": "", "verifier": {"type": "stdio", "tests": ADD_TESTS}},
        "completion": "```python\nprint(4)\n```",
    },
    {
        "query": {
            "id": "add-c",
            "prompt": "",
            "verifier": {"type": "c", "flags": ["-O2", "-Wall", "-Werror"], "tests": ADD_TESTS},
        },
        "completion": "```c\nint main(void) { int unused; return 0; }\n```",
    },
    {
        "query": {"id": "m", "prompt": "", "verifier": {"type": "math", "answer": "42"}},
        "completion": "<think>6*7</think><answer>42</answer>",
    },
]


def write_rows(path: Path, bad_lines: list[str]) -> None:
    lines = [json.dumps(row) for row in ROWS[:2]] + bad_lines + [json.dumps(row) for row in ROWS[2:]]
    path.write_text("\n".join(lines) + "\n")


def rlvr_verify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "verify", *args], capture_output=True, text=True, timeout=120
    )


def test_verify_counts_verdicts_writes_results_and_names_bad_rows(tmp_path: Path) -> None:
    rows, out = tmp_path / "rows.jsonl", tmp_path / "results.jsonl"
    write_rows(
        rows,
        [
            "{not json",
            json.dumps({"query": {"id": "nv", "prompt": "p"}, "completion": "x"}),
            json.dumps({"query": {"id": "z", "verifier": {"type": "nope"}}, "completion": "x"}),
        ],
    )
    done = rlvr_verify("--input", str(rows), "--out", str(out))
    assert done.returncode == 2, done.stderr  # some rows were bad
    assert "7 rows" in done.stdout and "4 checked, 3 bad" in done.stdout
    counts = {tuple(line.split()) for line in done.stdout.splitlines()}
    assert {("pass", "2"), ("fail", "2"), ("wrong_answer", "1"), ("compile_error", "1"), ("none", "2")} <= counts
    assert "checks/s" in done.stdout
    errors = done.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in errors] == ["row 3", "row 4", "row 5"]
    assert "malformed JSON" in errors[0] and "verification criteria" in errors[1] and "'nope'" in errors[2]
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["row"] for r in results] == [1, 2, 3, 4, 5, 6, 7]
    assert [r.get("verdict") for r in results] == ["pass", "fail", None, None, None, "fail", "pass"]
    assert [r["query_id"] for r in results] == ["add-py", "add-py", None, "nv", "z", "add-c", "m"]
    assert results[5]["error_class"] == "compile_error" and "error:" in results[5]["detail"]
    assert "bad_row" in results[2] and {"score", "tests", "elapsed_s"} <= results[0].keys()


def test_verify_exit_code_is_zero_when_every_row_is_processable(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROWS[3]) + "\n")
    done = rlvr_verify("--input", str(rows))
    assert done.returncode == 0, done.stderr
    assert "1 checked, 0 bad" in done.stdout


def test_verify_missing_input_is_one_line_exit_2(tmp_path: Path, cli) -> None:
    done = cli("verify", "--input", str(tmp_path / "absent.jsonl"))
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "no such file" in done.stderr


def test_verify_json_summary_runs_python_rows_in_the_pool(tmp_path: Path) -> None:
    query = {
        "id": "sq",
        "prompt": "",
        "verifier": {
            "type": "python",
            "entry_point": "f",
            "tests": [{"args": [3], "expected": 9}],
            "hidden_tests": [{"args": [4], "expected": 16}],
        },
    }
    honest = {"query": query, "completion": "<answer>def f(x):\n    return x * x</answer>"}
    table = {"query": query, "completion": "<answer>def f(x):\n    return {3: 9}[x]</answer>"}
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in [honest, table] * 10))
    done = rlvr_verify("--input", str(rows), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["checked"] == 20 and summary["bad"] == 0
    assert summary["verdicts"] == {"fail": 10, "pass": 10}
    assert summary["error_classes"] == {"none": 10, "runtime_error": 10}  # KeyError on the hidden input
    assert summary["checks_per_s"] > 0
