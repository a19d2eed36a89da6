"""benchmarks/gpu_check.py, the GPU recipe's prepared check, run for real on the CPU with --dry-run:
the recipe (configs/qwen2.5-0.5b-gsm8k-lora.yaml) on a random Qwen2 of Qwen2.5-0.5B's head layout
and GSM8K-format rows written by the script, then the vLLM check's own dry run in its process."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_dry_run_trains_the_recipe_and_runs_the_vllm_check(tmp_path):
    out = tmp_path / "check.json"
    done = run("--dry-run", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["mode"] == "dry-run" and result["ok"] is True
    assert "model.dtype=float32" in result["settings"] and "reward.fidelity=noisy" in result["settings"]
    steps = result["steps"]
    assert [s["step"] for s in steps] == [1, 2] and all(math.isfinite(s["loss"]) for s in steps)
    assert result["adapters_max_change"] > 0  # the update reached the LoRA adapters
    # 2 queries x 4 samples of at most 32 tokens; random weights seldom stop early
    assert all(0 < s["sampled_tokens"] <= 2 * 4 * 32 and s["generate_tokens_per_s"] > 0 for s in steps)
    assert all(s["peak_allocated_bytes"] is None and s["accounted_peak_bytes"] > 0 for s in steps)  # no CUDA here
    assert result["estimate_command"].startswith("rlvr memory --model ")
    assert "--lora-rank 16" in result["estimate_command"] and "--grad-checkpointing" in result["estimate_command"]
    assert result["estimate_bytes"]["peak_total"] > 0
    asynchronous = result["async"]["steps"]  # the same steps with a sampler process beside the trainer
    assert [s["step"] for s in asynchronous] == [1, 2] and all(math.isfinite(s["loss"]) for s in asynchronous)
    assert asynchronous[0]["staleness"] == 0 and asynchronous[1]["staleness"] == 1
    assert (
        "asynchronous rollouts (rollout.max_staleness=1), 2 steps:" in done.stdout
        and "--steps 6 or more" in done.stdout
    )
    assert result["vllm_check"]["status"] == "passed" and all(result["vllm_check"]["checks"].values())
    assert "rlvr memory's estimate" in done.stdout and "vLLM check" in done.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device: the script would run for real")
def test_without_cuda_it_exits_2_with_one_line(tmp_path):
    done = run("--out", str(tmp_path / "never.json"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "no CUDA device" in done.stderr and "--dry-run" in done.stderr
    assert not (tmp_path / "never.json").exists()
    assert run("--dry-run", "--steps", "0").returncode == 2
