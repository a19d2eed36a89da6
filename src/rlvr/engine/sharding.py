"""train.sharding=fsdp2: the policy sharded over the training processes with FSDP2.

Under DDP (engine/distributed.py) every process holds the whole policy, its gradient and its AdamW
moments. With fsdp2 each decoder layer, then the model, is wrapped by `fully_shard` (FULL_SHARD):
a process keeps 1/N of every parameter, of its gradient and of its AdamW state, gathers a layer's
weights just before that layer runs and frees them after (docs/scaling.md).

The math is the data-parallel one of engine/distributed.py: each process aggregates its whole
groups' loss with the step's counts, and the gradient shards are SUMMED over processes: the
reduce-scatter's divide factor is set to 1 (FSDP divides by N by default, as DDP does). Clipping
sees the norm of the whole gradient (clip_grad_norm_ reduces over DTensor shards), and AdamW steps
each shard. With the same global batch the update equals one process's (tests/engine/test_fsdp.py).

What needs whole weights, and where they come from:

- sampling: each process's HF sampler holds a full copy (rollout.SamplerSetup.own_copy), gathered
  after every update (models/sharded.py), so generation, which runs a different number of forward
  passes on each process, never enters a collective. It costs one model's weights per process, as
  the bfloat16 sampler copy does; held-out evaluation and the exports of rank 0 (final/, best/,
  steps/, the checkpoint's weights) read the same copy, which is why it is kept in the policy's own
  precision (config/checks.py refuses a different rollout.dtype).
- the reference: a frozen full copy on every process (made before sharding, not sharded: the same
  memory as under DDP); with LoRA the policy's own base with its adapters off, sharded with it.
- the policy's forward is transformers' (model.forward's fused forward calls no module, so the
  hooks that gather each layer's weights would not run).

The checkpoint keeps the weights in Hugging Face format (rank 0, from its copy) and the AdamW state
as this process's shards, written by every process with torch.distributed.checkpoint (DCP) in
checkpoint/optimizer/; DCP re-shards on load, so a run resumes with the same or another number of
processes (one included).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch
from transformers import PreTrainedModel

from rlvr.errors import UserError
from rlvr.models.forward import Forward, forward_for
from rlvr.models.lora import is_lora


def decoder_layers(model: PreTrainedModel) -> list[torch.nn.Module]:
    """The model's decoder layers: the modules of the classes transformers never splits across
    devices (its `_no_split_modules`), each one FSDP unit."""
    base = model.get_base_model() if is_lora(model) else model
    names = set(getattr(base, "_no_split_modules", None) or ())
    layers = [m for m in model.modules() if type(m).__name__ in names]
    if not layers:
        raise UserError(
            f"train.sharding=fsdp2 cannot find the decoder layers of {type(base).__name__} (it names no "
            "_no_split_modules); use train.sharding=ddp"
        )
    return layers


def shard_policy(forward: Forward, *, mixed_precision: str = "none", cpu_offload: bool = False) -> Forward:
    """Shard the policy in place (fully_shard per decoder layer, then the root) with its gradient
    shards summed over processes; returns the Forward it now runs (transformers', the same hooks).

    `mixed_precision="bfloat16"` gathers each unit's weights in bfloat16 and computes in it, with
    the shards, the reduce-scatter and AdamW in float32 and the root's output (the logits) cast
    back to float32; `cpu_offload` keeps the shards on the CPU (train.fsdp_*)."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

    model = forward.model
    precision = MixedPrecisionPolicy()
    if mixed_precision == "bfloat16":
        precision = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    offload = CPUOffloadPolicy(pin_memory=torch.cuda.is_available()) if cpu_offload else OffloadPolicy()
    layers = decoder_layers(model)
    for unit in [*layers, model]:  # the root last: it holds what no layer does (embeddings, final norm, head)
        # only the root casts its output: a layer's float32 output would meet the final norm's bfloat16 weight
        policy = (
            precision
            if unit is not model or mixed_precision == "none"
            else replace(precision, output_dtype=torch.float32)
        )
        fully_shard(unit, reshard_after_forward=True, mp_policy=policy, offload_policy=offload)
        unit.set_gradient_divide_factor(1.0)  # per unit: Σ over processes of each share, as engine/distributed.py
        unit.set_force_sum_reduction_for_comms(True)  # a plain SUM: gloo has no pre-multiplied sum
    return forward_for(model, "hf", hooks=forward.hooks)


def save_optimizer_shards(model: PreTrainedModel, optimizer: torch.optim.Optimizer, path: Path) -> None:
    """Every process: its shards of the optimizer state, under the parameters' names, into `path` (DCP)."""
    from torch.distributed.checkpoint import save
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    save({"optimizer": get_optimizer_state_dict(model, optimizer)}, checkpoint_id=path)


def load_optimizer_shards(model: PreTrainedModel, optimizer: torch.optim.Optimizer, path: Path) -> None:
    """Every process: the optimizer state saved by `save_optimizer_shards`, re-sharded for this
    run's processes (or whole, for one unsharded process)."""
    import torch.distributed as dist
    from torch.distributed.checkpoint import load
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict, set_optimizer_state_dict

    state = {"optimizer": get_optimizer_state_dict(model, optimizer)}  # the layout to fill
    load(state, checkpoint_id=path, no_dist=not dist.is_initialized())
    set_optimizer_state_dict(model, optimizer, optim_state_dict=state["optimizer"])
