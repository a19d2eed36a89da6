"""Measured memory of a training step, by component, from the tensors themselves.

Weights, gradients and optimizer states are counted tensor by tensor (bytes of each storage, once).
Activations are what autograd saves for the backward pass: a saved-tensor hook sees every tensor
saved during a micro-batch's forward and loss, and the largest micro-batch total is the peak (the
backward starts with all of them alive). Parameters that autograd saves are not counted again.
The rollout KV cache is read from the `cache` each forward call returns during generation.
The fused Llama forward (models/fast_llama.py) never calls the model, so no module hook sees it:
it reports through the hooks of the policy's Forward (models/forward.py) instead.
On CUDA the allocator's own peak (`torch.cuda.max_memory_allocated`) is logged beside them.

The names match rlvr.diagnostics.memory_estimate, so a run's `memory/*` metrics and `rlvr memory`
can be compared line by line (docs/memory.md). The hooks cost one Python call per saved tensor.
"""

from __future__ import annotations

import resource
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import torch

from rlvr.models.forward import ForwardHooks
from rlvr.models.lora import base_model
from rlvr.models.sharded import local


def _storage_key(tensor: torch.Tensor) -> tuple[str, int]:
    storage = local(tensor).untyped_storage()
    return str(tensor.device), storage.data_ptr()


def tensor_bytes(tensors: Iterator[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors` (tied or viewed tensors count once); of a
    sharded tensor (train.sharding=fsdp2), this process's shard."""
    seen: dict[tuple[str, int], int] = {}
    for t in map(local, tensors):
        seen.setdefault(_storage_key(t), t.untyped_storage().nbytes())
    return sum(seen.values())


def model_bytes(model: torch.nn.Module) -> int:
    return tensor_bytes(p.detach() for p in model.parameters())


def gradient_bytes(params: list[torch.Tensor]) -> int:
    return tensor_bytes(p.grad for p in params if p.grad is not None)


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    return tensor_bytes(v for state in optimizer.state.values() for v in state.values() if torch.is_tensor(v))


def cache_bytes(cache: Any) -> int:
    """Bytes of a Hugging Face KV cache (DynamicCache: .layers[i].keys/.values; legacy: tuples)."""
    if cache is None:
        return 0
    if hasattr(cache, "layers"):
        tensors = [t for layer in cache.layers for t in (getattr(layer, "keys", None), getattr(layer, "values", None))]
    else:
        tensors = [t for pair in cache for t in pair]
    return tensor_bytes(t for t in tensors if torch.is_tensor(t))


class SavedTensorCounter:
    """Counts bytes autograd saves, per micro-batch: a new micro-batch starts at each forward of
    `model`, or at each scoring pass of its fused forward (`hooks`: its Forward's)."""

    def __init__(self, model: torch.nn.Module, exclude: set[tuple[str, int]], hooks: ForwardHooks | None = None):
        self.model, self.exclude = model, exclude
        self.hooks = hooks if hooks is not None else ForwardHooks()
        self.current: dict[tuple[str, int], int] = {}
        self.gathered: set[tuple[str, int]] = set()
        self.peak = 0

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        key = _storage_key(tensor)
        if key not in self.exclude and key not in self.gathered:
            self.current.setdefault(key, tensor.untyped_storage().nbytes())
        return tensor

    def _new_micro_batch(self, *_: Any) -> None:
        self.peak = max(self.peak, sum(self.current.values()))
        self.current, self.gathered = {}, set()

    def _weights_gathered(self, module: torch.nn.Module, *_: Any) -> None:
        """A sharded unit (train.sharding=fsdp2) just gathered its weights: they are weights, not activations."""
        self.gathered |= {_storage_key(p) for p in module.parameters()}

    @contextmanager
    def counting(self) -> Iterator[SavedTensorCounter]:
        from torch.distributed.fsdp import FSDPModule

        handles = [self.model.register_forward_pre_hook(self._new_micro_batch)]
        # registered after FSDP's own pre-forward hook, so they run once the unit's weights are whole
        handles += [
            m.register_forward_pre_hook(self._weights_gathered)
            for m in self.model.modules()
            if isinstance(m, FSDPModule)
        ]
        try:
            with (
                self.hooks.observing(on_scoring=self._new_micro_batch),
                torch.autograd.graph.saved_tensors_hooks(self._pack, lambda tensor: tensor),
            ):
                yield self
        finally:
            for handle in handles:
                handle.remove()
            self._new_micro_batch()


def peak_total(components: dict[str, Any]) -> float:
    """The peak of a step from its components (bytes, or objects with `.bytes`), measured here or
    estimated by `rlvr memory`. Weights (the sampler's too) and optimizer states persist, and so does vLLM's KV reservation;
    gradients and activations live during the backward, the trainer's KV cache during the rollout
    (rlvr frees gradients after each optimizer step)."""
    size = {name: getattr(c, "bytes", c) for name, c in components.items()}
    persistent = sum(v for k, v in size.items() if k.endswith(("_weights", "_optimizer")) or k == "vllm_kv_cache")
    backward = sum(v for k, v in size.items() if k.endswith("_gradients")) + size.get("activations", 0.0)
    return persistent + max(backward, size.get("kv_cache", 0.0))


class MemoryMeter:
    """Collects `memory/*` metrics for one step at a time; all methods are no-ops when disabled.

    models: name -> module whose weights are held (policy, reference, critic); optimizers: name ->
    optimizer of a trained model, whose gradients (just before its step) and states (just after)
    are counted through the optimizer's own step hooks; hooks: those of the policy's Forward
    (models/forward.py), through which its fused forward reports.
    """

    def __init__(
        self,
        *,
        enabled: bool,
        models: dict[str, torch.nn.Module | None],
        optimizers: dict[str, torch.optim.Optimizer],
        policy: torch.nn.Module,
        hooks: ForwardHooks | None = None,
    ):
        self.enabled, self.policy, self.models = enabled, policy, dict(models)
        self.hooks = hooks if hooks is not None else ForwardHooks()
        self.on_cuda = enabled and next(policy.parameters()).is_cuda
        self.values: dict[str, float] = {}
        if enabled:
            for name, opt in optimizers.items():
                # its parameters, read now: optimizer_step narrows the param groups to one chunk at a time
                params = [p for group in opt.param_groups for p in group["params"]]
                opt.register_step_pre_hook(self._before_step(name, params))
                opt.register_step_post_hook(self._after_step(name))

    def _record(self, key: str, value: float) -> None:
        self.values[key] = max(self.values.get(key, 0.0), float(value))

    def _before_step(self, name: str, params: list[torch.Tensor]):
        return lambda optimizer, args, kwargs: self._record(f"{name}_gradients", gradient_bytes(params))

    def _after_step(self, name: str):
        return lambda optimizer, args, kwargs: self._record(f"{name}_optimizer", optimizer_state_bytes(optimizer))

    def start_step(self) -> None:
        self.values = {}
        if self.on_cuda:
            torch.cuda.reset_peak_memory_stats()

    def activations(self) -> AbstractContextManager:
        """Wrap the policy's forward/backward passes: the peak of saved-tensor bytes over micro-batches."""
        return self._activations() if self.enabled else nullcontext()

    @contextmanager
    def _activations(self) -> Iterator[None]:
        exclude = {_storage_key(p) for m in self.models.values() if m is not None for p in m.parameters()}
        counter = SavedTensorCounter(self.policy, exclude, self.hooks)
        with counter.counting():
            yield
        self._record("activations", counter.peak)

    def rollout(self) -> AbstractContextManager:
        """Wrap sampling: the largest KV cache any generation step held."""
        return self._rollout() if self.enabled else nullcontext()

    @contextmanager
    def _rollout(self) -> Iterator[None]:
        def after_forward(module: torch.nn.Module, args: Any, output: Any) -> None:
            cache = output.get("cache") if hasattr(output, "get") else None  # transformers >= 5 name
            self._record("kv_cache", cache_bytes(cache))

        def fused_cache(size: int) -> None:  # the fused sampler allocates its cache up front
            self._record("kv_cache", size)

        # generate calls the transformers model's forward; a LoRA policy's own forward is not called
        handle = base_model(self.policy).register_forward_hook(after_forward)
        try:
            with self.hooks.observing(on_cache=fused_cache):
                yield
        finally:
            handle.remove()

    def step_metrics(self) -> dict[str, float]:
        """The `memory/*` metrics of the step since start_step (docs/metrics.md)."""
        if not self.enabled:
            return {}
        values = {f"{name}_weights": float(model_bytes(m)) if m is not None else 0.0 for name, m in self.models.items()}
        values |= self.values
        values["peak_total"] = peak_total(values)
        if self.on_cuda:
            values["cuda_max_allocated"] = float(torch.cuda.max_memory_allocated())
        values["rss_max"] = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)  # Linux reports KiB
        return {f"memory/{name}": value for name, value in values.items()}
