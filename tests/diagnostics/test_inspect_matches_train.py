"""The inspector shows the update the trainer takes, for every preset and algorithm.

For each preset in configs/ (and KL in the reward, TIS with a bfloat16 sampler, LoRA): train one step
(the run keeps its checkpoint), capture step 2 with `inspect_run` from that checkpoint, then resume
the run for step 2. The captured loss, grad_norm and update_norm must be the ones the run logs.
Both go through `run_step` (engine/step.py); a copy of the step that drifted would fail here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import load_config
from rlvr.diagnostics.inspector import inspect_run
from rlvr.engine.loop import train

PRESETS = sorted(path.name for path in Path("configs").glob("*.yaml"))
EXTRA = {
    "kl_in_reward": ("smoke.yaml", ["algo.kl_placement=reward", "algo.beta=0.1"]),
    "tis_bf16_sampler": ("smoke.yaml", ["rollout.dtype=bfloat16", "algo.tis_cap=2"]),
    # LoRA: the checkpoint holds the adapters; the reference is the base with them switched off
    "lora": ("smoke.yaml", ["model.lora_rank=4", "optim.lr=1e-2"]),
    "lora_dpo": ("dpo.yaml", ["model.lora_rank=4", "optim.lr=1e-2"]),
}
CASES = {name: (name, []) for name in PRESETS} | EXTRA
SMALL = [
    "train.batch_queries=4",
    "rollout.group_size=4",
    "task.num_eval=4",
    "train.eval_samples=1",
    "task.num_train=24",
    "rollout.max_new_tokens=48",
    "train.threads=1",
    "optim.micro_batch_size=8",
    "train.eval_every=0",
    "train.save_every=1",
]


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_inspect_at_step_n_is_the_update_train_logs_for_step_n(
    case: str, base_model_dir, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    preset, extra = CASES[case]
    model = [] if preset.startswith("funcsynth") else [f"model.name={base_model_dir}"]
    if preset == "qwen2.5-0.5b-gsm8k-lora.yaml":  # its model and data are made here (tests/conftest.py)
        model = request.getfixturevalue("gpu_recipe_inputs")
    overrides = [*SMALL, *model, *extra]
    run = tmp_path / "run"
    train(load_config(f"configs/{preset}", [*overrides, "train.steps=1"]), run, progress=False)
    capture = inspect_run(run, 2, [], tmp_path / "inspect")
    assert capture["source"]["policy"].startswith("checkpoint after step 1") and "warning" not in capture["source"]
    train(load_config(f"configs/{preset}", [*overrides, "train.steps=2"]), run, resume=True, progress=False)
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    step2 = next(m for m in logged if m.get("step") == 2 and "loss" in m)
    for key in ("loss", "grad_norm", "update_norm"):
        if step2[key] is None or step2[key] != step2[key]:  # no value: DPO with no pair takes no step
            assert capture[key] is None, key
        else:
            assert capture[key] == pytest.approx(step2[key], rel=1e-6, abs=1e-9), key
