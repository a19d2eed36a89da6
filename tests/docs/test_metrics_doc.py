"""docs/metrics.md defines every key that `rlvr train` logs: one real training step per preset
(and per sampling variant), in-process, on the tiny models; every key of metrics.jsonl must be a
key, or match a pattern such as `memory/*`, in the page's `| key | definition |` tables."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from rlvr.cli import main

from .mdtext import REPO, code_spans, is_separator, split_cells, table_blocks

METRICS_PAGE = REPO / "docs" / "metrics.md"
PRESETS = sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
# One step, a few short queries: seconds per run. Two micro-batches of 4 so the gradient-noise keys
# appear; the preset's own max_new_tokens so that some answers finish and DPO can form pairs.
FAST = [
    "train.steps=1",
    "train.batch_queries=2",
    "rollout.group_size=4",
    "optim.micro_batch_size=4",
    "train.eval_samples=1",
    "task.num_eval=2",
    "task.num_train=8",
    "train.save_every=0",
]
VARIANTS = {  # the keys that only some settings log
    **{preset: (preset, []) for preset in PRESETS},
    "smoke.yaml+kl_in_reward": ("smoke.yaml", ["algo.kl_placement=reward"]),
    "smoke.yaml+bf16_sampler_tis": ("smoke.yaml", ["rollout.dtype=bfloat16", "algo.tis_cap=2"]),
    "smoke.yaml+async": ("smoke.yaml", ["rollout.max_staleness=1", "train.steps=3"]),
}
SHOWS = {  # a key a variant is here to show: if it is not logged, the run did not exercise that code
    "smoke.yaml": "grad/variance",
    "ppo.yaml": "memory/critic_optimizer",
    "dpo.yaml": "rewards/chosen",  # only when the step formed a (pass, fail) pair
    "dapo.yaml": "dynamic_sampling/rounds",
    "funcsynth-visible.yaml": "hacking/rate",
    "smoke.yaml+bf16_sampler_tis": "sampling/mismatch_kl",
    "smoke.yaml+async": "sync/changed_frac",  # from the second sync on
}


def documented_keys() -> list[re.Pattern]:
    """Each key of the page's key tables as a pattern: '*', '…' and '<name>' match any text."""
    patterns = [re.compile("step")]  # defined by the page's first paragraph, outside a table
    for block in table_blocks(METRICS_PAGE):
        if len(block) < 3 or split_cells(block[0].text)[0] != "key" or not is_separator(block[1].text):
            continue
        for row in block[2:]:
            for key in code_spans(split_cells(row.text)[0]):
                pattern = re.escape(key).replace(r"\*", ".+").replace("…", ".+")
                patterns.append(re.compile(re.sub(r"<[^>]+>", "[^/]+", pattern)))
    return patterns


def test_the_page_defines_keys_as_patterns_too():
    keys = documented_keys()
    assert any(p.fullmatch("critic/value_loss") for p in keys) and len(keys) > 50
    assert "`step`" in METRICS_PAGE.read_text(encoding="utf-8").split("\n\n")[1]


def run_one_step(preset: str, overrides: list[str], out) -> list[dict]:
    argv = ["train", "--config", str(REPO / "configs" / preset), "--out", str(out), "--quiet"]
    for override in FAST + overrides:
        argv += ["--set", override]
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        code = main(argv)
    assert code == 0, stderr.getvalue()
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_logged_metric_is_defined(variant, tmp_path, request):
    preset, overrides = VARIANTS[variant]
    if preset == "qwen2.5-0.5b-gsm8k-lora.yaml":  # its model and data are made here (tests/conftest.py)
        overrides = [*request.getfixturevalue("gpu_recipe_inputs"), *overrides]
    rows = run_one_step(preset, overrides, tmp_path / "run")
    logged = sorted({key for row in rows for key in row})
    keys = documented_keys()
    undefined = [key for key in logged if not any(p.fullmatch(key) for p in keys)]
    assert undefined == [], f"configs/{preset} {' '.join(overrides)} logs keys docs/metrics.md does not define"
    assert SHOWS.get(variant, "loss") in logged
