"""`rlvr plan` (diagnostics/plan.py): the first way of training that fits, checked against the
estimator it rests on, and (--verify) against a real step."""

import re
import shlex
from dataclasses import replace

import pytest

from rlvr.diagnostics.memory_estimate import TrainingSetup, estimate
from rlvr.diagnostics.memory_model import load_model_spec
from rlvr.diagnostics.plan import HEADROOM, make_plan, micro_batches, tiers
from rlvr.errors import UserError
from rlvr.rundir import OPTIMIZER_SHARDS, read_metrics

QWEN = load_model_spec("Qwen2.5-1.5B")
BASE = TrainingSetup(prompt_len=256, completion_len=1024, batch=32, group=8)


def _peak(setup: TrainingSetup) -> float:
    return estimate(QWEN, setup).components["peak_total"].bytes


@pytest.mark.parametrize(("gpus", "gib"), [(1, 80), (1, 40), (2, 40), (8, 24), (4, 16), (2, 24)])
def test_the_plan_is_the_first_tier_that_fits_at_its_largest_micro_batch(gpus, gib):
    base = replace(BASE, gpus=gpus, gpu_memory_gib=gib)
    plan = make_plan(QWEN, base)
    budget = HEADROOM * gib * 2**30
    assert plan.budget == budget and _peak(plan.setup) <= budget
    order = tiers(gpus)
    chosen = order.index(plan.tier)
    for earlier in order[:chosen]:  # every cheaper way fails even at micro-batch 1
        assert _peak(replace(earlier.setup(base), micro_batch=1)) > budget, earlier.label
    larger = [m for m in micro_batches(plan.setup) if m > plan.setup.micro_batch]
    assert all(_peak(replace(plan.setup, micro_batch=m)) > budget for m in larger)  # the largest that fits
    assert len(plan.tried) == chosen
    # the longest completion: fits, and one token more does not (unless capped by the context)
    t = plan.longest_completion
    assert t >= plan.setup.completion_len and _peak(replace(plan.setup, completion_len=t)) <= budget
    assert t + plan.setup.prompt_len == QWEN.context or _peak(replace(plan.setup, completion_len=t + 1)) > budget


def test_the_tiers_run_from_the_cheapest_and_shard_only_with_several_processes():
    assert [t.label for t in tiers(1)] == ["whole", "whole, checkpointed", "LoRA r=16", "LoRA r=16, checkpointed"]
    two = tiers(2)
    assert [t.sharded for t in two[:4]] == [False, True, False, True] and not any(t.lora for t in two[:4])
    assert two[1].setup(BASE).zero_stage == 3 and two[0].setup(BASE).precision == "fp32"
    offload = two[4].setup(BASE)  # after every way of full fine-tuning on the GPU, before LoRA changes the training
    assert offload.cpu_offload and offload.zero_stage == 3 and offload.grad_checkpointing and not offload.lora_rank
    lora = two[5].setup(BASE)
    assert lora.lora_rank == 16 and lora.precision == "bf16-mixed" and lora.rollout_dtype == "bfloat16"
    assert not any(t.offload for t in tiers(1))  # one process shards nothing, so offloads nothing


def test_cpu_offload_is_planned_where_only_it_keeps_full_fine_tuning(cli):
    plan = make_plan(QWEN, replace(BASE, gpus=2, gpu_memory_gib=24))
    assert plan.tier.offload and "train.fsdp_cpu_offload=true" in plan.train_settings()
    run = cli("plan", "--model", "Qwen2.5-1.5B", "--gpus", "2", "--gpu-memory", "24")
    assert run.returncode == 0 and "--cpu-offload" in run.stdout and "--set train.fsdp_cpu_offload=true" in run.stdout
    command = next(line for line in run.stdout.splitlines() if "rlvr memory" in line).split("rests on", 1)[1]
    again = cli(*shlex.split(command.strip())[1:])  # the command it rests on prints the planned peak
    assert again.returncode == 0 and "cpu_offloaded" in again.stdout


def test_nothing_fits_is_a_user_error_naming_the_smallest_need():
    with pytest.raises(
        UserError, match=r"no plan fits 1 GPU\(s\) of 8 GiB .* LoRA r=16, checkpointed, micro-batch 1: "
    ):
        make_plan(QWEN, replace(BASE, gpu_memory_gib=8))


def test_the_cli_prints_the_settings_and_the_memory_command_they_rest_on(cli):
    run = cli("plan", "--model", "Qwen2.5-1.5B", "--gpus", "2", "--gpu-memory", "40")
    assert run.returncode == 0, run.stderr
    rests_on = re.search(r"rests on\s+(rlvr memory .*)", run.stdout).group(1)
    memory = cli(*shlex.split(rests_on)[1:])  # the estimate the plan rests on, printed by rlvr memory
    assert memory.returncode == 0, memory.stderr
    peak = re.search(r"peak_total\s+(\S+ \S+)", memory.stdout).group(1)
    assert re.search(rf"estimated peak\s+{re.escape(peak)} of 36\.00 GiB", run.stdout)
    settings = re.search(r"rlvr train\s+(.*)", run.stdout).group(1)
    plan = make_plan(QWEN, replace(BASE, gpus=2, gpu_memory_gib=40))
    assert settings == " ".join(f"--set {s}" for s in plan.train_settings())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu-memory", "8"], "no plan fits"),
        (["--gpus", "2", "--algorithm", "ppo"], "trains on one process only"),
        (["--algorithm", "nope"], "unknown"),
        (["--out", "x"], "add --verify"),
        (["--verify"], "must be a model with weights"),
    ],
)
def test_what_cannot_be_planned_exits_2_with_one_line(cli, args, message):
    run = cli("plan", "--model", "Qwen2.5-1.5B", *args)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr


@pytest.mark.slow
def test_verify_trains_a_sharded_step_and_measures_what_was_estimated(cli, tmp_path):
    # 19 MiB GPUs: the whole policy does not fit even at micro-batch 1, the sharded one does
    out = tmp_path / "verify"
    run = cli("plan", "--model", "tiny-arith", "--gpus", "2", "--gpu-memory", "0.0186", "--batch", "4",
                   "--group", "4", "--verify", "--out", str(out))  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "train.sharding=fsdp2" in run.stdout and re.search(r"did not fit\s+whole, micro-batch 1", run.stdout)
    rows = dict(re.findall(r"^(\w+)\s+\S+ \w+\s+\S+ \w+\s+([\d.]+)$", run.stdout, flags=re.M))
    for name in ("policy_weights", "policy_gradients", "policy_optimizer", "reference_weights", "sampler_weights"):
        assert abs(float(rows[name]) - 1) < 0.15, name  # what each process holds, as estimated
    assert re.search(r"peak RSS \(process\)\s+\S+ MiB", run.stdout)
    assert (out / "checkpoint" / OPTIMIZER_SHARDS / ".metadata").is_file()  # each process wrote its AdamW shards
    # one process, unsharded, goes on from the two processes' shards
    resumed = cli("train", "--quiet", "--set", "train.steps=2", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert [row["step"] for row in read_metrics(out) if "loss" in row] == [1, 2]
