"""benchmarks/fsdp_memory_check.py under torchrun: the estimator's per-process bytes of weights,
gradients and AdamW state equal the tensors two CPU processes hold, whole and sharded by FSDP2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_estimator_matches_the_bytes_each_process_holds_whole_and_sharded():
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         str(REPO / "benchmarks" / "fsdp_memory_check.py"), "--layers", "2", "--hidden", "128", "--vocab", "1000"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = re.findall(r"^(ddp|fsdp2) .*?(policy_\w+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)$", done.stdout, re.M)
    assert len(rows) == 6
    held = {(kind, key): int(h.replace(",", "")) for kind, key, h, _, _ in rows}
    for kind, key, h, est, ratio in rows:
        assert float(ratio) == pytest.approx(1.0, abs=0.15), (kind, key)  # the bar: within 15%
    for key in ("policy_weights", "policy_gradients", "policy_optimizer"):
        assert held[("fsdp2", key)] * 2 == held[("ddp", key)]  # each of 2 processes holds half
