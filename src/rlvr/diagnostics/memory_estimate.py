"""Estimate accelerator memory, component by component, for training a model with an RL algorithm.

Every formula is derived, with its source, in docs/memory.md; the letters are those of
ModelSpec (h, L, a, k, d, I, V) plus b sequences per micro-batch, s = P + T tokens per sequence
and e bytes per activation element. Bytes are per GPU. Kept free of torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from rlvr.algos import ALGORITHMS
from rlvr.diagnostics.memory_model import ModelSpec
from rlvr.errors import UserError
from rlvr.meters.memory import peak_total


@dataclass(frozen=True)
class Precision:
    weight_bytes: int
    """Working copy of the weights, and any frozen model (reference, reward model)."""
    grad_bytes: int
    master_bytes: int
    """fp32 master weights the optimizer keeps in mixed precision (Micikevicius et al. 2018)."""
    state_bytes: int
    """Each optimizer state element (Adam's m and v) unless the optimizer quantizes them."""
    act_bytes: int
    """e: activations and the KV cache."""


PRECISIONS: dict[str, Precision] = {
    "fp32": Precision(weight_bytes=4, grad_bytes=4, master_bytes=0, state_bytes=4, act_bytes=4),
    "bf16-mixed": Precision(weight_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=4, act_bytes=2),
    "fp16-mixed": Precision(weight_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=4, act_bytes=2),
    "bf16": Precision(weight_bytes=2, grad_bytes=2, master_bytes=0, state_bytes=2, act_bytes=2),
}

QUANTIZED_STATE_BYTES = 1 + 4 / 2048
"""8-bit Adam: one byte per element plus one fp32 absmax per 2048-element block (Dettmers et al. 2022)."""


ADAPTER_BYTES = 4
"""LoRA adapters in mixed precision are float32 on the bf16/fp16 base: they are the trained weights,
so they are their own master copy (peft's get_peft_model casts them so, autocast_adapter_dtype=True)."""


ROLLOUT_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2}
"""Bytes per weight and KV element of the sampler, by rollout.dtype."""


@dataclass(frozen=True)
class Optimizer:
    states: int
    """State tensors per parameter (Adam: m and v)."""
    quantized: bool = False


OPTIMIZERS: dict[str, Optimizer] = {
    "adamw": Optimizer(states=2),
    "adam8bit": Optimizer(states=2, quantized=True),
    "sgd": Optimizer(states=0),
    "sgd-momentum": Optimizer(states=1),
}


@dataclass(frozen=True)
class TrainingSetup:
    algorithm: str = "grpo"
    precision: str = "bf16-mixed"
    optimizer: str = "adamw"
    lora_rank: int = 0
    """0 = full fine-tuning; r > 0 = LoRA adapters of rank r on every linear of every layer."""
    zero_stage: int = 0
    """ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 (= FSDP full shard) also weights."""
    gpus: int = 1
    cpu_offload: bool = False
    """ZeRO-3 over several GPUs only (rlvr's train.fsdp_cpu_offload): the policy's shards of weights,
    gradients and optimizer states live in CPU memory; the GPU holds the units being gathered."""
    prompt_len: int = 256
    completion_len: int = 1024
    batch: int = 32
    """B: queries per step (DPO: preference pairs per step)."""
    group: int = 8
    """G: completions per query (DPO: 2, chosen and rejected)."""
    micro_batch: int = 8
    """Sequences per forward/backward on one GPU."""
    grad_checkpointing: bool = False
    padding_free: bool = False
    """Sequences packed without padding (varlen attention): no mask, and k, v stay at k heads."""
    beta: float = 0.04
    reward_model: bool = False
    """Hold a learned reward model (frozen) beside the verifiers."""
    online_pairs: int = 0
    """DPO only. 0: offline DPO on B given pairs (G = 2). n > 0: online DPO as rlvr trains it:
    sample G per query (a rollout KV cache), then train on the n pairs the verifier labelled."""
    rollout_backend: str = "hf"
    """The sampler (rollout.backend): hf generates with the trainer's model, or its bf16 copy;
    vllm is a colocated vLLM engine holding its own weights and KV cache."""
    rollout_dtype: str = "float32"
    """The sampler's precision (rollout.dtype): float32 samples with the policy itself; bfloat16
    with a bf16 copy of it (hf), or a bf16 engine (vllm)."""
    vllm_gpu_memory_utilization: float = 0.3
    """rollout_backend=vllm: the share of the GPU's memory vLLM reserves for its weights and KV cache."""
    gpu_memory_gib: float = 80.0
    """Memory of one GPU in GiB; only vLLM's reservation depends on it."""


@dataclass(frozen=True)
class AlgorithmMemory:
    """Which models an algorithm keeps on the accelerator, from its traits in the registry."""

    critic: bool
    reference: Callable[[TrainingSetup], bool]
    rollout: bool
    """Samples online, so a rollout KV cache exists (offline DPO trains on given pairs)."""
    paper: str


def algorithm_memory(name: str) -> AlgorithmMemory:
    """The memory view of ``ALGORITHMS[name]`` (algos/registry.py): a value model if it has a
    critic; the reference when β > 0, or always when its loss is relative to it (DPO); a rollout
    KV cache unless it learns from given pairs."""
    algorithm = ALGORITHMS[name]

    def reference(setup: TrainingSetup) -> bool:
        return algorithm.holds_reference(setup.beta)

    return AlgorithmMemory(algorithm.critic, reference, algorithm.update != "preference", algorithm.paper)


def check_setup(setup: TrainingSetup) -> None:
    """Raise UserError for a setup that cannot run, naming the field and the fix."""
    if setup.algorithm not in ALGORITHMS:
        raise UserError(f"unknown algorithm {setup.algorithm!r}; known: {', '.join(ALGORITHMS)}")
    if setup.precision not in PRECISIONS:
        raise UserError(f"unknown precision {setup.precision!r}; known: {', '.join(PRECISIONS)}")
    if setup.optimizer not in OPTIMIZERS:
        raise UserError(f"unknown optimizer {setup.optimizer!r}; known: {', '.join(OPTIMIZERS)}")
    for name in ("gpus", "prompt_len", "completion_len", "batch", "group", "micro_batch"):
        if getattr(setup, name) < 1:
            raise UserError(f"{name.replace('_', '-')} must be >= 1 (got {getattr(setup, name)})")
    algorithm = ALGORITHMS[setup.algorithm]
    pairwise = algorithm.update == "preference"
    if pairwise and not setup.online_pairs and setup.group != algorithm.memory_group_size:
        raise UserError(
            f"offline {setup.algorithm} trains on pairs: group must be 2, chosen and rejected "
            f"(got {setup.group}); for online {setup.algorithm} give the pairs per step"
        )
    if setup.online_pairs and (not pairwise or setup.online_pairs > setup.batch * (setup.group // 2)):
        raise UserError(
            f"online pairs apply to preference algorithms (dpo) only and are at most B*floor(G/2) = "
            f"{setup.batch * (setup.group // 2)} (got {setup.online_pairs})"
        )
    if setup.lora_rank < 0 or setup.beta < 0:
        raise UserError("lora-rank and beta must be >= 0")
    if setup.zero_stage not in (0, 1, 2, 3):
        raise UserError(f"ZeRO stage must be 0, 1, 2 or 3 (got {setup.zero_stage})")
    if setup.cpu_offload and (setup.zero_stage != 3 or setup.gpus < 2):
        raise UserError(
            "CPU offload moves the shards of a policy sharded over several GPUs (rlvr's train.fsdp_cpu_offload): "
            f"use --sharding fsdp with --gpus 2 or more (got ZeRO-{setup.zero_stage} over {setup.gpus} GPU(s))"
        )
    if setup.rollout_backend not in ("hf", "vllm"):
        raise UserError(f"unknown rollout backend {setup.rollout_backend!r}; known: hf, vllm")
    if setup.rollout_dtype not in ROLLOUT_BYTES:
        raise UserError(f"unknown rollout dtype {setup.rollout_dtype!r}; known: {', '.join(ROLLOUT_BYTES)}")
    if not 0 < setup.vllm_gpu_memory_utilization <= 1 or setup.gpu_memory_gib <= 0:
        raise UserError(
            "vllm-gpu-memory-utilization must be in (0, 1] and gpu-memory above 0 GiB "
            f"(got {setup.vllm_gpu_memory_utilization} and {setup.gpu_memory_gib})"
        )
    sequences = setup.batch * setup.group
    if sequences % setup.gpus:
        raise UserError(
            f"cannot shard {sequences} sequences (batch x group) evenly over {setup.gpus} GPUs; "
            "pick a GPU count that divides them"
        )
    if setup.micro_batch > sequences // setup.gpus:
        raise UserError(
            f"micro-batch {setup.micro_batch} exceeds the {sequences // setup.gpus} sequences "
            f"each of {setup.gpus} GPU(s) gets; lower --micro-batch"
        )


@dataclass(frozen=True)
class Component:
    bytes: float
    how: str
    """The formula with its numbers, for the table."""


@dataclass
class Estimate:
    model: ModelSpec
    setup: TrainingSetup
    components: dict[str, Component] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "model": asdict(self.model),
            "setup": asdict(self.setup),
            "parameters": self.model.num_params,
            "components": {name: {"bytes": round(c.bytes), "how": c.how} for name, c in self.components.items()},
        }


def optimizer_bytes_per_param(precision: Precision, optimizer: Optimizer) -> float:
    """Master copy plus states: 4 + 2*4 = 12 for mixed-precision Adam (ZeRO paper's K = 12)."""
    per_state = QUANTIZED_STATE_BYTES if optimizer.quantized else precision.state_bytes
    return precision.master_bytes + optimizer.states * per_state


def activation_bytes(
    spec: ModelSpec,
    *,
    sequences: int,
    prompt_len: int,
    completion_len: int,
    act_bytes: int,
    grad_checkpointing: bool = False,
    lora_rank: int = 0,
    adapter_bytes: int = 0,
    padding_free: bool = False,
) -> float:
    """Bytes autograd saves for one micro-batch's backward (HF Llama, SDPA attention, padding mask).

    Korthikanti et al. 2022 (eq. 1) counted per layer and token for GPT; here the same count for
    Llama's RMSNorm (which upcasts to fp32), rotary positions, grouped-query attention (HF repeats
    k and v to all heads when a padding mask is given) and SwiGLU. docs/memory.md derives each term.
    adapter_bytes: bytes per element of the LoRA adapters when they differ from act_bytes (peft keeps
    them in fp32 on a bf16 base: 4); 0 = act_bytes.
    """
    h, a, d, inter, e = spec.hidden_size, spec.num_heads, spec.head_dim, spec.intermediate_size, act_bytes
    s = prompt_len + completion_len
    kv_heads = spec.num_kv_heads if padding_free else a  # a padding mask makes HF repeat k and v
    mask_row = 0 if padding_free else e * s
    attention = (2 * a + 2 * kv_heads) * d * e + 4 * a + mask_row  # q, output, k, v; fp32 log-sum-exp
    if not lora_rank:
        norm = (4 + 2 * e) * h + 4  # fp32 x, x_hat (for the weight's gradient), output, fp32 rsqrt
        mlp = 4 * inter * e  # gate out, up out, SiLU out, their product
        lora = 0
    elif adapter_bytes in (0, e):  # the base's norm weights are frozen: x_hat is not kept
        norm = (4 + e) * h + 4  # fp32 x, output (the adapters' input), fp32 rsqrt
        mlp = 4 * inter * e
        lora = 7 * lora_rank * e  # each adapter keeps its rank-r intermediate
    else:  # each adapter casts its input to its own dtype and keeps that copy, not the e-byte original
        norm = 4 * h + 4  # fp32 x, fp32 rsqrt
        mlp = 3 * inter * e  # gate out, up out, SiLU out
        lora = adapter_bytes * (5 * h + a * d + inter + 7 * lora_rank)  # inputs of q, k, v, gate, up; o; down
    layer = 2 * norm + attention + mlp + lora
    # input ids (for the embedding's gradient), rotary cos and sin, the final norm. With LoRA the
    # embedding and LM head are frozen: no ids and no final-norm output are kept, and the final
    # norm's fp32 x and 1/rms (4h + 4) are offset by the first layer's norm, whose input needs no
    # gradient and which keeps nothing.
    per_model = 2 * d * e if lora_rank else 8 + 2 * d * e + norm
    stored_layers = spec.num_layers * e * h + layer if grad_checkpointing else spec.num_layers * layer
    per_completion_token = 4 * spec.vocab_size + 16  # fp32 log-softmax over V, gather index, mask
    return sequences * (s * (stored_layers + per_model) + completion_len * per_completion_token)


def kv_cache_bytes(spec: ModelSpec, *, sequences: int, tokens: int, act_bytes: int) -> float:
    """Keys and values of every layer for every token: 2 * L * k * d * e bytes per token (Pope et al. 2022)."""
    return sequences * tokens * 2 * spec.num_layers * spec.num_kv_heads * spec.head_dim * act_bytes


def _shard_divisors(setup: TrainingSetup) -> tuple[int, int, int]:
    """(weights, gradients, optimizer states) divisors of ZeRO stage 0..3 (Rajbhandari et al. 2020, fig. 1)."""
    n, stage = setup.gpus, setup.zero_stage
    return (n if stage >= 3 else 1), (n if stage >= 2 else 1), (n if stage >= 1 else 1)


def _count(n: float) -> str:
    return f"{n / 1e9:.3g}B" if n >= 1e8 else f"{n / 1e6:.3g}M" if n >= 1e5 else f"{n:,.0f}"


def _trainable_model(
    name: str, trainable: int, frozen: int, setup: TrainingSetup, precision: Precision, optimizer: Optimizer
) -> dict[str, Component]:
    """Weights, gradients and optimizer states of one trained model (policy or critic)."""
    w_div, g_div, o_div = _shard_divisors(setup)
    per_opt = optimizer_bytes_per_param(precision, optimizer)
    return {
        f"{name}_weights": Component(
            (frozen + trainable) * precision.weight_bytes / w_div,
            f"{_count(frozen + trainable)} x {precision.weight_bytes} B / {w_div}",
        ),
        f"{name}_gradients": Component(
            trainable * precision.grad_bytes / g_div, f"{_count(trainable)} x {precision.grad_bytes} B / {g_div}"
        ),
        f"{name}_optimizer": Component(trainable * per_opt / o_div, f"{_count(trainable)} x {per_opt:g} B / {o_div}"),
    }


def _offloaded_policy(
    spec: ModelSpec, trainable: int, frozen: int, setup: TrainingSetup, precision: Precision, optimizer: Optimizer
) -> dict[str, Component]:
    """The policy under CPU offload (FSDP2's CPUOffloadPolicy, rlvr's train.fsdp_cpu_offload). On the
    GPU: the units whose weights are gathered at once, the root (embeddings, head, final norm: held
    through the whole forward and backward) and two layers (the running one and the one prefetched),
    with the unsharded gradients of their trained parameters. In CPU memory: this process's shards
    of the weights, gradients and optimizer states. Not measured on a GPU."""
    r, layers = setup.lora_rank, spec.num_layers
    held = min(2, layers)  # layers gathered at once
    adapters = held * spec.lora_params(r) // layers if r else 0
    gathered = spec.num_params - (layers - held) * spec.layer_params + adapters
    trained = adapters if r else gathered
    shards = (frozen + trainable) * precision.weight_bytes + trainable * (
        precision.grad_bytes + optimizer_bytes_per_param(precision, optimizer)
    )
    w, g = precision.weight_bytes, precision.grad_bytes
    return {
        "policy_weights": Component(gathered * w, f"root + {held} layer(s) gathered: {_count(gathered)} x {w} B"),
        "policy_gradients": Component(trained * g, f"{_count(trained)} x {g} B before their reduce-scatter"),
        "policy_optimizer": Component(0.0, "in CPU memory"),
        "cpu_offloaded": Component(
            shards / setup.gpus, f"in CPU memory, not in the peak: {format_bytes(shards)} of shards / {setup.gpus}"
        ),
    }


def _frozen_model(params: int, precision: Precision, setup: TrainingSetup) -> Component:
    w_div = _shard_divisors(setup)[0]
    return Component(
        params * precision.weight_bytes / w_div, f"{_count(params)} x {precision.weight_bytes} B / {w_div}"
    )


def _activations(spec: ModelSpec, setup: TrainingSetup, precision: Precision) -> Component:
    tokens = setup.prompt_len + setup.completion_len
    sequences = setup.micro_batch
    if setup.online_pairs:  # online DPO trains only the paired rows, whole pairs per micro-batch
        sequences = min(2 * max(1, setup.micro_batch // 2), 2 * setup.online_pairs)
    size = activation_bytes(
        spec,
        sequences=sequences,
        prompt_len=setup.prompt_len,
        completion_len=setup.completion_len,
        act_bytes=precision.act_bytes,
        grad_checkpointing=setup.grad_checkpointing,
        lora_rank=setup.lora_rank,
        adapter_bytes=ADAPTER_BYTES if precision.master_bytes else precision.act_bytes,
        padding_free=setup.padding_free,
    )
    return Component(size, f"{sequences} seq x {tokens} tok" + (", checkpointed" if setup.grad_checkpointing else ""))


def _kv_cache(spec: ModelSpec, setup: TrainingSetup, act_bytes: int) -> Component:
    sequences = setup.batch * setup.group // setup.gpus  # rlvr samples a GPU's whole share at once
    tokens, e = setup.prompt_len + setup.completion_len, act_bytes
    size = kv_cache_bytes(spec, sequences=sequences, tokens=tokens, act_bytes=e)
    return Component(
        size, f"{sequences} seq x {tokens} tok x 2*{spec.num_layers}*{spec.num_kv_heads}*{spec.head_dim}*{e} B"
    )


def _sampler(spec: ModelSpec, setup: TrainingSetup, precision: Precision) -> dict[str, Component]:
    """What sampling holds. hf in float32, or in the precision of the policy's working weights: the
    KV cache of the policy itself. hf in bfloat16 from float32 weights: a bf16 copy of the policy
    (rollout/backends.py, HFSampler), whole on every GPU whatever the sharding, and its bf16 KV
    cache. Weights sharded over several GPUs (ZeRO-3/FSDP, as rlvr's train.sharding=fsdp2 runs
    them): a whole copy to sample from in any precision (engine/sharding.py). vllm: the engine's own
    weights and its reservation."""
    if setup.rollout_backend == "vllm":
        return _vllm(spec, setup)
    sharded = setup.zero_stage == 3 and setup.gpus > 1
    if not sharded and (
        setup.rollout_dtype == "float32" or ROLLOUT_BYTES[setup.rollout_dtype] == precision.weight_bytes
    ):
        return {"kv_cache": _kv_cache(spec, setup, precision.act_bytes)}
    e = ROLLOUT_BYTES[setup.rollout_dtype]
    params = spec.num_params + (spec.lora_params(setup.lora_rank) if setup.lora_rank else 0)
    why = "the whole policy gathered for sampling beside its shards" if sharded else "the policy cast for sampling"
    return {
        "sampler_weights": Component(params * e, f"{_count(params)} x {e} B, {why}"),
        "kv_cache": _kv_cache(spec, setup, e),
    }


def _vllm(spec: ModelSpec, setup: TrainingSetup) -> dict[str, Component]:
    """vLLM takes u x M of the GPU at start-up and keeps it (rollout/vllm.py passes rollout.
    vllm_gpu_memory_utilization as `gpu_memory_utilization`): its weights, and the rest as KV
    cache blocks (less its own activations), whatever one rollout needs. The trainer's own
    sampling KV cache is then gone: vLLM samples."""
    e, util, gib = ROLLOUT_BYTES[setup.rollout_dtype], setup.vllm_gpu_memory_utilization, setup.gpu_memory_gib
    reserved = util * gib * 2**30
    weights = spec.num_params * e
    if weights >= reserved:
        raise UserError(
            f"vLLM's share, {util:g} x {gib:g} GiB = {format_bytes(reserved)}, does not hold its "
            f"{format_bytes(weights)} of weights; raise vllm-gpu-memory-utilization or gpu-memory"
        )
    per_token = kv_cache_bytes(spec, sequences=1, tokens=1, act_bytes=e)
    needed = setup.batch * setup.group // setup.gpus * (setup.prompt_len + setup.completion_len)
    return {
        "vllm_weights": Component(weights, f"{_count(spec.num_params)} x {e} B, vLLM's own copy"),
        "vllm_kv_cache": Component(
            reserved - weights,
            f"{util:g} x {gib:g} GiB - vllm_weights: "
            f"{(reserved - weights) / per_token:,.0f} tokens (a rollout has {needed:,})",
        ),
    }


def estimate(spec: ModelSpec, setup: TrainingSetup) -> Estimate:
    """Per-GPU bytes of each component and the peak total (persistent + max(backward, rollout))."""
    check_setup(setup)
    algo, precision = algorithm_memory(setup.algorithm), PRECISIONS[setup.precision]
    optimizer, r = OPTIMIZERS[setup.optimizer], setup.lora_rank
    out = Estimate(spec, setup)
    trained = spec.lora_params(r) if r else spec.num_params
    frozen = spec.num_params if r else 0
    if setup.cpu_offload:
        out.components |= _offloaded_policy(spec, trained, frozen, setup, precision, optimizer)
    else:
        out.components |= _trainable_model("policy", trained, frozen, setup, precision, optimizer)
    if algo.reference(setup):  # with LoRA the reference is the base with adapters off: no copy (TRL)
        out.components["reference_weights"] = (
            Component(0.0, "LoRA: the base weights, adapters off")
            if r
            else _frozen_model(spec.num_params, precision, replace(setup, zero_stage=0))
        )  # whole on every GPU: rlvr's fsdp2 does not shard the frozen reference (engine/sharding.py)
    value_params = spec.value_model_params
    if algo.critic:
        value_head = spec.hidden_size + 1  # trained even with LoRA: it starts from scratch
        critic_frozen = value_params - value_head if r else 0
        critic_trained = spec.lora_params(r) + value_head if r else value_params
        out.components |= _trainable_model("critic", critic_trained, critic_frozen, setup, precision, optimizer)
    if setup.reward_model:
        out.components["reward_model_weights"] = _frozen_model(value_params, precision, setup)
    out.components["activations"] = _activations(spec, setup, precision)
    if algo.rollout or setup.online_pairs:
        out.components |= _sampler(spec, setup, precision)
    out.components["peak_total"] = Component(
        peak_total(out.components), "persistent + max(grads + activations, KV cache)"
    )
    return out


def format_bytes(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def format_table(result: Estimate) -> str:
    s, m = result.setup, result.model
    tuning = f"LoRA r={s.lora_rank}" if s.lora_rank else "full fine-tuning"
    title = (
        f"{s.algorithm} on {m.name} ({_count(m.num_params)} parameters), {s.precision}, {s.optimizer}, "
        f"{tuning}, ZeRO-{s.zero_stage} over {s.gpus} GPU(s)"
    )
    lines = [title, f"{'component (per GPU)':<22} {'memory':>12}  how"]
    for name, c in result.components.items():
        if name == "peak_total":
            lines.append("-" * 60)
        lines.append(f"{name:<22} {format_bytes(c.bytes):>12}  {c.how}")
    return "\n".join(lines)


SHARDING_STAGES: dict[str, int] = {"zero0": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}
"""FSDP's full sharding holds what ZeRO-3 holds (Zhao et al. 2023, PyTorch FSDP, arXiv:2304.11277)."""
