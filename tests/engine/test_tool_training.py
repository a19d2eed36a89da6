"""Every algorithm of the GRPO family, and DPO, trains on tool rollouts through the real
`rlvr train`; the settings tool rollouts cannot take are refused with a message that names them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["train.steps=2", "train.batch_queries=4", "rollout.group_size=8", "task.num_eval=4", "train.eval_samples=1",
         "train.threads=1"]  # fmt: skip


def _train(cli, out: Path, preset: str | None, *sets: str) -> list[dict]:
    argv = ["train", "--quiet", "--config", str(ROOT / "configs/arith-tool.yaml"), "--out", str(out)]
    if preset:  # the algorithm's preset on top of the tool run's settings
        for key, value in _flat(preset):
            argv += ["--set", f"{key}={value}"]
    for value in [*SMALL, *sets]:
        argv += ["--set", value]
    done = cli(*argv)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _flat(preset: str) -> list[tuple[str, object]]:
    """The algo section of a preset (configs/NAME.yaml) as key=value pairs."""
    import yaml

    algo = yaml.safe_load((ROOT / "configs" / f"{preset}.yaml").read_text())["algo"]
    return [(f"algo.{k}", "" if v is None else v) for k, v in algo.items()]


@pytest.mark.slow
@pytest.mark.parametrize("preset", [None, "dr_grpo", "dapo", "gspo", "rloo", "reinforce_pp", "dpo"])
def test_each_algorithm_trains_on_tool_rollouts(cli, tmp_path, preset):
    lines = _train(cli, tmp_path / "run", preset)
    steps = [m for m in lines if "reward" in m]
    assert len(steps) == 2
    for m in steps:
        assert m["tools/call_frequency"] > 0 and 0 < m["tools/observation_share"] < 1
        assert m["tools/turns"] >= 1 and m["grad_norm"] > 0
        assert m["completions/mean_length"] > 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert 0 <= summary["final"]["tool_use_rate"] <= 1


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["algo.algorithm=ppo"], "rollout.tools=python is not available with algo.algorithm=ppo"),
        (["rollout.backend=vllm"], "rollout.tools=python runs on rollout.backend=hf only"),
        (["rollout.max_turns=0"], "rollout.max_turns must be > 0"),
        (["rollout.tool_timeout_s=0"], "rollout.tool_timeout_s must be > 0"),
        (["rollout.tool_format=xml"], "rollout.tool_format"),
        (["rollout.tools=bash"], "rollout.tools"),
        (["rollout.tool_format=chat"], "rollout.tool_format=chat needs chat prompts"),  # tiny-arith-tool is plain
    ],
)
def test_settings_tool_rollouts_cannot_take_are_refused(cli, tmp_path, sets, message):
    argv = ["train", "--config", str(ROOT / "configs/arith-tool.yaml"), "--out", str(tmp_path / "run")]
    for value in sets:
        argv += ["--set", value]
    done = cli(*argv)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()  # nothing written


def test_a_machine_whose_sandbox_cannot_run_refuses_tool_rollouts_by_name(cli, tmp_path, monkeypatch):
    # As on a machine without bubblewrap (tests/sandbox/test_bwrap.py does the same for verifiers):
    # the run stops before any model work, with the sandbox's own reason, and leaves nothing.
    from rlvr.sandbox import bwrap

    monkeypatch.setattr(bwrap, "TOOL_PATH", str(tmp_path))  # no bwrap, prlimit or setpriv here
    monkeypatch.setattr(bwrap, "_HOST", None)
    done = cli("train", "--config", str(ROOT / "configs/arith-tool.yaml"), "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "rollout.tools=python runs each call in the sandbox" in done.stderr and "bubblewrap" in done.stderr
    assert not (tmp_path / "run").exists()
