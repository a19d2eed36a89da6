"""benchmarks/gpu_vllm_check.py's own plumbing, run for real on the CPU with --dry-run."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_vllm_check.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_dry_run_trains_with_the_bf16_sampler_and_verifies_the_sync(tmp_path):
    out = tmp_path / "check.json"
    done = run("--dry-run", "--steps", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["dry_run"] is True and result["backend"] == "hf" and result["sampler_dtype"] == "bfloat16"
    assert [s["step"] for s in result["steps"]] == [1, 2] and result["ok"] is True
    assert set(result["checks"]) == {
        "synced_after_every_update",
        "sampler_moved_more_than_gap",
        "loss_finite",
        "tis_metrics_logged",
        "stopped_rows_end_with_stop_token",
    }
    for step in result["steps"]:
        assert 0 < step["probe_gap"] <= result["tolerance"] < step["probe_moved"]  # bf16 noise < the update's change
        assert step["sampling/sampling_logp_difference/mean"] > 0


def test_a_tight_tolerance_fails_the_check_and_bad_arguments_are_refused(tmp_path):
    out = tmp_path / "check.json"
    done = run("--dry-run", "--steps", "1", "--tolerance", "1e-9", "--out", str(out))
    assert done.returncode == 1  # bf16 cannot match float32 to 1e-9: the sync check can fail
    assert json.loads(out.read_text())["checks"]["synced_after_every_update"] is False
    assert run("--steps", "0").returncode == 2


@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None and torch.cuda.is_available(),
    reason="this machine has vLLM and a GPU: the script would run for real",
)
def test_without_vllm_the_gpu_mode_says_what_is_missing(tmp_path):
    done = run("--out", str(tmp_path / "never.json"))
    assert done.returncode == 2 and "rollout.backend=vllm" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "never.json").exists()
