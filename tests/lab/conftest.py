"""Real run directories for the lab tests, made by the real CLI (configs/smoke.yaml, 2 steps)."""

from __future__ import annotations

import json
import shutil
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
        code = main(
            [
                "train",
                "--config",
                SMOKE,
                "--set",
                "train.steps=2",
                "--set",
                f"algo.beta={beta}",
                "--set",
                "train.threads=1",
                "--out",
                str(root / "sweep" / f"beta{beta}"),
                "--quiet",
            ]
        )
        assert code == 0
    return root


def _eval(run: Path) -> Path:
    """A real `rlvr eval` of a run against the shipped base (n=4, k=1,2,4, 8 queries)."""
    out = run / "eval"
    code = main(
        ["eval", "--model", str(run / "final"), "--base", "tiny-arith", "--n", "4", "--k", "1,2,4",
         "--num-queries", "8", "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0
    return out / "eval.json"


@pytest.fixture(scope="session")
def eval_json(runs_root: Path) -> Path:
    """The beta=0.04 run's eval.json."""
    return _eval(runs_root / "sweep" / "beta0.04")


@pytest.fixture(scope="session")
def eval_json_beta0(runs_root: Path) -> Path:
    """The beta=0.0 run's eval.json, to put beside the other on one plot."""
    return _eval(runs_root / "sweep" / "beta0.0")


@pytest.fixture(scope="session")
def funcsynth_eval_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `rlvr eval` on another task, funcsynth (no reasoning checker: CoT-pass@k is null), of
    the shipped base against itself (n=4, k=1,2,4, 8 queries), in its own folder."""
    out = tmp_path_factory.mktemp("lab-evals") / "funcsynth" / "eval"
    code = main(
        ["eval", "--task", "funcsynth", "--model", "tiny-funcsynth", "--base", "tiny-funcsynth", "--n", "4",
         "--k", "1,2,4", "--num-queries", "8", "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0
    return out / "eval.json"


@pytest.fixture(scope="session")
def capture_html(runs_root: Path) -> Path:
    """A real `rlvr inspect` of step 1 of the beta=0.04 run."""
    run = runs_root / "sweep" / "beta0.04"
    assert main(["inspect", "--run", str(run), "--step", "1", "--out", str(run / "inspect")]) == 0
    return run / "inspect" / "capture.html"


@pytest.fixture(scope="session")
def compare_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real, smallest allowed `rlvr compare` (grpo, ppo, dpo x seeds 0,1 x 8 steps; n=2 on 4 queries).

    In its own folder, so the knob tests' run list stays the two sweep runs.
    """
    out = tmp_path_factory.mktemp("lab-compare") / "compare"
    code = main(
        [
            "compare",
            "--config",
            SMOKE,
            "--set",
            "train.threads=1",
            "--seeds",
            "0,1",
            "--steps",
            "8",
            "--n",
            "2",
            "--num-queries",
            "4",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    return out


@pytest.fixture(scope="session")
def hacked_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 2-step run against a noisy verifier that passes half of the gold fails (its own folder)."""
    out = tmp_path_factory.mktemp("lab-hacked") / "noisy"
    code = main(
        [
            "train",
            "--config",
            SMOKE,
            "--set",
            "train.steps=2",
            "--set",
            "train.threads=1",
            "--set",
            "reward.fidelity=noisy",
            "--set",
            "reward.false_positive_rate=0.5",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    return out


@pytest.fixture(scope="session")
def your_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's runs after a first session, made by the real CLI on the atlas's default configuration
    (each one a run of the atlas's default value of every knob), small held-out evaluations:
    `default3-seed0`, `default3-seed1` (3 steps), `default5-seed0` (5 steps), `ppo3-seed0`
    (`algo.algorithm=ppo` on the default configuration, as `rlvr compare` sets it, 3 steps), and
    `cut`: the 5-step run as an interruption after step 2 leaves it (no summary.json, no final/)."""
    root = tmp_path_factory.mktemp("your-runs") / "runs"
    small = ["--set", "task.num_eval=8", "--set", "train.eval_samples=2", "--set", "train.threads=1", "--quiet"]
    for name, steps, seed, extra in (("default3-seed0", 3, 0, []), ("default3-seed1", 3, 1, []),
                                     ("default5-seed0", 5, 0, []), ("ppo3-seed0", 3, 0, ["--set", "algo.algorithm=ppo"])):  # fmt: skip
        sets = ["--set", f"train.steps={steps}", "--set", f"train.seed={seed}", *extra, *small]
        assert main(["train", *sets, "--out", str(root / name)]) == 0
    cut = root / "cut"
    shutil.copytree(root / "default5-seed0", cut)
    (cut / "summary.json").unlink()
    shutil.rmtree(cut / "final")
    lines = (cut / "metrics.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line).get("step", 0) <= 2]
    (cut / "metrics.jsonl").write_text("\n".join(kept) + "\n")
    return root
