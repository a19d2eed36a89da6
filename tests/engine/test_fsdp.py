"""FSDP2 (train.sharding=fsdp2, engine/sharding.py) on two CPU processes (gloo) makes the update one
process makes with the same global batch, and its sharded optimizer state resumes on two
processes or on one.

As in test_distributed.py the batch is sampled once here and saved; each worker takes its whole
query groups, shards a float64 copy of the policy with `shard_policy` (float32 computing in bfloat16
for the mixed-precision case, held to measured tolerances), and takes two updates
(the loss aggregated with the step's counts, gradient shards summed by FSDP's reduce-scatter,
clipped over the whole gradient, AdamW on each shard). After the first it writes its optimizer
shards (DCP) and rank 0 the gathered weights: a second pair of workers, and one unsharded process,
resume from them and take the second update.
"""

import os
import re
import socket
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
import torch.multiprocessing as mp

from rlvr.algos import ALGORITHMS
from rlvr.bases import SHIPPED, resolve_model_path
from rlvr.config import AlgoConfig, ModelConfig
from rlvr.engine.distributed import world
from rlvr.engine.rollouts import select_groups
from rlvr.engine.sharding import load_optimizer_shards, save_optimizer_shards, shard_policy
from rlvr.engine.update import accumulate_policy_gradient, optimizer_step
from rlvr.models import load_policy
from rlvr.models.forward import forward_for
from rlvr.models.loading import enable_gradient_checkpointing
from rlvr.models.lora import add_lora
from rlvr.models.sharded import full_state_dict, is_sharded
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries


class Case(NamedTuple):
    algorithm: str
    aggregation: str
    lora_rank: int = 0
    uneven: bool = False
    """The processes get 3 groups and 1 (3 micro-batches and 1, as DAPO's dynamic sampling can): the
    one with fewer takes idle passes so that every pass's collectives meet (engine/update.py)."""
    offload: bool = False
    """train.fsdp_cpu_offload (on the CPU the shards stay where they are: the same numbers)."""
    bf16: bool = False
    """train.fsdp_mixed_precision=bfloat16 on a float32 policy: close to, not equal to, float32."""
    checkpointed: bool = False
    """model.gradient_checkpointing: each layer's forward runs again in the backward, gathering its
    weights again (the single-process update it is compared with is checkpointed too)."""


CASES = {
    "grpo-token_mean": Case("grpo", "token_mean"),
    "grpo-sequence_mean-offload": Case("grpo", "sequence_mean", offload=True),
    "gspo-sequence_mean-checkpointed": Case("gspo", "sequence_mean", checkpointed=True),
    "rloo-constant-uneven": Case("rloo", "constant", uneven=True),
    "grpo-lora": Case("grpo", "token_mean", lora_rank=4),
    "grpo-bf16": Case("grpo", "token_mean", bf16=True),
}
"""Every algorithm that trains on several processes (ALGORITHMS[...].multi_process), each
aggregation, LoRA (the frozen base sharded beside the adapters that train), and the options."""
UNEVEN = [[0, 1, 2], [3]]
BF16_LOSS = 0.05
"""bfloat16 compute against float32: the relative difference of the loss and of grad_norm at most
this (measured: 0.021 and 0.011 at most over the two updates)..."""
BF16_UPDATE = 0.35
"""... and of each parameter's update from the base (measured: 0.19 at most; AdamW's first steps
are about lr × the gradient's sign, which bfloat16 flips on the smallest elements)."""
MAX_NEW_TOKENS = 40
ROOT = Path(__file__).resolve().parents[2]


def _policy(case: str):
    """The case's policy: float64 (float32 under bfloat16 mixed precision, which needs float32 shards)."""
    model, _ = load_policy(resolve_model_path(str(SHIPPED)))
    if CASES[case].lora_rank:
        model = add_lora(model, ModelConfig(lora_rank=CASES[case].lora_rank), seed=0)
    if CASES[case].checkpointed:
        enable_gradient_checkpointing(model)
    return model.float() if CASES[case].bf16 else model.double()


def _optimizer(model) -> torch.optim.AdamW:
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)


def _update(runnable, model, optimizer, data, groups, case, counts=None) -> tuple[float, float]:
    """One update on the data's groups `groups`; returns (this process's share of the loss, grad_norm)."""
    name, aggregation = CASES[case].algorithm, CASES[case].aggregation
    batch, _ = select_groups(data["batch"], [None] * data["batch"].num_completions, groups)
    advantages, _ = ALGORITHMS[name].advantages(data["rewards"][groups], eps=1e-4, scale_by_std=True)  # [b, G]
    algo = AlgoConfig(algorithm=name, beta=0.04, aggregation=aggregation, entropy_coef=0.01)
    ref_logp = batch.old_logp.double() - 0.05 * batch.completion_mask  # [n, T] a reference a little off
    result = accumulate_policy_gradient(
        runnable, batch, advantages.flatten(), ref_logp, algo, temperature=1.0, max_new_tokens=MAX_NEW_TOKENS,
        micro_batch_size=4, global_counts=counts,
    )  # fmt: skip
    grad_norm, _ = optimizer_step(model, optimizer, max_grad_norm=1.0)
    return result.loss, grad_norm


def _sharded(case: str, weights: Path | None = None):
    """The policy for `case` (from saved whole `weights` if given), sharded, with its AdamW."""
    model = _policy(case)
    if weights is not None:
        model.load_state_dict(torch.load(weights))
    precision = "bfloat16" if CASES[case].bf16 else "none"
    forward = shard_policy(forward_for(model, "hf"), mixed_precision=precision, cpu_offload=CASES[case].offload)
    assert is_sharded(model) and forward.fused is None
    assert {p.dtype for p in model.parameters()} == {torch.float32 if CASES[case].bf16 else torch.float64}
    return forward, model, _optimizer(model)


def _counted(forward, calls: list):
    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)

    return counted


def _worker(rank: int, port: int, out: str) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    here, out = world(), Path(out)
    data = torch.load(out / "data.pt", weights_only=False)
    even = here.shard(list(range(len(data["batch"].queries))))

    def update(forward, model, optimizer) -> dict:
        groups = UNEVEN[rank] if CASES[case].uneven else even
        loss, norm = _update(forward, model, optimizer, data, groups, case, here.global_counts)
        return here.reduce_metrics({"loss": loss, "grad_norm": norm}, summed={"loss"})

    for case in CASES:
        forward, model, optimizer = _sharded(case)
        calls = []  # the first layer's MLP runs in the first update: twice per pass when checkpointed
        mlp = next(m for name, m in model.named_modules() if name.endswith("layers.0.mlp"))
        mlp.forward = _counted(mlp.forward, calls)  # a module hook would miss the backward's recompute
        first = update(forward, model, optimizer)
        first["layer_calls"] = len(calls)
        save_optimizer_shards(model, optimizer, out / f"{case}-optimizer")
        weights = full_state_dict(model)  # a collective: every rank gathers
        if here.is_main:
            torch.save(weights, out / f"{case}-after-1.pt")
        second = update(forward, model, optimizer)
        weights = full_state_dict(model)
        # resumed: a fresh policy and optimizer from the checkpoint, re-sharded, take the second update
        resumed_parts = _sharded(case, out / f"{case}-after-1.pt")
        load_optimizer_shards(resumed_parts[1], resumed_parts[2], out / f"{case}-optimizer")
        resumed = update(*resumed_parts)
        resumed_weights = full_state_dict(resumed_parts[1])
        if here.is_main:
            torch.save({"metrics": [first, second], "weights": weights}, out / f"{case}-sharded.pt")
            torch.save({"metrics": [resumed], "weights": resumed_weights}, out / f"{case}-resumed.pt")
    here.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fsdp_runs(tmp_path_factory):
    """Two sharded updates, then the second again from the sharded checkpoint (2 workers)."""
    out = tmp_path_factory.mktemp("fsdp")
    model, tok = load_policy(resolve_model_path(str(SHIPPED)))
    torch.manual_seed(0)
    batch = sample_completions(
        model, tok, make_queries(4, split="heldout", seed=2), group_size=4, max_new_tokens=MAX_NEW_TOKENS
    )  # N = 16 rows, 8 per process
    rewards = torch.tensor(
        [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, float("nan"), 0.0], [1.0, 1.0, 0.0, 1.0], [0.0, 0.5, 1.0, 0.0]]
    )  # [B, G]
    torch.save({"batch": batch, "rewards": rewards}, out / "data.pt")
    mp.spawn(_worker, args=(_free_port(), str(out)), nprocs=2, join=True)
    return out


def _close(a: dict, b: dict, case: str) -> None:
    """The same weights: to 1e-9 in float64; under bfloat16 compute, every parameter's update
    (from the base's weights) within BF16_UPDATE of float32's, relative to its size."""
    assert a.keys() == b.keys()
    start = _policy(case).state_dict()
    for name in a:
        if not CASES[case].bf16:
            assert torch.allclose(a[name], b[name], atol=1e-9, rtol=0), name
        elif not torch.equal(b[name], start[name]):
            moved = (b[name] - start[name]).norm()
            assert (a[name] - b[name]).norm() <= BF16_UPDATE * moved, name


def _same_loss(loss: float, expected: float, case: str) -> None:
    if CASES[case].bf16:  # computed in bfloat16: near float32's, and not equal to it
        assert loss == pytest.approx(expected, rel=BF16_LOSS) and loss != pytest.approx(expected, rel=1e-7)
    else:
        assert loss == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_fsdp2_on_two_processes_makes_the_single_process_updates(fsdp_runs, case):
    data = torch.load(fsdp_runs / "data.pt", weights_only=False)
    everything = list(range(len(data["batch"].queries)))
    model = _policy(case)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = _optimizer(model)
    hf = forward_for(model, "hf")  # the sharded policy runs transformers' forward (RoPE in float32)
    single = [_update(hf, model, optimizer, data, everything, case) for _ in range(2)]
    sharded = torch.load(fsdp_runs / f"{case}-sharded.pt")
    passes = 2  # 8 completions per process in micro-batches of 4 (the uneven case: 3 and 1, 3 on rank 0)
    assert sharded["metrics"][0]["layer_calls"] == (3 if CASES[case].uneven else passes) * (
        2 if CASES[case].checkpointed else 1
    )
    for (loss, grad_norm), metrics in zip(single, sharded["metrics"]):
        _same_loss(metrics["loss"], loss, case)
        tolerance = BF16_LOSS if CASES[case].bf16 else 1e-9
        assert metrics["grad_norm"] == pytest.approx(grad_norm, rel=tolerance)  # the whole gradient's norm
    _close(sharded["weights"], model.state_dict(), case)
    moved = [k for k in start if not torch.equal(start[k], model.state_dict()[k])]
    assert moved and (not CASES[case].lora_rank or all("lora_" in k for k in moved))  # LoRA: the adapters alone


@pytest.mark.parametrize("case", list(CASES))
def test_sharded_optimizer_state_resumes_on_two_processes_and_on_one(fsdp_runs, case):
    data = torch.load(fsdp_runs / "data.pt", weights_only=False)
    uninterrupted = torch.load(fsdp_runs / f"{case}-sharded.pt")
    resumed = torch.load(fsdp_runs / f"{case}-resumed.pt")  # two processes, re-sharded from the checkpoint
    assert resumed["metrics"][0]["loss"] == pytest.approx(uninterrupted["metrics"][1]["loss"], rel=1e-9)
    for name, weights in resumed["weights"].items():
        assert torch.allclose(weights, uninterrupted["weights"][name], atol=1e-9, rtol=0), name
    # one process, unsharded, no process group: DCP reads both shards into whole tensors
    model = _policy(case)
    model.load_state_dict(torch.load(fsdp_runs / f"{case}-after-1.pt"))
    optimizer = _optimizer(model)
    load_optimizer_shards(model, optimizer, fsdp_runs / f"{case}-optimizer")
    assert all(optimizer.state[p]["step"] == 1 for p in model.parameters() if p.requires_grad)
    everything = list(range(len(data["batch"].queries)))
    loss, _ = _update(forward_for(model, "hf"), model, optimizer, data, everything, case)
    _same_loss(loss, uninterrupted["metrics"][1]["loss"], case)
    _close(model.state_dict(), uninterrupted["weights"], case)


@pytest.mark.parametrize(
    ("settings", "fix"),
    [
        (["train.sharding=fsdp2", "rollout.dtype=bfloat16"], "set rollout.dtype=float32"),
        (["train.sharding=fsdp2", "rollout.max_staleness=1"], "set rollout.max_staleness=0"),
        (["train.sharding=fsdp2", "rollout.backend=vllm"], "rollout.backend=hf only"),
        (["train.fsdp_mixed_precision=bfloat16"], "set train.sharding=fsdp2, or train.fsdp_mixed_precision=none"),
        (["train.fsdp_cpu_offload=true"], "set train.sharding=fsdp2, or train.fsdp_cpu_offload=false"),
        (
            [
                "train.sharding=fsdp2",
                "train.fsdp_mixed_precision=bfloat16",
                "model.dtype=bfloat16",
                "rollout.dtype=bfloat16",
            ],
            "set model.dtype=float32",
        ),  # fmt: skip
    ],
)
def test_fsdp2_names_what_it_cannot_run_with(settings, fix):
    from rlvr.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=re.escape(fix)):
        load_config(None, settings)
    load_config(None, ["train.sharding=fsdp2", "train.fsdp_mixed_precision=bfloat16", "train.fsdp_cpu_offload=true"])


@pytest.mark.parametrize("option", ["train.fsdp_mixed_precision=bfloat16", "train.fsdp_cpu_offload=true"])
def test_an_option_of_a_sharded_policy_on_one_process_is_refused_not_ignored(cli, tmp_path, option):
    run = cli("train", "--config", str(ROOT / "configs" / "smoke.yaml"), "--out", str(tmp_path / "run"),
              "--set", "train.sharding=fsdp2", "--set", option)  # fmt: skip
    assert run.returncode == 2 and "one process shards nothing" in run.stderr and "Traceback" not in run.stderr
    assert option.split("=")[0] in run.stderr


def test_the_sync_probe_is_held_to_the_coarser_precision_of_sampler_and_policy():
    from rlvr.config import load_config
    from rlvr.engine.health import SYNC_TOLERANCE, sync_tolerance

    assert sync_tolerance(load_config(None, ["train.sharding=fsdp2"])) == SYNC_TOLERANCE["float32"]
    mixed = load_config(None, ["train.sharding=fsdp2", "train.fsdp_mixed_precision=bfloat16"])
    assert sync_tolerance(mixed) == SYNC_TOLERANCE["bfloat16"] > SYNC_TOLERANCE["float32"]
    assert sync_tolerance(load_config(None, ["rollout.dtype=bfloat16"])) == SYNC_TOLERANCE["bfloat16"]
