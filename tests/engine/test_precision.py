"""model.dtype=bfloat16 and model.gradient_checkpointing in real Trainer steps on the shipped base."""

from __future__ import annotations

import math

import pytest
import torch

from rlvr.config import load_config
from rlvr.engine.loop import Trainer
from rlvr.models.loading import checkpointed_layers

SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=4",
         "rollout.max_new_tokens=16", "optim.micro_batch_size=8"]  # fmt: skip
RECIPE = ["model.lora_rank=4", "model.dtype=bfloat16", "rollout.dtype=bfloat16", "model.gradient_checkpointing=true"]


def test_the_recipes_precision_trains_float32_adapters_on_a_bf16_base(base_model_dir, tmp_path):
    cfg = load_config(None, [f"model.name={base_model_dir}", *SMALL, *RECIPE, "optim.lr=1e-2"])
    trainer = Trainer(cfg, tmp_path)
    policy = trainer.policy
    assert trainer.sampler.model is policy  # a bf16 policy samples itself at rollout.dtype=bfloat16: no copy
    assert checkpointed_layers(policy)
    dtypes = {name: p.dtype for name, p in policy.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}
    before = {name: p.detach().clone() for name, p in policy.named_parameters()}

    metrics = trainer.step(0)
    assert math.isfinite(metrics["loss"]) and metrics["grad_norm"] > 0
    states = [v for state in trainer.optimizer.state.values() for v in state.values() if v.dim() > 0]
    assert states and {v.dtype for v in states} == {torch.float32}  # AdamW's m and v of float32 adapters
    after = dict(policy.named_parameters())
    assert all(torch.equal(before[n], after[n]) for n in before if "lora_" not in n)  # the bf16 base never moves
    assert any(not torch.equal(before[n], after[n]) for n in before if "lora_" in n)
    # memory/policy_weights counts each tensor's own bytes: a bf16 base (2 B) and float32 adapters (4 B)
    expected = sum(p.numel() * (4 if "lora_" in n else 2) for n, p in policy.named_parameters())
    assert metrics["memory/policy_weights"] == pytest.approx(expected, rel=0.01)  # tied embeddings count once


def test_checkpointing_cuts_the_measured_activations_and_keeps_the_update(base_model_dir, tmp_path):
    def first_step(checkpointing: bool) -> dict[str, float]:
        settings = [f"model.name={base_model_dir}", *SMALL, "model.forward=hf"]
        cfg = load_config(None, [*settings, f"model.gradient_checkpointing={str(checkpointing).lower()}"])
        return Trainer(cfg, tmp_path / str(checkpointing)).step(0)

    plain, checkpointed = first_step(False), first_step(True)
    assert checkpointed["loss"] == pytest.approx(plain["loss"], abs=1e-6)
    assert checkpointed["grad_norm"] == pytest.approx(plain["grad_norm"], rel=1e-4)
    # 4 layers: the forward keeps each layer's input instead of all its intermediates (the layer being
    # recomputed in the backward holds its own again, which the saved-tensor count does not see)
    assert checkpointed["memory/activations"] < 0.5 * plain["memory/activations"]
