"""Commands built on advantages and a per-token loss refuse DPO with one line, not a traceback.
(`rlvr inspect` captures DPO steps too: tests/diagnostics/test_inspect_matches_train.py.)"""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("command", [["grad-variance"]])
def test_policy_gradient_tools_refuse_dpo(command, tmp_path):
    args = [part.format(tmp=tmp_path) for part in command]
    done = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args, "--config", "configs/smoke.yaml", "--set", "algo.algorithm=dpo"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "learns from preference pairs" in done.stderr and "Traceback" not in done.stderr
