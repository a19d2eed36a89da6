"""Two CPU processes (gloo) make the same update as one process with the same global batch.

The batch is sampled once here and saved; the workers load it, so nothing depends on sampling
being identical across processes. Each worker takes its whole query groups (World.shard), computes
advantages on them, aggregates with the summed counts and sums gradients (engine/distributed.py),
exactly as Trainer.step does, then takes one AdamW step. With LoRA each process, though seeded
differently, draws the same adapters (models/lora.py), and only they train.
"""

import copy
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from rlvr.algos import ALGORITHMS
from rlvr.bases import SHIPPED, resolve_model_path, tiny_arith_tool
from rlvr.config import AlgoConfig, ModelConfig
from rlvr.engine.distributed import World, world
from rlvr.engine.rollouts import select_groups
from rlvr.engine.update import accumulate_policy_gradient, optimizer_step
from rlvr.models import load_policy
from rlvr.models.lora import add_lora
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.tools import ToolUse
from rlvr.sandbox.tool import FORMATS
from rlvr.tasks.arith import ArithSpec, make_queries

MODES = ("sequence_mean", "token_mean", "constant")
MAX_NEW_TOKENS = 40
ROOT = Path(__file__).resolve().parents[2]


def _algo(aggregation: str) -> AlgoConfig:
    return AlgoConfig(beta=0.04, aggregation=aggregation, entropy_coef=0.01)


def _one_update(model, batch, rewards, *, global_counts=None, micro_batch_size=0):
    """Advantages on these groups, then per aggregation mode a fresh copy of the model with the
    gradient in .grad: yields (mode, model, UpdateResult)."""
    advantages, _ = ALGORITHMS["grpo"].advantages(rewards, eps=1e-4, scale_by_std=True)  # [b, G]
    ref_logp = batch.old_logp.double() - 0.05 * batch.completion_mask  # [n, T] a reference a little off
    for aggregation in MODES:
        m = copy.deepcopy(model)
        result = accumulate_policy_gradient(
            m,
            batch,
            advantages.flatten(),
            ref_logp,
            _algo(aggregation),
            temperature=1.0,
            max_new_tokens=MAX_NEW_TOKENS,
            micro_batch_size=micro_batch_size,
            global_counts=global_counts,
        )
        yield aggregation, m, result


def _policy(lora_rank: int, base: str = str(SHIPPED)):
    """The shipped model (or `base`) in float64, with fresh LoRA adapters of rank `lora_rank` (0: none)."""
    model, _ = load_policy(resolve_model_path(base))
    if lora_rank:
        model = add_lora(model, ModelConfig(lora_rank=lora_rank), seed=0)  # A drawn from the run's seed alone
    return model.double()


def _trained(model) -> list[torch.Tensor]:
    return [p for p in model.parameters() if p.requires_grad]


def _worker(
    rank: int, world_size: int, port: int, data_path: str, out_dir: str, lora_rank: int = 0, base: str = str(SHIPPED)
) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    torch.manual_seed(rank)  # each process's own random stream, as Trainer seeds it (train.seed + rank)
    here = world()  # the launcher's environment, as accelerate/torchrun set it
    data = torch.load(data_path, weights_only=False)
    model = _policy(lora_rank, base)
    groups = here.shard(list(range(len(data["batch"].queries))))  # whole query groups
    batch, _ = select_groups(data["batch"], [None] * data["batch"].num_completions, groups)
    for aggregation, m, result in _one_update(
        model, batch, data["rewards"][groups], global_counts=here.global_counts, micro_batch_size=4
    ):
        here.sum_gradients(m)
        grads = [p.grad.clone() for p in _trained(m)]
        optimizer_step(m, torch.optim.AdamW(_trained(m), lr=1e-3), max_grad_norm=1.0)
        metrics = here.reduce_metrics({"loss": result.loss, **result.stats}, summed={"loss", *result.stats})
        torch.save(
            {"grads": grads, "params": [p.detach() for p in m.parameters()], "metrics": metrics},
            Path(out_dir) / f"{aggregation}-rank{rank}.pt",
        )
    here.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("lora_rank", "tools"), [(0, False), (4, False), (0, True)], ids=["full", "lora", "tools"])
def test_two_processes_make_the_single_process_update_for_each_aggregation(base_policy, tmp_path, lora_rank, tools):
    model, tok = base_policy
    base, spec, use = str(SHIPPED), ArithSpec(), None
    if tools:  # tool rollouts: each shard's loss sees its policy tokens only, counted over the step
        base, spec, use = "tiny-arith-tool", tiny_arith_tool.TASK, ToolUse(FORMATS["tags"], max_turns=2)
        model, tok = load_policy(resolve_model_path(base))
    torch.manual_seed(0)
    try:
        batch = sample_completions(
            model, tok, make_queries(4, split="heldout", seed=2, spec=spec), group_size=4,
            max_new_tokens=MAX_NEW_TOKENS, tools=use,
        )  # fmt: skip  # N = 16 rows, 8 per process
    finally:
        if use is not None:
            use.close()
    if tools:
        assert (batch.policy_mask != batch.completion_mask).any()  # some observations to mask
    # Rewards with signal in every group and one unscorable completion (NaN, out of the baseline).
    rewards = torch.tensor(
        [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, float("nan"), 0.0], [1.0, 1.0, 0.0, 1.0], [0.0, 0.5, 1.0, 0.0]]
    )  # [B, G]
    lengths = batch.policy_mask.sum(dim=1).view(2, 8).sum(dim=1)  # loss tokens per process's shard
    assert lengths[0] != lengths[1]  # unequal shards: token_mean needs the summed token count
    torch.save({"batch": batch, "rewards": rewards}, tmp_path / "data.pt")
    args = (2, _free_port(), str(tmp_path / "data.pt"), str(tmp_path), lora_rank, base)
    mp.spawn(_worker, args=args, nprocs=2, join=True)

    start = _policy(lora_rank, base)
    for aggregation, single, result in _one_update(start, batch, rewards):
        grads = [p.grad.clone() for p in _trained(single)]
        optimizer_step(single, torch.optim.AdamW(_trained(single), lr=1e-3), max_grad_norm=1.0)
        moved = [p.detach() for p in single.parameters()]
        changed = [not torch.equal(a, b) for a, b in zip(moved, start.parameters())]
        assert any(changed)  # the step did something (with LoRA, to the adapters alone)
        assert all(p.requires_grad for p, moved_it in zip(start.parameters(), changed) if moved_it)
        for rank in (0, 1):
            shard = torch.load(tmp_path / f"{aggregation}-rank{rank}.pt")
            # AdamW's first step barely sees a gradient's scale, so the summed gradient is checked too
            assert len(grads) == len(shard["grads"])
            for a, b in zip(grads, shard["grads"]):
                assert torch.allclose(a, b, atol=1e-10, rtol=0), (aggregation, rank)
            # every process holds the one-process weights: with LoRA, the same adapters from the start
            for a, b in zip(moved, shard["params"]):
                assert torch.allclose(a, b, atol=1e-9, rtol=0), (aggregation, rank)
            # the summed shares are the step's loss and token-weighted means
            assert abs(shard["metrics"]["loss"] - result.loss) < 1e-9, aggregation
            for key in ("kl", "entropy", "ratio_mean"):
                assert abs(shard["metrics"][key] - result.stats[key]) < 1e-9, (aggregation, key)


def test_local_counts_would_not_be_exact(base_policy):
    # Why the counts are summed: on one shard with its own counts, token_mean divides by the
    # shard's tokens, so its gradient is not its share of the step's (here: 2 shards of 2 groups).
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(
        model, tok, make_queries(4, split="heldout", seed=2), group_size=4, max_new_tokens=MAX_NEW_TOKENS
    )
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0]] * 4)  # [B, G]
    first, _ = select_groups(batch, [None] * 16, [0, 1])
    total = int(batch.completion_mask.sum())

    def counts_of_step(counts):
        return counts | {"num_sequences": 16, "num_tokens": total}

    losses = {}
    for label, counts in (("local", None), ("step", counts_of_step)):
        for aggregation, _, result in _one_update(model, first, rewards[:2], global_counts=counts):
            losses[label, aggregation] = result.loss
    shard_tokens = int(first.completion_mask.sum())
    # the same sum, divided by the shard's vs the step's tokens
    assert losses["step", "token_mean"] == pytest.approx(losses["local", "token_mean"] * shard_tokens / total, rel=1e-5)
    assert losses["step", "sequence_mean"] == pytest.approx(losses["local", "sequence_mean"] / 2, rel=1e-5)


def test_world_without_a_launcher_is_one_process():
    assert "WORLD_SIZE" not in os.environ
    one = world()
    assert one == World() and one.is_main and not one.enabled
    assert one.shard([1, 2, 3]) == [1, 2, 3]
    assert one.global_counts({"num_sequences": 3, "num_tokens": 7, "max_tokens": 9})["num_tokens"] == 7


def test_a_batch_that_does_not_split_is_a_user_error():
    from rlvr.errors import UserError

    with pytest.raises(UserError, match="batch_queries=5 .* multiple of 2"):
        World(rank=1, world_size=2).shard(list(range(5)))
    assert World(rank=1, world_size=2).shard(list(range(6))) == [3, 4, 5]


TOOLS = ["--set", "train.batch_queries=4", "--set", "rollout.group_size=8"]
"""With configs/arith-tool.yaml (rollout.tools=python): each process samples its shard, calls the
tool and masks the observations."""


@pytest.mark.slow
@pytest.mark.parametrize("lora", [[], ["--set", "model.lora_rank=4"], TOOLS], ids=["full", "lora", "tools"])
def test_rlvr_train_under_torchrun_with_two_processes_writes_one_run(tmp_path, lora):
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "rlvr.cli",
        "train",
        "--config",
        str(ROOT / ("configs/arith-tool.yaml" if lora is TOOLS else "configs/smoke.yaml")),
        "--quiet",
        "--set",
        "train.steps=2",
        "--set",
        "task.num_eval=4",
        "--set",
        "train.eval_samples=1",
        "--set",
        "train.threads=1",
        *lora,
        "--out",
        str(out),
    ]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # one run directory, no second one
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [line for line in lines if "loss" in line]
    assert [line["step"] for line in steps] == [1, 2]  # each step logged once, by rank 0
    assert done.stdout.count("rlvr train:") == 2  # two processes ran the command
    assert all(0 <= line["accuracy"] <= 1 and line["grad_norm"] > 0 for line in steps)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and (out / "final" / "config.json").is_file()
    assert done.stdout.count("run directory:") == 1  # rank 0 reports
    if lora is TOOLS:  # both shards' tool calls counted in the step's metrics, and the held-out rate
        assert all(line["tools/call_frequency"] > 0 and 0 < line["tools/observation_share"] < 1 for line in steps)
        assert 0 < summary["final"]["tool_use_rate"] <= 1
    elif lora:  # rank 0 wrote the adapters: alone in checkpoint/, merged in final/ and alone in final/adapter/
        assert (out / "checkpoint" / "adapter_model.safetensors").is_file()
        assert not (out / "checkpoint" / "model.safetensors").exists()
        assert (out / "final" / "adapter" / "adapter_model.safetensors").is_file()


@pytest.mark.parametrize("name", ["reinforce_pp", "ppo", "dpo"])
def test_algorithms_that_need_the_whole_batch_refuse_several_processes(name):
    from rlvr.engine.build import require_world_support
    from rlvr.errors import UserError

    require_world_support(name, World())  # one process: fine
    with pytest.raises(UserError, match=f"algo.algorithm={name} trains on one process only.*grpo"):
        require_world_support(name, World(rank=0, world_size=2))
    require_world_support("grpo", World(rank=0, world_size=2))  # group-normalised: each shard holds whole groups
