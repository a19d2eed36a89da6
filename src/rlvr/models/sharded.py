"""Weights that may be sharded over processes (train.sharding=fsdp2, engine/sharding.py).

FSDP2's `fully_shard` turns each parameter into a DTensor whose local tensor is this process's
shard. Whoever needs the whole weights (a sampler's copy, an export) gathers them with
`full_state_dict`, a collective that every process must call at the same point; whoever only
needs this process's own elements (finiteness, byte counts, |Δθ|) reads `local`. On an unsharded
model both are the identity.
"""

from __future__ import annotations

import torch
from torch.distributed.tensor import DTensor


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This process's elements of `tensor`: its shard if it is a DTensor, else itself."""
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def full(tensor: torch.Tensor) -> torch.Tensor:
    """The whole of `tensor`, gathered from every process if it is sharded (a collective)."""
    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def is_sharded(model: torch.nn.Module) -> bool:
    """Whether any parameter of `model` is a DTensor (sharded by FSDP2)."""
    return any(isinstance(p, DTensor) for p in model.parameters())


def sum_over_shards(value: float, model: torch.nn.Module) -> float:
    """`value`, computed over this process's shards of `model`, summed over the processes that hold
    the others (a collective when `model` is sharded; else `value`)."""
    if not is_sharded(model):
        return value
    import torch.distributed as dist

    total = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return float(total)


def passes_behind(count: int, model: torch.nn.Module) -> int:
    """How many more forward/backward passes this process must take so that it takes as many as the
    busiest process (0 if `model` is not sharded). Each pass of a sharded model is a collective
    (a layer's weights are gathered before it runs, its gradient reduce-scattered after), so every
    process must take the same number, whatever share of the step's completions it holds."""
    if not is_sharded(model):
        return 0
    import torch.distributed as dist

    most = torch.tensor([count])
    dist.all_reduce(most, op=dist.ReduceOp.MAX)
    return int(most) - count


@torch.no_grad()
def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """model.state_dict() with every sharded tensor gathered whole (a collective when sharded)."""
    return {name: full(value) for name, value in model.state_dict().items()}
