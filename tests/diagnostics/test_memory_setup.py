"""A run config as `rlvr memory` sees it (diagnostics/memory_setup.py): its TrainingSetup, and a
command line that prints exactly that setup's estimate."""

import json
from pathlib import Path

from rlvr.cli import main
from rlvr.config import load_config
from rlvr.diagnostics.memory_estimate import estimate
from rlvr.diagnostics.memory_model import load_model_spec
from rlvr.diagnostics.memory_setup import memory_command, setup_for_run


def test_a_run_config_maps_to_its_setup_and_to_the_rlvr_memory_command(capsys):
    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "qwen2.5-0.5b-gsm8k-lora.yaml")
    setup = setup_for_run(cfg, prompt_len=256)
    assert (setup.precision, setup.lora_rank, setup.grad_checkpointing) == ("bf16-mixed", 16, True)
    assert (setup.batch, setup.group, setup.micro_batch, setup.completion_len) == (16, 8, 8, 512)
    assert setup_for_run(load_config(None, []), prompt_len=8).precision == "fp32"
    assert setup_for_run(load_config(None, ["optim.micro_batch_size=0"]), prompt_len=8).micro_batch == 16 * 8
    command = memory_command("Qwen2.5-0.5B", setup)
    assert command.endswith("--rollout-dtype bfloat16 --grad-checkpointing")
    capsys.readouterr()
    assert main([*command.split()[1:], "--json"]) == 0  # the command prints this very estimate
    printed = json.loads(capsys.readouterr().out)["components"]
    expected = estimate(load_model_spec("Qwen2.5-0.5B"), setup).components
    assert {k: v["bytes"] for k, v in printed.items()} == {k: round(c.bytes) for k, c in expected.items()}
