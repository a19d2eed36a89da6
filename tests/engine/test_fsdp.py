"""FSDP2 (train.sharding=fsdp2, engine/sharding.py) on two CPU processes (gloo) makes the update one
process makes with the same global batch, and its sharded optimizer state resumes on two
processes or on one.

As in test_distributed.py the batch is sampled once here and saved; each worker takes its whole
query groups, shards a float64 copy of the policy with `shard_policy`, and takes two updates
(the loss aggregated with the step's counts, gradient shards summed by FSDP's reduce-scatter,
clipped over the whole gradient, AdamW on each shard). After the first it writes its optimizer
shards (DCP) and rank 0 the gathered weights: a second pair of workers, and one unsharded process,
resume from them and take the second update.
"""

import os
import re
import socket
from pathlib import Path

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
from rlvr.models.lora import add_lora
from rlvr.models.sharded import full_state_dict, is_sharded
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries

CASES = {
    "grpo-token_mean": ("grpo", "token_mean", 0),
    "grpo-sequence_mean": ("grpo", "sequence_mean", 0),
    "gspo-sequence_mean": ("gspo", "sequence_mean", 0),
    "rloo-constant": ("rloo", "constant", 0),
    "grpo-lora": ("grpo", "token_mean", 4),
}
"""Every algorithm that trains on several processes (ALGORITHMS[...].multi_process), each
aggregation, and LoRA (the frozen base sharded beside the adapters that train)."""
MAX_NEW_TOKENS = 40
ROOT = Path(__file__).resolve().parents[2]


def _policy(lora_rank: int):
    model, _ = load_policy(resolve_model_path(str(SHIPPED)))
    if lora_rank:
        model = add_lora(model, ModelConfig(lora_rank=lora_rank), seed=0)
    return model.double()


def _optimizer(model) -> torch.optim.AdamW:
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)


def _update(runnable, model, optimizer, data, groups, case, counts=None) -> tuple[float, float]:
    """One update on the data's groups `groups`; returns (this process's share of the loss, grad_norm)."""
    name, aggregation, _ = CASES[case]
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
    """A float64 policy for `case` (from saved whole `weights` if given), sharded, with its AdamW."""
    model = _policy(CASES[case][2])
    if weights is not None:
        model.load_state_dict(torch.load(weights))
    forward = shard_policy(forward_for(model, "hf"))
    assert is_sharded(model) and forward.fused is None
    return forward, model, _optimizer(model)


def _worker(rank: int, port: int, out: str) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    here, out = world(), Path(out)
    data = torch.load(out / "data.pt", weights_only=False)
    groups = here.shard(list(range(len(data["batch"].queries))))

    def update(forward, model, optimizer) -> dict:
        loss, norm = _update(forward, model, optimizer, data, groups, case, here.global_counts)
        return here.reduce_metrics({"loss": loss, "grad_norm": norm}, summed={"loss"})

    for case in CASES:
        forward, model, optimizer = _sharded(case)
        first = update(forward, model, optimizer)
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


def _close(a: dict, b: dict, atol: float = 1e-9) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=atol, rtol=0), name


@pytest.mark.parametrize("case", list(CASES))
def test_fsdp2_on_two_processes_makes_the_single_process_updates(fsdp_runs, case):
    data = torch.load(fsdp_runs / "data.pt", weights_only=False)
    everything = list(range(len(data["batch"].queries)))
    model = _policy(CASES[case][2])
    start = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = _optimizer(model)
    hf = forward_for(model, "hf")  # the sharded policy runs transformers' forward (RoPE in float32)
    single = [_update(hf, model, optimizer, data, everything, case) for _ in range(2)]
    sharded = torch.load(fsdp_runs / f"{case}-sharded.pt")
    for (loss, grad_norm), metrics in zip(single, sharded["metrics"]):
        assert metrics["loss"] == pytest.approx(loss, rel=1e-9, abs=1e-12)
        assert metrics["grad_norm"] == pytest.approx(grad_norm, rel=1e-9)  # the whole gradient's norm
    _close(sharded["weights"], model.state_dict())
    moved = [k for k in start if not torch.equal(start[k], model.state_dict()[k])]
    assert moved and (not CASES[case][2] or all("lora_" in k for k in moved))  # LoRA: the adapters alone


@pytest.mark.parametrize("case", list(CASES))
def test_sharded_optimizer_state_resumes_on_two_processes_and_on_one(fsdp_runs, case):
    data = torch.load(fsdp_runs / "data.pt", weights_only=False)
    uninterrupted = torch.load(fsdp_runs / f"{case}-sharded.pt")
    resumed = torch.load(fsdp_runs / f"{case}-resumed.pt")  # two processes, re-sharded from the checkpoint
    assert resumed["metrics"][0]["loss"] == pytest.approx(uninterrupted["metrics"][1]["loss"], rel=1e-9)
    _close(resumed["weights"], uninterrupted["weights"])
    # one process, unsharded, no process group: DCP reads both shards into whole tensors
    model = _policy(CASES[case][2])
    model.load_state_dict(torch.load(fsdp_runs / f"{case}-after-1.pt"))
    optimizer = _optimizer(model)
    load_optimizer_shards(model, optimizer, fsdp_runs / f"{case}-optimizer")
    assert all(optimizer.state[p]["step"] == 1 for p in model.parameters() if p.requires_grad)
    everything = list(range(len(data["batch"].queries)))
    loss, _ = _update(forward_for(model, "hf"), model, optimizer, data, everything, case)
    assert loss == pytest.approx(uninterrupted["metrics"][1]["loss"], rel=1e-9)
    _close(model.state_dict(), uninterrupted["weights"])


@pytest.mark.parametrize(
    ("setting", "fix"),
    [
        ("rollout.dtype=bfloat16", "set rollout.dtype=float32"),
        ("rollout.max_staleness=1", "set rollout.max_staleness=0"),
        ("rollout.backend=vllm", "rollout.backend=hf only"),
    ],
)
def test_fsdp2_names_what_it_cannot_run_with(setting, fix):
    from rlvr.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=re.escape(fix)):
        load_config(None, ["train.sharding=fsdp2", setting])
    load_config(None, ["train.sharding=ddp", setting] if "vllm" not in setting else ["train.sharding=fsdp2"])
