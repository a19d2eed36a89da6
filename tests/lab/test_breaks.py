"""The "Where verifiers break" view: hostile completions through the real PythonVerifier and sandbox."""

from __future__ import annotations

import shutil
import socket

import pytest

from rlvr.lab.breaks import COLUMNS, HOSTILE, judge_hostile
from rlvr.sandbox import bwrap

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)

WHY = {
    "busy_loop": "timeout",
    "memory_bomb": "memory",
    "stdout_flood": "output_limit",
    "always_equal_object": "wrong_answer",
    "exit_0_at_import": "protocol_violation",
}
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
    assert rows["honest_control"][2] == "pass" and rows["exit_0_at_import"][2] == "fail"
    assert rows["busy_loop"][3] == "timeout"


def test_hacked_examples_are_training_passes_that_gold_fails(hacked_run, runs_root) -> None:
    from rlvr.config import load_config
    from rlvr.lab.breaks import HACK_COLUMNS, hacked_examples, hacked_runs
    from rlvr.lab.runs import scan_runs
    from rlvr.tasks import load_task
    from rlvr.verifiers import RewardFunction

    assert [run.path for run in hacked_runs(scan_runs(hacked_run.parent))] == [hacked_run]
    assert hacked_runs(scan_runs(runs_root)) == []  # gold runs: nothing to compare
    counts, frame = hacked_examples(hacked_run)
    assert counts["sampled"] == 32 and list(frame.columns) == HACK_COLUMNS
    assert len(frame) == counts["hacked"] > 0  # half of the tiny model's gold fails are flipped to passes
    assert (
        counts["hacked"] <= counts["training passes"] and counts["gold passes"] + counts["hacked"] <= counts["judged"]
    )
    gold = RewardFunction({"correctness": 1.0})
    by_prompt = {q.prompt: q for q in load_task(load_config(hacked_run / "config.yaml").task)[0]}
    for prompt, completion in zip(frame["query"], frame["completion"]):
        assert gold.score(by_prompt[prompt], completion).correct is False  # gold really fails each shown one


def test_the_app_rescores_a_hacked_run(hacked_run) -> None:
    gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")
    from rlvr.lab import run_lab

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app, url = run_lab(hacked_run.parent, port, block=False)
    try:
        client = gradio_client.Client(url, verbose=False)
        text, table = client.predict(str(hacked_run), api_name="/hacked")
        missing, _ = client.predict("", api_name="/hacked")
    finally:
        app.close()
    assert "reward.fidelity=noisy" in text and "hacked" in text
    assert all(row[2] == "pass" and row[3] == "fail" for row in table["data"]) and table["data"]
    assert "No finished run chosen" in missing and "reward.fidelity=noisy" in missing
