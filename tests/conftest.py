"""Shared fixtures: real tiny models saved in Hugging Face format, real tasks, no mocks."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import settings

from rlvr.bases import SHIPPED
from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.models import load_policy
from rlvr.models.tokenizer import build_char_tokenizer

torch.set_num_threads(2)
REPO = Path(__file__).resolve().parents[1]

# Property tests draw the same examples on every run (CI included): a failure reproduces, and a
# green run is not luck. New examples come from changing the strategies, not from the clock.
settings.register_profile("rlvr", derandomize=True, deadline=None)
settings.load_profile("rlvr")


@pytest.fixture(scope="session")
def random_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained two-layer Llama with the char tokenizer: fast, and fully real."""
    path = tmp_path_factory.mktemp("tiny-random")
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(
        tokenizer, TinyArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2), seed=0
    )
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def gpu_recipe_inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """--set overrides that run configs/qwen2.5-0.5b-gsm8k-lora.yaml here: the model and data it names
    are not on this machine, so a small random Qwen2 and GSM8K rows are made as its dry run makes
    them (benchmarks/gpu_check.py), and it trains on the CPU in float32 with short completions."""
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "benchmarks" / "gpu_check.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    path = tmp_path_factory.mktemp("gpu-recipe")
    model = check.build_random_qwen(path / "model", small=True, device="cpu")
    data = check.write_gsm8k(path / "gsm8k", train=8, test=2)
    return [f"model.name={model}", f"task.hf_path={data}", "model.device=cpu", "rollout.max_new_tokens=32",
            "model.dtype=float32", "rollout.dtype=float32"]  # fmt: skip


@pytest.fixture(scope="session")
def base_model_dir() -> Path:
    """The shipped embedded base model (warmed up on arith)."""
    assert (SHIPPED / "config.json").is_file(), "the embedded base model is missing from the package"
    return SHIPPED


@pytest.fixture()
def random_policy(random_model_dir: Path):
    return load_policy(str(random_model_dir))


@pytest.fixture()
def base_policy(base_model_dir: Path):
    return load_policy(str(base_model_dir))


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the `rlvr` command in this process (`rlvr.cli.main`): what a user sees, without a
    subprocess. Argument errors exit through argparse's SystemExit, as they do for a user."""
    from rlvr.cli import main

    def run(*args: str) -> CliRun:
        capsys.readouterr()  # only this command's output
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        out = capsys.readouterr()
        return CliRun(code, out.out, out.err)

    return run


@pytest.fixture
def train_updates(cli, base_model_dir: Path, tmp_path: Path):
    """Train the tiny base for two small steps with the given `--set` values through the real
    `rlvr train` (in this process) and return the update lines of metrics.jsonl; fails with the
    command's stderr if it does not exit 0."""
    import json

    def run(*sets: str, max_new_tokens: int = 24) -> list[dict]:
        out = tmp_path / "run"
        small = [
            f"model.name={base_model_dir}", "task.num_eval=4", "train.eval_samples=1", "train.steps=2",
            "train.batch_queries=2", "rollout.group_size=4", f"rollout.max_new_tokens={max_new_tokens}",
            "train.threads=1",
        ]  # fmt: skip
        argv = ["train", "--quiet", "--out", str(out)]
        for value in [*small, *sets]:
            argv += ["--set", value]
        done = cli(*argv)
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        return [m for m in lines if "reward" in m]

    return run
