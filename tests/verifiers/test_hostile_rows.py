"""The hostile rows (tests/verifiers/hostile_rows.py) through `rlvr verify`, the path the trainer's
verifiers share: every row fails, none is unscorable (`verifier/unscorable` stays 0), and each
fail says why.

With tests/sandbox/test_hostile.py (python completions, both sandbox modes) and the reader/writer
pairs of tests/sandbox/test_isolation.py this is the project's hostile suite; its size is checked
here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.sandbox import bwrap

from ..sandbox import leaks, test_hostile
from . import hostile_rows

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

ROWS = hostile_rows.all_rows()


def test_the_hostile_suite_has_at_least_100_cases_over_every_verifier() -> None:
    names = [name for name, _, _ in ROWS]
    assert len(names) == len(set(names))
    verifiers = {"math", "smt", "checklist", "reasoning_gym", "lean", "coq", "pytest", "stdio"}
    assert {row["type"] for _, row, _ in ROWS} == verifiers
    python_cases = len(test_hostile.CASES) + 2 * len(leaks.CHANNELS)  # cases, and reader/writer pairs
    assert len(ROWS) + python_cases >= 100


def test_every_hostile_row_fails_through_rlvr_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = tmp_path / "hostile.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"query": {"id": name, "prompt": "", "verifier": row}, "completion": text}) + "\n"
            for name, row, text in ROWS
        ),
        encoding="utf-8",
    )
    out = tmp_path / "results.jsonl"
    assert main(["verify", "--input", str(rows), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    results = {r["query_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    wrong = {
        name: (r["verdict"], r["error_class"], r["detail"][:100])
        for name, r in results.items()
        if r["verdict"] != "fail" or r["error_class"] == "none"
    }
    assert not wrong, wrong
    assert summary["verdicts"] == {"fail": len(ROWS)}  # so verifier/unscorable would be 0
