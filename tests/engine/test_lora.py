"""LoRA fine-tuning (model.lora_rank > 0): real short runs of the Trainer on the shipped base model."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rlvr.config import load_config
from rlvr.engine.context import StepObserver
from rlvr.engine.loop import Trainer, train
from rlvr.engine.update import reference_logprobs
from rlvr.models import load_policy
from rlvr.models.logprobs import token_logprobs
from rlvr.models.lora import add_lora, is_lora, load_adapter

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=4"]
LORA = ["model.lora_rank=4", "optim.lr=1e-2", "train.eval_samples=1", "train.memory_metrics=false"]


def _cfg(base_model_dir, *overrides, path=None):
    return load_config(path, [f"model.name={base_model_dir}", *SMALL, *LORA, *overrides])


def _weights(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


class Record(StepObserver):
    def rollouts(self, rollouts):
        self.batch = rollouts.batch

    def reference(self, ref_logp):
        self.ref_logp = ref_logp

    def micro_batch(self, mb, logp):
        self.mb, self.logp = mb, logp.detach()


def test_reference_is_the_base_with_adapters_off_and_only_adapters_train(base_model_dir, tmp_path):
    trainer = Trainer(_cfg(base_model_dir, "algo.beta=0.04"), tmp_path)
    assert trainer.reference is None  # no second copy of the model is held
    assert trainer.context.reference.model is trainer.policy and trainer.context.reference.adapters_off
    trainable = {n for n, p in trainer.policy.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    optimized = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert optimized == {id(p) for n, p in trainer.policy.named_parameters() if n in trainable}
    before = _weights(trainer.policy)
    assert all(not before[n].any() for n in before if "lora_B" in n)  # B = 0: adapters start as the identity

    record = Record()
    metrics = trainer.step(0, record)
    assert metrics["grad_norm"] > 0
    # step 0: the loss saw π_θ = π_ref (same rows, same trimmed width)
    ref_rows = record.ref_logp[record.mb.rows, : record.mb.width]  # [n, t]
    assert torch.allclose(record.logp, ref_rows, atol=1e-5)
    assert abs(metrics["kl"]) < 1e-6

    after = _weights(trainer.policy)
    assert all(torch.equal(before[n], after[n]) for n in before if n not in trainable)  # the base is untouched
    assert any(not torch.equal(before[n], after[n]) for n in trainable)
    # after the update the reference is still the base, exactly, and the policy has moved off it
    batch, temperature = record.batch, trainer.cfg.rollout.temperature
    assert torch.equal(trainer.context.reference.logprobs(batch, temperature=temperature), record.ref_logp)
    policy_logp = reference_logprobs(trainer.policy, batch, temperature=temperature)  # [N, T]
    assert (policy_logp - record.ref_logp).abs().max() > 1e-4


@pytest.fixture(scope="module")
def straight_run(base_model_dir, tmp_path_factory) -> Path:
    """Two LoRA steps without interruption."""
    out = tmp_path_factory.mktemp("lora-straight")
    train(_cfg(base_model_dir, "train.steps=2"), out, progress=False)
    return out


def test_checkpoint_holds_the_adapter_and_resume_matches_an_uninterrupted_run(base_model_dir, straight_run, tmp_path):
    train(_cfg(base_model_dir, "train.steps=1"), tmp_path, progress=False)
    checkpoint = tmp_path / "checkpoint"
    assert {"adapter_config.json", "adapter_model.safetensors", "trainer_state.pt"} <= {
        p.name for p in checkpoint.iterdir()
    }
    assert not (checkpoint / "model.safetensors").exists()
    base_bytes = (base_model_dir / "model.safetensors").stat().st_size
    assert (checkpoint / "adapter_model.safetensors").stat().st_size < base_bytes / 4  # r = 4: ~5% of the weights
    one_step = load_file(checkpoint / "adapter_model.safetensors")

    train(_cfg(base_model_dir, "train.steps=2"), tmp_path, resume=True, progress=False)
    resumed = load_file(tmp_path / "final" / "adapter" / "adapter_model.safetensors")
    straight = load_file(straight_run / "final" / "adapter" / "adapter_model.safetensors")
    assert resumed.keys() == straight.keys()
    assert all(torch.allclose(resumed[k], straight[k], atol=1e-6) for k in straight)
    assert any(not torch.allclose(resumed[k], one_step[k]) for k in one_step)  # the second step did move it


def test_final_is_a_plain_model_with_the_adapted_policys_log_probs(base_model_dir, straight_run):
    merged, tokenizer = load_policy(str(straight_run / "final"))
    assert not is_lora(merged)
    adapted, _ = load_policy(str(base_model_dir))
    adapted = add_lora(adapted, _cfg(base_model_dir).model)
    load_adapter(adapted, straight_run / "final" / "adapter")
    base, _ = load_policy(str(base_model_dir))

    prompts = tokenizer(["12+7=", "3*4="], return_tensors="pt", padding=True)
    completions = tokenizer(["19", "12"], return_tensors="pt", padding=True, add_special_tokens=False)
    args = (prompts.input_ids, prompts.attention_mask, completions.input_ids, completions.attention_mask)
    with torch.no_grad():
        merged_logp, _ = token_logprobs(merged, *args, temperature=1.0)  # [2, t]
        adapted_logp, _ = token_logprobs(adapted, *args, temperature=1.0)
        base_logp, _ = token_logprobs(base, *args, temperature=1.0)
    assert torch.allclose(merged_logp, adapted_logp, atol=1e-5)
    assert (merged_logp - base_logp).abs().max() > 1e-4  # the merge carried the trained adapters


@pytest.mark.parametrize(
    "overrides, preset",
    [
        (["algo.algorithm=grpo"], None),
        (["algo.algorithm=gspo"], None),
        (["algo.algorithm=rloo"], None),
        (["algo.algorithm=reinforce_pp"], None),
        ([], "dr_grpo.yaml"),
        (["algo.max_sampling_rounds=1"], "dapo.yaml"),
        (["algo.algorithm=dpo"], None),
    ],
    ids=["grpo", "gspo", "rloo", "reinforce_pp", "dr_grpo", "dapo", "dpo"],
)
def test_each_algorithm_runs_two_lora_steps(base_model_dir, tmp_path, overrides, preset):
    cfg = _cfg(base_model_dir, *overrides, path=CONFIGS / preset if preset else None)
    trainer = Trainer(cfg, tmp_path)
    assert trainer.reference is None  # no copy: the base with adapters off, or none at all (DAPO's β = 0)
    assert (trainer.context.reference is None) == (preset == "dapo.yaml")
    before = _weights(trainer.policy)
    steps = [trainer.step(0), trainer.step(1)]
    assert all(math.isfinite(m["loss"]) and m["grad_norm"] > 0 for m in steps)
    after = _weights(trainer.policy)
    assert all(torch.equal(before[n], after[n]) for n in before if "lora_" not in n)  # the base is untouched
    moved = [n for n in before if not torch.equal(before[n], after[n])]
    assert moved and all("lora_" in n for n in moved)  # the adapters trained


@pytest.mark.parametrize(
    "setting, message",
    [
        (["model.lora_rank=-1"], "model.lora_rank must be >= 0"),
        (["model.lora_rank=4", "model.lora_alpha=0"], "model.lora_alpha must be > 0"),
        (["model.lora_rank=4", "model.lora_dropout=0.1"], "model.lora_dropout must be 0 (got 0.1)"),
        (["model.lora_rank=4", "algo.algorithm=ppo"], "not supported with algo.algorithm=ppo"),
        (["model.lora_rank=4", "model.forward=lean"], "cannot see LoRA adapters"),
    ],
)
def test_bad_lora_settings_exit_2_with_one_line(cli, tmp_path, setting, message):
    args = [a for s in setting for a in ("--set", s)]
    done = cli("train", *args, "--out", str(tmp_path / "run"), "--quiet")
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "setting, message",
    [
        ("model.lora_rank=8", "model.lora_rank=4 (this run: 8)"),
        ("model.lora_target_modules=q_proj,v_proj", "model.lora_target_modules="),
        ("model.lora_rank=0", "holds LoRA adapters, and model.lora_rank is 0"),
    ],
)
def test_resuming_with_other_lora_settings_exits_2_with_one_line(
    base_model_dir, straight_run, tmp_path, cli, setting, message
):
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    done = cli("train", "--resume", str(run), "--set", "train.steps=3", "--set", setting, "--quiet")
    assert done.returncode == 2 and "cannot resume from" in done.stderr and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_lora_without_peft_says_how_to_install_it(cli, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "peft", None)  # what Python does for a package that is not there
    done = cli("train", "--set", "model.lora_rank=4", "--out", str(tmp_path / "run"), "--quiet")
    assert done.returncode == 2 and "pip install -e '.[lora]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
