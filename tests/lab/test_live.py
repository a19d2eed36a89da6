"""Live runs: real `rlvr train` processes in their own directories, stoppable, never orphaned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rlvr.errors import UserError
from rlvr.lab.live import LiveRuns
from rlvr.lab.runs import read_run

from .conftest import REPO

pytestmark = pytest.mark.slow


def _wait(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return predicate()


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_live_runs_finish_in_separate_directories_and_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    live = LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml")
    short = live.start({"steps": "2", "beta": "0.0"})
    long = live.start({"steps": "500"})
    assert short.path != long.path and short.path.parent == long.path.parent == tmp_path
    assert _wait(lambda: not short.running, 180), "a 2-step smoke run should finish within 3 minutes"
    assert short.process.returncode == 0, short.log.read_text()[-2000:]
    run = read_run(short.path)
    assert run.finished and run.knobs["steps"] == "2" and run.knobs["beta"] == "0.0"
    assert live.stop(long.path) is True
    assert long.process.returncode is not None and not _group_alive(long.process.pid)
    assert live.stop(long.path) is False  # already ended


def test_stop_all_kills_every_child(tmp_path: Path) -> None:
    live = LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml")
    runs = [live.start({"steps": "500"}) for _ in range(2)]
    live.stop_all()
    assert all(not r.running and not _group_alive(r.process.pid) for r in runs)


def test_unknown_knob_and_missing_preset(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown knob"):
        LiveRuns(tmp_path, REPO / "configs" / "smoke.yaml").start({"temperature": "2"})
    with pytest.raises(UserError, match="preset"):
        LiveRuns(tmp_path, tmp_path / "absent.yaml").start({})


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(proc.name))
        except OSError:
            continue  # it ended while we looked
    return pids


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_killing_the_lab_kills_its_live_runs(runs_root: Path, tmp_path: Path, stop_signal: int) -> None:
    gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")
    from .test_app import free_port

    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    inherited = signal.getsignal(signal.SIGINT)
    lab = subprocess.Popen(
        [sys.executable, "-m", "rlvr.cli", "lab", "--runs", str(tmp_path), "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # as from a terminal: an ignored SIGINT is inherited through exec, and a process started
        # with SIGINT ignored (a background job, or a test run whose parent ignores it) never sees Ctrl-C
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    output: list[str] = []
    try:
        assert "http://127.0.0.1:" in lab.stdout.readline()  # the address, printed once it serves
        # keep reading what the lab prints: a full pipe would block it, and the text explains a failure
        threading.Thread(target=lambda: output.extend(lab.stdout), daemon=True).start()
        client = gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)
        knobs = ["arith", "grpo", "4", "0.04", "gold", "0.0005", "500", "0"]
        status = client.predict(*knobs, api_name="/start_live")  # the State output stays on the server
        run_path = status.split("`")[1]
        assert Path(run_path).parent == tmp_path and "running" in status
        assert _wait(lambda: bool(_processes_mentioning(run_path)), 30)
        lab.send_signal(stop_signal)
        try:
            lab.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"the lab did not exit within 60 s of signal {stop_signal} (SIGINT in the test process: "
                f"{inherited}); it printed:\n" + "".join(output[-40:])
            )
    finally:
        if lab.poll() is None:
            lab.kill()
    all_ended = _wait(lambda: not _processes_mentioning(str(tmp_path)), 15)
    for pid in _processes_mentioning(str(tmp_path)):  # leave no stray trainer behind a failing test
        os.kill(pid, signal.SIGKILL)
    assert all_ended, "a live run outlived the lab"


def test_stop_button_ends_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")
    from rlvr.lab import run_lab

    from .test_app import free_port

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    app, url = run_lab(tmp_path, free_port(), block=False)
    try:
        client = gradio_client.Client(url, verbose=False)
        started = client.predict("arith", "grpo", "4", "0.04", "gold", "0.0005", "500", "0", api_name="/start_live")
        run_path = started.split("`")[1]
        assert "running" in started and _wait(lambda: bool(_processes_mentioning(run_path)), 30)
        stopped = client.predict(api_name="/stop_live")  # the session's State names the run
        assert run_path in stopped and "ended (exit code" in stopped
        assert not _processes_mentioning(run_path)
    finally:
        app.close()
