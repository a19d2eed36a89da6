"""The real Gradio app on a free localhost port, driven over HTTP with gradio_client."""

from __future__ import annotations

import html
import json
import socket
import urllib.request
from pathlib import Path

import pytest

gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")

from rlvr.cli import main  # noqa: E402
from rlvr.lab import run_lab  # noqa: E402
from rlvr.lab.runs import KNOBS, measured, read_run, scan_runs  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(runs_root: Path, eval_json: Path, capture_html: Path):
    app, url = run_lab(runs_root, free_port(), block=False)
    yield url
    app.close()


def _knobs(runs_root: Path, beta: str) -> list[str]:
    knobs = dict(scan_runs(runs_root)[0].knobs) | {"beta": beta}
    return [knobs[name] for name in KNOBS]


def test_serves_the_page(lab: str) -> None:
    with urllib.request.urlopen(lab, timeout=30) as response:
        assert response.status == 200
        assert "rlvr lab" in response.read().decode()


def test_moving_a_knob_changes_the_numbers(lab: str, runs_root: Path) -> None:
    client = gradio_client.Client(lab, verbose=False)
    answers = {}
    for beta in ("0.0", "0.04"):
        text, reward_plot, kl_plot = client.predict(*_knobs(runs_root, beta), api_name="/knobs")
        answers[beta] = text
        run = read_run(runs_root / "sweep" / f"beta{beta}")
        final = measured(run)["pass@1"][1]
        assert f"beta={beta} " in text and f"{100 * final:.1f}%" in text
    assert answers["0.0"] != answers["0.04"]
    text, _, _ = client.predict(*_knobs(runs_root, "0.5"), api_name="/knobs")
    assert "No run for this setting" in text and "--grid algo.beta=0.5" in text


def test_memory_view_calls_the_estimator(lab: str) -> None:
    client = gradio_client.Client(lab, verbose=False)
    ppo = client.predict("Qwen2.5-7B", "ppo", api_name="/memory")
    grpo = client.predict("Qwen2.5-7B", "grpo", api_name="/memory")
    ppo_rows = [row[0] for row in ppo["data"]]
    grpo_rows = [row[0] for row in grpo["data"]]
    assert "critic_weights" in ppo_rows and "critic_weights" not in grpo_rows
    assert ppo_rows[-1] == grpo_rows[-1] == "peak_total"


def test_missing_gradio_is_a_user_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setitem(__import__("sys").modules, "gradio", None)  # `import gradio` now raises ImportError
    assert main(["lab", "--port", str(free_port())]) == 2
    assert "pip install 'rlvr[lab]'" in capsys.readouterr().err


def test_port_in_use_is_a_user_error(runs_root: Path, capsys: pytest.CaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["lab", "--runs", str(runs_root), "--port", str(port)]) == 2
    assert f"--port {port} is in use" in capsys.readouterr().err


def test_passk_view_reads_the_eval_json(lab: str, eval_json: Path) -> None:
    client = gradio_client.Client(lab, verbose=False)
    text, plot, table = client.predict(str(eval_json), api_name="/passk")
    assert "n=4 samples" in text and "8 held-out arith queries" in text and "paired 95% interval" in text
    assert "No eval.json chosen" in client.predict([], api_name="/passk")[0]


def test_passk_view_shows_another_tasks_intervals(lab: str, funcsynth_eval_json: Path) -> None:
    client = gradio_client.Client(lab, verbose=False)
    text, plot, table = client.predict(str(funcsynth_eval_json), api_name="/passk")
    assert "8 held-out funcsynth queries, n=4 samples" in text and "no reasoning checker" in text
    report = json.loads(funcsynth_eval_json.read_text())
    shown = {(row[1], row[2], row[3]): row[4:] for row in table["data"]}
    for label, model in report["models"].items():
        for i, k in enumerate(report["k"]):
            low, high = model["pass@k_ci"][i]
            expected = [round(100 * model["pass@k"][i], 1), round(100 * low, 1), round(100 * high, 1)]
            assert shown[(label, "pass@k", k)] == expected
            assert shown[(label, "CoT-pass@k", k)][0] == "n/a"
    assert [shown[("model - base", "pass@k", k)] for k in report["k"]] == [[0.0, 0.0, 0.0]] * 3  # paired draws


def test_passk_view_overlays_several_runs(lab: str, eval_json: Path, eval_json_beta0: Path) -> None:
    client = gradio_client.Client(lab, verbose=False)
    text, plot, table = client.predict([str(eval_json), str(eval_json_beta0)], api_name="/passk")
    assert "**beta0.04/eval**" in text and "**beta0.0/eval**" in text
    assert plot["columns"] == ["k", "series", "value"]
    rows = {(series, k): value for k, series, value in plot["data"]}
    series = {s for s, _ in rows}
    for name, path in (("beta0.04/eval", eval_json), ("beta0.0/eval", eval_json_beta0)):
        report = json.loads(path.read_text())
        for label in ("base", "model"):
            assert f"{name}: {label} pass@k" in series
            expected = report["models"][label]["pass@k"]
            assert [rows[(f"{name}: {label} pass@k", k)] for k in report["k"]] == pytest.approx(expected)


def test_one_step_view_embeds_the_capture(lab: str, capture_html: Path) -> None:
    client = gradio_client.Client(lab, verbose=False)
    frame = client.predict(str(capture_html), api_name="/capture")
    assert frame.startswith("<iframe") and "srcdoc=" in frame
    assert html.unescape(frame.split('srcdoc="', 1)[1].split('" style=', 1)[0]) == capture_html.read_text()
    assert "rlvr inspect --run" in client.predict(str(capture_html.with_name("capture.json")), api_name="/capture")
