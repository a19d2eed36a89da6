"""The "Where verifiers break" view: hostile completions through the real PythonVerifier and sandbox."""

from __future__ import annotations

import shutil
import socket

import pytest

from rlvr.lab.breaks import COLUMNS, HOSTILE, judge_hostile
from rlvr.sandbox import bwrap

pytestmark = pytest.mark.skipif(shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
                                reason="bubblewrap is not installed (apt-get install bubblewrap)")

WHY = {"busy_loop": "timeout", "memory_bomb": "memory", "stdout_flood": "output_limit",
       "always_equal_object": "wrong_answer", "exit_0_at_import": "protocol_violation"}
"""Error classes the verifier gives these attacks (as tests/sandbox/test_hostile.py classifies them)."""


def test_only_the_honest_control_passes() -> None:
    frame = judge_hostile()
    assert list(frame.columns) == COLUMNS and len(frame) == len(HOSTILE)
    verdicts = dict(zip(frame["case"], frame["verdict"]))
    assert verdicts.pop("honest_control") == "pass"
    assert set(verdicts.values()) == {"fail"}, verdicts
    classes = dict(zip(frame["case"], frame["error class"]))
    assert {name: classes[name] for name in WHY} == WHY


def test_the_app_runs_them_on_click(tmp_path) -> None:
    gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")
    from rlvr.lab import run_lab

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app, url = run_lab(tmp_path, port, block=False)
    try:
        table = gradio_client.Client(url, verbose=False).predict(api_name="/hostile")
    finally:
        app.close()
    assert table["headers"] == COLUMNS
    rows = {row[0]: row for row in table["data"]}
    assert rows["honest_control"][3] == "pass" and rows["exit_0_at_import"][3] == "fail"
    assert rows["busy_loop"][4] == "timeout"
