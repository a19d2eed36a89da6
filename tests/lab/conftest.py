"""Real run directories for the lab tests, made by the real CLI (configs/smoke.yaml, 2 steps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.cli import main

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "configs" / "smoke.yaml")


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished 2-step runs that differ only in beta (0.0 and 0.04), nested as a sweep nests them."""
    root = tmp_path_factory.mktemp("lab-runs")
    for beta in ("0.0", "0.04"):
        code = main(["train", "--config", SMOKE, "--set", "train.steps=2", "--set", f"algo.beta={beta}",
                     "--set", "train.threads=1", "--out", str(root / "sweep" / f"beta{beta}"), "--quiet"])
        assert code == 0
    return root
