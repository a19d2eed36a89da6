"""The lab on a real tool run (configs/arith-tool.yaml, 2 steps): the tool-use rate beside accuracy
in the One run view (text and curves, over HTTP too) and in a live run; runs without tools as before."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.lab.app import describe_run, knobs_answer, live_curves, live_status
from rlvr.lab.live import LiveRuns
from rlvr.lab.runs import KNOBS, TOOL_CURVES, accuracy_metrics, live_metrics, measured, read_curves, read_run

from .conftest import REPO

pytestmark = pytest.mark.slow

TOOL = str(REPO / "configs" / "arith-tool.yaml")
SMALL = ["train.steps=2", "train.batch_queries=2", "rollout.group_size=4", "task.num_eval=4",
         "train.eval_samples=1", "train.threads=1"]  # fmt: skip


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-step run with the python tool, in a folder of its own."""
    out = tmp_path_factory.mktemp("lab-tools") / "tool"
    sets = [arg for value in SMALL for arg in ("--set", value)]
    assert main(["train", "--config", TOOL, *sets, "--out", str(out), "--quiet"]) == 0
    return out


def _logged(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def test_the_run_view_shows_the_tool_use_rate_beside_accuracy(tool_run: Path) -> None:
    summary = json.loads((tool_run / "summary.json").read_text())
    steps = [row for row in _logged(tool_run) if "reward" in row]
    run = read_run(tool_run)
    numbers = measured(run)
    assert numbers["tool_use_rate"] == (summary["base"]["tool_use_rate"], summary["final"]["tool_use_rate"])
    assert numbers["tools/use_rate"] == steps[-1]["tools/use_rate"]
    text = describe_run(run)
    lines = text.splitlines()
    accuracy = next(k for k, line in enumerate(lines) if line.startswith("- held-out pass@1 with the training"))
    assert lines[accuracy + 1] == (
        "- held-out tool-use rate (share of samples that ran a tool call; docs/tools.md), base -> final: "
        f"**{_pct(summary['base']['tool_use_rate'])} -> {_pct(summary['final']['tool_use_rate'])}**"
    )
    assert lines[accuracy + 2].endswith(f"last logged step: **{_pct(steps[-1]['tools/use_rate'])}**")
    assert "tools=python" in run.label


def test_the_curves_draw_the_logged_tool_use_rate(tool_run: Path) -> None:
    assert accuracy_metrics(tool_run) == ("reward", "accuracy", *TOOL_CURVES)
    assert live_metrics(tool_run) == ("reward", "accuracy", *TOOL_CURVES)
    steps = [row for row in _logged(tool_run) if "reward" in row]
    drawn = [(c["step"], c["value"]) for c in read_curves(tool_run, TOOL_CURVES)]
    assert drawn == [(row["step"], row["tools/use_rate"]) for row in steps]
    frame = live_curves(str(tool_run))
    assert set(frame["metric"]) == {"reward", "accuracy", "tools/use_rate"} and len(frame) == 3 * len(steps)


def test_an_unfinished_tool_run_shows_its_last_held_out_evaluation(tool_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "unfinished"
    shutil.copytree(tool_run, copy)
    (copy / "summary.json").unlink()
    last = [row for row in _logged(copy) if "eval/tool_use_rate" in row][-1]
    text = describe_run(read_run(copy))
    assert (
        f"held-out tool-use rate at the evaluation of step {last['step']}: **{_pct(last['eval/tool_use_rate'])}**"
        in (text)
    )


def test_runs_without_tools_look_as_before(runs_root: Path) -> None:
    plain = runs_root / "sweep" / "beta0.04"
    assert accuracy_metrics(plain) == ("reward", "accuracy") == live_metrics(plain)
    run = read_run(plain)
    text = describe_run(run)
    assert "tool" not in text and "tools=" not in run.label
    assert measured(run)["tool_use_rate"] == (None, None) and measured(run)["tools/use_rate"] is None


def test_the_one_run_tab_serves_it_over_http(tool_run: Path, tmp_path: Path) -> None:
    gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")
    from rlvr.lab import run_lab

    from .test_app import free_port

    root = tmp_path / "runs"
    shutil.copytree(tool_run, root / "tool")
    knobs = read_run(root / "tool").knobs
    app, url = run_lab(root, free_port(), block=False)
    try:
        text, reward_plot, _ = gradio_client.Client(url, verbose=False).predict(
            *[knobs[name] for name in KNOBS], api_name="/knobs"
        )
    finally:
        app.close()
    expected, _, _ = knobs_answer(root, [knobs[name] for name in KNOBS])
    assert text == expected and "held-out tool-use rate" in text
    steps = [row for row in _logged(tool_run) if "reward" in row]
    drawn = [(row[0], row[2]) for row in reward_plot["data"] if row[1] == "tools/use_rate"]
    assert drawn == [(row["step"], row["tools/use_rate"]) for row in steps]


def test_a_live_tool_run_shows_its_tool_use_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    live = LiveRuns(tmp_path, TOOL)
    run = live.start({"steps": "1", "G": "4"})
    deadline = time.monotonic() + 180
    while run.running and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not run.running and run.process.returncode == 0, run.log.read_text()[-2000:]
    [step] = [row for row in _logged(run.path) if "reward" in row]
    status = live_status(live, str(run.path))
    assert status.startswith(f"`{run.path}`: ended (exit code 0); 1 steps logged.")
    assert f"Step 1: accuracy {_pct(step['accuracy'])}, tool-use rate {_pct(step['tools/use_rate'])}." in status
    frame = live_curves(str(run.path))
    assert set(frame["metric"]) == {"reward", "accuracy", "tools/use_rate"}
    plain = LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml")  # the lab's preset: no tool, status as before
    smoke = plain.start({"steps": "1"})
    while smoke.running and time.monotonic() < deadline + 180:
        time.sleep(0.5)
    assert smoke.process.returncode == 0, smoke.log.read_text()[-2000:]
    assert live_status(plain, str(smoke.path)) == f"`{smoke.path}`: ended (exit code 0); 1 steps logged."
    assert set(live_curves(str(smoke.path))["metric"]) == {"reward", "accuracy"}
