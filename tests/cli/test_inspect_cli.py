"""`rlvr inspect` and `rlvr grad-variance` as a user runs them: real CLI, real tiny model."""

import json
import subprocess
import sys

import pytest

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
    "--set",
    "optim.micro_batch_size=8",
]


def rlvr(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*RLVR, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_inspect_a_run_step_repeats_the_real_update(base_model_dir, tmp_path):
    run, inspected = tmp_path / "run", tmp_path / "inspect"
    done = rlvr(
        "train", "--set", f"model.name={base_model_dir}", "--set", "train.steps=1", *SMALL, "--out", str(run), "--quiet"
    )
    assert done.returncode == 0, done.stderr
    # the run holds a checkpoint after step 1, so step 2 is inspected from the run's own state ...
    done = rlvr("inspect", "--run", str(run), "--step", "2", "--out", str(inspected))
    assert done.returncode == 0, done.stderr
    assert "checkpoint after step 1" in done.stdout and (inspected / "capture.html").is_file()
    capture = json.loads((inspected / "capture.json").read_text())
    # ... and then the run itself takes step 2: the inspector saw exactly the update it made
    done = rlvr("train", "--resume", str(run), "--set", "train.steps=2", "--quiet")
    assert done.returncode == 0, done.stderr
    logged = next(
        json.loads(line)
        for line in (run / "metrics.jsonl").read_text().splitlines()
        if json.loads(line).get("step") == 2 and "loss" in json.loads(line)
    )
    assert capture["loss"] == pytest.approx(logged["loss"], rel=1e-6, abs=1e-9)
    assert capture["grad_norm"] == pytest.approx(logged["grad_norm"], rel=1e-6)
    assert capture["update_norm"] == pytest.approx(logged["update_norm"], rel=1e-6)
    assert capture["grad_noise"]["grad/variance"] == pytest.approx(logged["grad/variance"], rel=1e-6)
    assert sum(map(sum, capture["rewards"])) / 16 == pytest.approx(logged["reward"])
    # a step with no checkpoint behind it is shown from the base weights, and says so
    done = rlvr("inspect", "--run", str(run), "--step", "2", "--out", str(tmp_path / "again"))
    assert done.returncode == 0 and "warning:" in done.stdout and "inspect --step 3" in done.stdout

    done = rlvr(
        "inspect",
        "--replay",
        str(inspected / "capture.json"),
        "--set",
        "algo.beta=0",
        "--set",
        "algo.aggregation=token_mean",
        "--set",
        "algo.algorithm=gspo",
    )
    assert done.returncode == 0, done.stderr
    assert "cosine" in done.stdout and "|g_new - g_captured|" in done.stdout
    result = json.loads((inspected / "replay.json").read_text())
    assert result["config"]["algorithm"] == "gspo" and result["config"]["aggregation"] == "token_mean"
    assert result["loss_before"] == pytest.approx(capture["loss"], rel=1e-5, abs=1e-7)
    assert "replay_weight_difference" in (inspected / "replay.html").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["inspect", "--run", "/nonexistent", "--step", "1"], "no run there"),
        (["inspect", "--run", "/nonexistent"], "needs --step"),
        (["inspect", "--replay", "/nonexistent/capture.json", "--set", "algo.beta=0"], "no such file"),
        (["inspect", "--config", "configs/smoke.yaml", "--set", "algo.beta=-1"], "algo.beta must be >= 0"),
        (["grad-variance", "--group-sizes", "1,2"], "every G must be >= 2"),
        (["grad-variance", "--group-sizes", "two"], "comma-separated integers"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, cli):
    done = cli(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_replay_refuses_settings_that_made_the_batch(base_model_dir, tmp_path):
    done = rlvr(
        "inspect",
        "--config",
        "configs/smoke.yaml",
        "--set",
        f"model.name={base_model_dir}",
        "--set",
        "train.threads=1",
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    capture = str(tmp_path / "capture.json")
    done = rlvr("inspect", "--replay", capture, "--set", "rollout.group_size=8")
    assert done.returncode == 2 and "only algo.*" in done.stderr
    done = rlvr("inspect", "--replay", capture)
    assert done.returncode == 2 and "at least one --set" in done.stderr


def test_grad_variance_writes_a_row_per_group_size(base_model_dir, tmp_path):
    out = tmp_path / "gv.json"
    done = rlvr(
        "grad-variance",
        "--set",
        f"model.name={base_model_dir}",
        "--set",
        "train.batch_queries=3",
        "--set",
        "train.threads=1",
        "--set",
        "algo.beta=0",
        "--group-sizes",
        "2,4",
        "--batches",
        "1",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert "B_simple" in done.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [r["group_size"] for r in rows] == [2, 4] and all(r["prompts"] == 3 for r in rows)
    for r in rows:
        assert r["trace"] >= 0 and r["variance"] == pytest.approx(r["trace"] / 3)


def test_inspect_with_lora_over_a_fully_trained_run_captures_and_replays_the_adapters(base_model_dir, tmp_path, cli):
    run, inspected = tmp_path / "run", tmp_path / "inspect"
    small = [*SMALL, "--set", "task.num_eval=4", "--set", "train.eval_samples=1"]
    done = cli("train", "--set", f"model.name={base_model_dir}", "--set", "train.steps=1", *small, "--out", str(run))
    assert done.returncode == 0, done.stderr
    # the run's checkpoint holds full weights, which do not fit a LoRA policy: step 2 is shown from
    # the base with fresh adapters, and the capture says so
    lora = ["--set", "model.lora_rank=4", "--set", "optim.lr=1e-2"]
    done = cli("inspect", "--run", str(run), "--step", "2", *lora, "--out", str(inspected))
    assert done.returncode == 0, done.stderr
    assert "holds a fully fine-tuned model, not LoRA adapters" in done.stdout
    capture = json.loads((inspected / "capture.json").read_text())
    assert capture["config"]["lora_rank"] == 4 and "fresh LoRA adapters r=4" in capture["source"]["policy"]
    saved = {p.name for p in (inspected / "policy").iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= saved and "model.safetensors" not in saved
    assert capture["grad_norm"] > 0 and abs(capture["stats"]["kl"]) < 1e-6  # B = 0: π_θ is the base, π_ref
    # the replay rebuilds the base with the captured adapters: the captured loss and the gradient,
    # the adapters' alone, come back
    done = cli("inspect", "--replay", str(inspected / "capture.json"), "--set", "algo.aggregation=token_mean")
    assert done.returncode == 0, done.stderr
    result = json.loads((inspected / "replay.json").read_text())
    assert result["loss_before"] == pytest.approx(capture["loss"], rel=1e-5, abs=1e-7)
    assert result["grad_norm_before"] == pytest.approx(capture["grad_norm"], rel=1e-5)
