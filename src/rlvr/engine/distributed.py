"""Training on many processes (`accelerate launch`, `torchrun`): data parallel with exact math.

Each of the N processes holds a full copy of the policy and trains on its shard of the step: B/N
whole query groups, so rewards, group baselines and advantages are computed exactly as on one
process. What must cross processes is what the loss normalisation counts and the gradient:

- the aggregation (algos/aggregation.py) divides by whole-step counts (num_sequences,
  num_tokens), so each process aggregates its rows with the counts summed over all processes;
- its gradient is then its share of the full-batch gradient, and the shares are SUMMED
  (all_reduce of .grad). DDP would average them instead, which needs every loss scaled by N and
  is exact only for equal shards; summing global-count shares is exact for any split.

Every process then takes the same AdamW step from the same gradient, so the weights stay equal
without a broadcast. Only rank 0 evaluates and writes the run directory. With one process (no
launcher) every function here is the identity and nothing is imported or initialised.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from rlvr.errors import UserError
from rlvr.models.sharded import is_sharded

_T = TypeVar("_T")

SUMMED_PREFIXES = (
    "verifier/unscorable",
    "dynamic_sampling/generated_groups",
    "dynamic_sampling/kept_groups",
    "explore/",
)
"""Step metrics that are counts: the step's value is the sum over processes. explore/* count
distinct solutions per process, so a query solved on two processes in different steps counts twice."""
MAXED_PREFIXES = ("time/", "memory/", "dynamic_sampling/rounds")
"""Step metrics where the slowest or biggest process is the step's value."""


@dataclass(frozen=True)
class World:
    """This process's place among the training processes; World() is the single-process world."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that evaluates, logs and writes checkpoints."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def place(self, device: str) -> str:
        """One GPU per process: "cuda" becomes cuda:<local rank>."""
        return f"cuda:{self.local_rank}" if self.enabled and device == "cuda" else device

    def shard(self, items: Sequence[_T]) -> list[_T]:
        """This process's contiguous 1/N of the step's queries (whole groups: G completions each)."""
        if len(items) % self.world_size:
            raise UserError(
                f"train.batch_queries={len(items)} does not split over {self.world_size} processes; "
                f"set it to a multiple of {self.world_size}"
            )
        size = len(items) // self.world_size
        return list(items[self.rank * size : (self.rank + 1) * size])

    def global_counts(self, counts: dict[str, int]) -> dict[str, int]:
        """num_sequences and num_tokens summed over processes (the aggregation's whole-step counts);
        other entries (max_tokens, a constant) unchanged."""
        if not self.enabled:
            return counts
        keys = ("num_sequences", "num_tokens")
        local = torch.tensor([counts[k] for k in keys], dtype=torch.float64)  # [2] exact for counts < 2^53
        dist.all_reduce(local, op=dist.ReduceOp.SUM)
        return counts | {k: int(v) for k, v in zip(keys, local.tolist())}

    def sum_gradients(self, model: torch.nn.Module) -> None:
        """.grad ← Σ over processes of .grad, in one flat all_reduce (a missing grad counts as 0). A
        sharded model (engine/sharding.py) had its gradient shards summed in its backward already."""
        if not self.enabled or is_sharded(model):
            return
        params = [p for p in model.parameters() if p.requires_grad]
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]
        flat = torch.cat([g.flatten() for g in grads])  # [D]
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        for p, part in zip(params, flat.split([p.numel() for p in params])):
            p.grad = part.view_as(p).clone()

    def reduce_metrics(self, metrics: dict[str, Any], summed: set[str] = frozenset()) -> dict[str, Any]:
        """The step's metrics on every process: sums for counts and for `summed` (shares of a
        whole-step quantity, e.g. the loss aggregated with global counts), max for time/memory,
        and the mean over processes (NaN left out) for the rest."""
        if not self.enabled:
            return metrics
        gathered: list[dict[str, Any]] = [{} for _ in range(self.world_size)]
        dist.all_gather_object(gathered, metrics)
        return {key: _combine(key, [m.get(key, math.nan) for m in gathered], summed) for key in metrics}

    def on_main(self, fn: Callable[[], _T]) -> _T:
        """fn() run on rank 0 only; every process gets its result, or raises its UserError."""
        if not self.enabled:
            return fn()
        payload: list[Any] = [None]
        if self.is_main:
            try:
                payload = [("ok", fn())]
            except UserError as err:
                payload = [("error", str(err))]
        dist.broadcast_object_list(payload, src=0)
        kind, value = payload[0]
        if kind == "error":
            raise UserError(value)
        return value

    def barrier(self) -> None:
        """Wait until every process gets here."""
        if self.enabled:
            dist.barrier()

    def close(self) -> None:
        # Every rank waits for the others before tearing the group down, so no rank destroys its
        # gloo group while a peer still uses its own. Rank 1 of a 2-process CI run once aborted with
        # "terminate called without an active exception" (not reproduced in 10 local runs); this
        # removes the teardown race that is the likely cause.
        if self.enabled and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()


def _combine(key: str, values: list[Any], summed: set[str]) -> Any:
    if not all(isinstance(v, (int, float)) for v in values):
        return values[0]
    if key in summed or key.startswith(SUMMED_PREFIXES):
        return sum(values)
    if key.startswith(MAXED_PREFIXES):
        return max(values)
    finite = [float(v) for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def world() -> World:
    """The training processes as the launcher set them up (WORLD_SIZE, RANK, LOCAL_RANK, MASTER_*,
    set by `accelerate launch` and `torchrun`); initialises the process group on first use: gloo
    on CPU, NCCL for CUDA tensors when a GPU is visible. World() when not launched that way."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    if not dist.is_initialized():
        backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    return World(rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local_rank)


class NullLog:
    """The metrics log of ranks other than 0: they compute the same metrics, rank 0 writes them."""

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        pass

    def barrier(self) -> None:
        """Wait until every process gets here."""
        if self.enabled:
            dist.barrier()

    def close(self) -> None:
        pass
