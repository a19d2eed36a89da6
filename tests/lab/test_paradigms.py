"""The "Paradigms compared" view: a real `rlvr compare` output (tests/lab/conftest.py), read and served."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from rlvr.lab.paradigms import (
    COMPARE_COMMAND,
    MIB,
    compare_frame,
    estimate_frame,
    find_compares,
    measured_memory_frame,
    read_compare,
)


def test_reads_the_compare_output(compare_dir: Path) -> None:
    assert find_compares(compare_dir.parent) == [compare_dir / "compare.json"]
    report = read_compare(compare_dir / "compare.json")
    assert report == json.loads((compare_dir / "compare.json").read_text())
    frame = compare_frame(report)
    assert list(frame.columns) == ["quantity", "grpo", "ppo", "dpo", "base model"]
    # every row is the row `rlvr compare` printed into compare.md
    md = (compare_dir / "compare.md").read_text().splitlines()[2:]
    assert ["| " + " | ".join(row) + " |" for row in frame.astype(str).values.tolist()] == md


def test_measured_memory_is_the_reports(compare_dir: Path) -> None:
    report = read_compare(compare_dir / "compare.json")
    frame = measured_memory_frame(report)
    assert set(frame["algorithm"]) == {"grpo", "ppo", "dpo"}
    for algo in ("grpo", "ppo"):
        row = frame[(frame["algorithm"] == algo) & (frame["metric"] == "memory/peak_total")].iloc[0]
        assert row["MiB (mean)"] == round(report["algorithms"][algo]["memory"]["memory/peak_total"]["mean"] / MIB, 2)
        assert row["MiB (mean)"] > 0


def test_estimates_side_by_side() -> None:
    frame = estimate_frame("Qwen2.5-7B").set_index("component (GiB per GPU)")
    assert list(frame.columns) == ["grpo", "ppo", "dpo"] and frame.index[-1] == "peak_total"
    assert frame.loc["critic_weights", "ppo"] > 0 and frame.loc["critic_weights", "grpo"] == 0
    assert frame.loc["peak_total", "ppo"] > frame.loc["peak_total", "grpo"]  # PPO also trains a value network
    assert frame.loc["peak_total", "grpo"] > estimate_frame("tiny-arith").iloc[-1]["grpo"]


def test_read_compare_rejects_other_files(tmp_path: Path) -> None:
    (tmp_path / "compare.json").write_text('{"k": [1]}')
    (tmp_path / "bad.json").write_text("{")
    assert read_compare(tmp_path / "compare.json") is None and read_compare(tmp_path / "bad.json") is None
    assert find_compares(tmp_path / "missing") == []


gradio_client = pytest.importorskip("gradio_client", reason="the lab needs rlvr[lab]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(compare_dir: Path):
    from rlvr.lab import run_lab

    app, url = run_lab(compare_dir.parent, _free_port(), block=False)
    yield url
    app.close()


def test_view_serves_table_figure_and_memory(lab: str, compare_dir: Path) -> None:
    client = gradio_client.Client(lab, verbose=False)
    text, table, figure, measured = client.predict(str(compare_dir / "compare.json"), api_name="/paradigms")
    assert "grpo, ppo, dpo" in text and "8 steps x seeds [0, 1]" in text
    assert [row[0] for row in table["data"]] == compare_frame(read_compare(compare_dir / "compare.json"))[
        "quantity"
    ].tolist()
    assert Path(figure).read_bytes() == (compare_dir / "compare.png").read_bytes()
    assert {row[0] for row in measured["data"]} == {"grpo", "ppo", "dpo"}
    text, *_ = client.predict("", api_name="/paradigms")
    assert "No `rlvr compare` output" in text and COMPARE_COMMAND in text


def test_view_estimates_the_picked_model(lab: str) -> None:
    client = gradio_client.Client(lab, verbose=False)
    big = client.predict("Qwen2.5-7B", api_name="/paradigm_memory")
    small = client.predict("tiny-arith", api_name="/paradigm_memory")
    assert big["headers"] == ["component (GiB per GPU)", "grpo", "ppo", "dpo"]
    assert big["data"][-1][0] == "peak_total" and big["data"][-1][1] > small["data"][-1][1]
