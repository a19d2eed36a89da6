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


def test_the_tiny_arith_prompt_width_is_that_of_the_default_task():
    """`rlvr memory`'s default P for tiny-arith is the padded width of the default run's prompts."""
    from rlvr.bases import resolve_model_path
    from rlvr.diagnostics.memory_setup import ARITH_PROMPT_LEN
    from rlvr.models import load_policy
    from rlvr.rollout.hf import encode_prompts
    from rlvr.rollout.prompts import PromptFormat
    from rlvr.tasks import load_task

    cfg = load_config(None, [])
    train, heldout = load_task(cfg.task)
    _, tokenizer = load_policy(str(resolve_model_path("tiny-arith")))
    ids, _ = encode_prompts(tokenizer, [q.prompt for q in train + heldout], fmt=PromptFormat.of(cfg.task))
    assert ids.shape[1] == ARITH_PROMPT_LEN
