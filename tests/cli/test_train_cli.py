"""The real `rlvr` command on a tiny model: run directory contract, errors, resume after a kill."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

RLVR = [sys.executable, "-m", "rlvr.cli"]
SMALL = [
    "--set",
    "train.batch_queries=4",
    "--set",
    "rollout.group_size=4",
    "--set",
    "task.num_eval=8",
    "--set",
    "train.eval_samples=2",
    "--set",
    "task.num_train=40",
    "--set",
    "train.threads=1",
]


def rlvr(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*RLVR, *args], capture_output=True, text=True, timeout=timeout)


def test_train_writes_the_run_directory_of_the_design(base_model_dir, tmp_path, cli):
    out = tmp_path / "run"
    done = cli(
        "train",
        "--set",
        f"model.name={base_model_dir}",
        "--set",
        "train.steps=3",
        *SMALL,
        "--seed",
        "5",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert "held-out pass@1" in done.stdout
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["train"]["seed"] == 5 and cfg["train"]["steps"] == 3
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in rows if "reward" in r]
    assert [r["step"] for r in train_rows] == [1, 2, 3]
    for key in (
        "reward",
        "reward_std",
        "frac_reward_zero_std",
        "kl",
        "entropy",
        "clip_ratio/low_mean",
        "clip_ratio/high_mean",
        "clip_ratio/region_mean",
        "completions/mean_length",
        "grad_norm",
        "learning_rate",
        "time/generate",
        "time/verify",
        "time/forward_backward",
        "time/optimizer",
    ):
        assert key in train_rows[0], key
    assert all(r["grad_norm"] is not None and r["grad_norm"] >= 0 for r in train_rows)
    summary = json.loads((out / "summary.json").read_text())
    assert {"base", "final", "steps", "wall_s"} <= set(summary) and summary["steps"] == 3
    assert 0 <= summary["base"]["pass@1"] <= 1 and 0 <= summary["final"]["pass@1"] <= 1
    # the checkpoint is a Hugging Face model that differs from the base: training moved it
    again = cli("train", "--out", str(out))  # never clobbers a finished run
    assert again.returncode == 2 and "already holds a run" in again.stderr
    trained = AutoModelForCausalLM.from_pretrained(str(out / "final"))
    base = AutoModelForCausalLM.from_pretrained(str(base_model_dir))
    moved = [not torch.equal(a, b) for a, b in zip(trained.parameters(), base.parameters())]
    assert any(moved)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "rollout.group_size=1"], "rollout.group_size must be >= 2"),
        (["--set", "algo.beta=-1"], "algo.beta must be >= 0"),
        (["--set", "optim.micro_batch_size=5"], "does not divide"),
        (["--config", "nope.yaml"], "config file not found"),
        (["--set", "model.name=/nonexistent"], "neither 'tiny-arith' nor a directory"),
        (
            ["--set", "task.name=jsonl", "--set", "task.train_path=/no.jsonl", "--set", "task.eval_path=/no.jsonl"],
            "dataset file not found",
        ),
        (["--resume", "/nonexistent"], "no run with a checkpoint"),
    ],
)
def test_user_errors_exit_2_with_one_line_and_no_traceback(args, message, tmp_path, cli):
    done = cli("train", *args, "--out", str(tmp_path / "r")) if "--resume" not in args else cli("train", *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_asking_for_cuda_without_one_is_a_user_error(tmp_path, cli):
    done = cli("train", "--set", "model.device=cuda", "--set", "task.num_eval=8", "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "no CUDA device" in done.stderr and "Traceback" not in done.stderr


def test_dataset_row_without_criteria_is_named(tmp_path, cli):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"id": "a", "prompt": "1+1", "verifier": {"type": "math", "answer": "2"}}\n{"id": "b", "prompt": "2+2"}\n'
    )
    done = cli(
        "train",
        "--set",
        "task.name=jsonl",
        "--set",
        f"task.train_path={rows}",
        "--set",
        f"task.eval_path={rows}",
        "--out",
        str(tmp_path / "r"),
    )
    assert done.returncode == 2 and "rows.jsonl:2: missing 'verifier'" in done.stderr


def _wait_for_steps(metrics: Path, n: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.2)
    raise AssertionError("run made no progress")


@pytest.mark.slow
def test_resume_after_kill_loses_no_step_and_matches_an_uninterrupted_run(base_model_dir, tmp_path):
    common = ["--set", f"model.name={base_model_dir}", "--set", "train.steps=5", *SMALL, "--quiet"]
    straight = tmp_path / "straight"
    assert rlvr("train", *common, "--out", str(straight)).returncode == 0

    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [*RLVR, "train", *common, "--out", str(killed)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for_steps(killed / "metrics.jsonl", 2, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "summary.json").exists()
    done = rlvr("train", "--resume", str(killed), "--quiet")
    assert done.returncode == 0, done.stderr
    steps = [
        json.loads(line)["step"]
        for line in (killed / "metrics.jsonl").read_text().splitlines()
        if "reward" in json.loads(line)
    ]
    assert steps == [1, 2, 3, 4, 5]  # none lost, none twice
    # optimizer and RNG state came back: the resumed run ends where the uninterrupted one does
    a = load_file(straight / "final" / "model.safetensors")
    b = load_file(killed / "final" / "model.safetensors")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def _has_tensorboard() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


@pytest.mark.skipif(_has_tensorboard(), reason="tensorboard is installed")
def test_tensorboard_without_the_extra_says_how_to_install_it(base_model_dir, tmp_path):
    done = rlvr(
        "train",
        "--set",
        f"model.name={base_model_dir}",
        "--set",
        "train.tensorboard=true",
        "--set",
        "train.steps=1",
        *SMALL,
        "--out",
        str(tmp_path / "r"),
        "--quiet",
    )
    assert done.returncode == 2 and "pip install -e '.[tensorboard]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_summary_lines_say_before_and_after_with_gold_and_tool_lines_when_they_apply():
    from rlvr.rundir import summary_lines

    held_out = {"pass@1": 0.25, "greedy": 0.5, "n": 4, "gold_pass@1": 0.2, "gold_greedy": 0.5, "hacking_rate": 0.05}
    trained = held_out | {"pass@1": 0.5, "gold_pass@1": 0.3, "hacking_rate": 0.2, "tool_use_rate": 0.75}
    summary = {"base": held_out | {"tool_use_rate": 0.0}, "final": trained, "steps": 3, "wall_s": 12.4}
    assert summary_lines(summary, temperature=1.0, fidelity="visible_only", tools="python") == [
        "held-out pass@1 (n=4, T=1.0): 0.250 -> 0.500 (+25.0 points); greedy 0.500 -> 0.500; 3 steps in 12 s",
        "gold verifier (reward.fidelity=visible_only trained): held-out gold pass@1 0.200 -> 0.300, greedy "
        "0.500 -> 0.500; hacking rate 0.050 -> 0.200 (docs/hacking.md)",
        "tool use (rollout.tools=python): share of held-out samples that ran a call 0.000 -> 0.750 (docs/tools.md)",
    ]
    gold = {"base": {"pass@1": 0.25, "greedy": 0.5}, "final": {"pass@1": 0.5, "greedy": 0.75, "n": 4}}
    assert len(summary_lines(gold | {"steps": 3, "wall_s": 1}, temperature=1.0, fidelity="gold", tools="none")) == 1
