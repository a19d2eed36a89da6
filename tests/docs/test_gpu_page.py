"""docs/gpu.md's memory figures are what `rlvr memory` prints for the recipe today: each `$ rlvr
memory` transcript shows the command's own output, the first is the recipe's setup
(`setup_for_run`), and the table's peaks are the estimates of the setups its rows name."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import replace

import pytest

from rlvr.cli import main
from rlvr.config import load_config
from rlvr.diagnostics.memory_estimate import estimate
from rlvr.diagnostics.memory_model import load_model_spec
from rlvr.diagnostics.memory_setup import memory_command, setup_for_run

from .mdtext import REPO, fenced_blocks, split_cells, table_blocks

PAGE = REPO / "docs" / "gpu.md"
RECIPE = REPO / "configs" / "qwen2.5-0.5b-gsm8k-lora.yaml"


def transcripts() -> list[tuple[str, list[str]]]:
    """(command, the lines shown under it) for each `$ rlvr memory` line of the page."""
    shown = []
    for block in fenced_blocks(PAGE):
        current = None
        for line in block:
            if line.text.startswith("$ "):
                current = (line.text[2:], [])
                shown.append(current)
            elif current is not None:
                current[1].append(line.text)
    return [(command, lines) for command, lines in shown if command.startswith("rlvr memory")]


def printed(command: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(shlex.split(command)[1:]) == 0
    return out.getvalue().rstrip("\n").splitlines()


def test_the_page_shows_the_recipes_memory_command_first():
    recipe = setup_for_run(load_config(RECIPE), prompt_len=256)
    assert transcripts()[0][0] == memory_command("Qwen2.5-0.5B", recipe)


@pytest.mark.parametrize("command, lines", transcripts())
def test_each_memory_transcript_is_what_rlvr_memory_prints(command, lines):
    assert lines == printed(command)


def test_the_tables_peaks_are_the_estimates_of_its_setups():
    spec, recipe = load_model_spec("Qwen2.5-0.5B"), setup_for_run(load_config(RECIPE), prompt_len=256)
    vllm = replace(recipe, rollout_backend="vllm")
    rows = {
        "the recipe, HF sampler": [recipe],
        "the recipe, vLLM sampler (u = 0.3)": [replace(vllm, gpu_memory_gib=24), replace(vllm, gpu_memory_gib=80)],
        "without checkpointing": [replace(recipe, grad_checkpointing=False)],
        "32 sequences per micro-batch, without checkpointing": [
            replace(recipe, grad_checkpointing=False, micro_batch=32)
        ],
    }
    table = next(block for block in table_blocks(PAGE) if split_cells(block[0].text)[0] == "setup")
    cells = {split_cells(row.text)[0]: split_cells(row.text)[2] for row in table[2:]}
    assert set(cells) == set(rows)
    for label, setups in rows.items():
        peaks = [estimate(spec, setup).components["peak_total"].bytes for setup in setups]
        assert re.findall(r"\d+\.\d\d", cells[label]) == [f"{peak / 2**30:.2f}" for peak in peaks], label
