"""The One step tab's capture and replay buttons, driven over HTTP with gradio_client against real code."""

from __future__ import annotations

import html
import re
import socket
from pathlib import Path

import pytest

gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")

from rlvr.cli import main  # noqa: E402
from rlvr.diagnostics.inspector import read_capture  # noqa: E402
from rlvr.diagnostics.replay import replay  # noqa: E402
from rlvr.lab import run_lab  # noqa: E402
from rlvr.lab.step import CAPTURES, replay_overrides  # noqa: E402


@pytest.fixture(scope="module")
def step_lab(tmp_path_factory: pytest.TempPathFactory):
    """The lab on an empty folder of its own (its captures stay out of the other tests' run lists)."""
    root = tmp_path_factory.mktemp("lab-step")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app, url = run_lab(root, port, block=False)
    yield root, gradio_client.Client(url, verbose=False)
    app.close()


@pytest.fixture(scope="module")
def trained(step_lab) -> Path:
    """A real 1-step run in the lab's folder: its checkpoint is a policy that differs from the reference."""
    out = step_lab[0] / "run"
    assert (
        main(
            [
                "train",
                "--config",
                "configs/smoke.yaml",
                "--set",
                "train.steps=1",
                "--set",
                "train.threads=1",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def captured(step_lab) -> Path:
    """The Capture button pressed once: one real update of configs/smoke.yaml's base model, step 1."""
    root, client = step_lab
    status, made, _ = client.predict("", 1, api_name="/inspect")
    made = Path(made)
    assert made.name == "capture.html" and made.parent.parent == root / CAPTURES
    assert f"Captured into `{made.parent}`" in status
    return made


def test_capture_button_writes_a_new_capture_and_shows_it(step_lab, captured: Path) -> None:
    _, client = step_lab
    capture = read_capture(captured.with_name("capture.json"))
    assert capture["source"]["kind"] == "config" and capture["source"]["step"] == 1
    frame = client.predict(str(captured), api_name="/capture")
    assert html.unescape(frame.split('srcdoc="', 1)[1].split('" style=', 1)[0]) == captured.read_text()
    _, second, _ = client.predict("", 1, api_name="/inspect")
    assert Path(second) != captured and Path(second).is_file()  # a new folder per click


def test_replay_with_beta_changed_shows_what_replay_returns(step_lab, trained: Path) -> None:
    _, client = step_lab
    _, made, _ = client.predict(str(trained), 2, api_name="/inspect")  # resumes the run's checkpoint
    captured = Path(made)
    assert read_capture(captured.with_name("capture.json"))["source"]["policy"] == "checkpoint after step 1"
    text, difference, frame = client.predict(str(captured), 0.2, 0.5, "grpo", "sequence_mean", api_name="/replay")
    overrides = replay_overrides(0.2, 0.5, "grpo", "sequence_mean")
    expected = replay(read_capture(captured.with_name("capture.json")), captured.parent, overrides)
    assert (
        expected["loss_difference"] != 0
    )  # the policy has moved off the reference, so beta 0.04 -> 0.5 moves the KL term
    assert difference == pytest.approx(expected["loss_difference"], rel=1e-9, abs=1e-12)
    shown = float(re.search(r"\(difference ([-+0-9.]+);", text).group(1))
    assert shown == round(expected["loss_difference"], 6)
    assert "algo.beta=0.5" in text and "cosine" in text and "keeps the captured completions" in text
    assert frame.startswith('<iframe id="replay-frame"')


def test_replay_refuses_dpo_in_one_line(step_lab, captured: Path) -> None:
    _, client = step_lab
    text, difference, frame = client.predict(str(captured), 0.2, 0.04, "dpo", "sequence_mean", api_name="/replay")
    assert text.startswith("Error: ") and "\n" not in text and "Traceback" not in text
    assert "dpo" in text and difference is None and frame == ""
