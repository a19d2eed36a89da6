"""Measured memory: tensor accounting on hand-made tensors, and agreement with the estimator in a
real training step of the shipped tiny model (no mocks)."""

import pytest
import torch

from rlvr.algos import ALGORITHMS
from rlvr.config import load_config
from rlvr.diagnostics.memory_estimate import TrainingSetup, estimate
from rlvr.diagnostics.memory_model import load_model_spec
from rlvr.engine.context import batch_queries
from rlvr.engine.loop import Trainer
from rlvr.meters.memory import (
    SavedTensorCounter,
    model_bytes,
    optimizer_state_bytes,
    tensor_bytes,
)
from rlvr.rollout.hf import encode_prompts


def test_shared_storages_count_once():
    a = torch.zeros(10)  # 40 bytes
    assert tensor_bytes(iter([a, a[2:], a.view(2, 5)])) == 40
    assert tensor_bytes(iter([a, torch.zeros(3, dtype=torch.float64)])) == 40 + 24
    tied = torch.nn.Linear(4, 4, bias=False)
    model = torch.nn.ModuleList([tied, torch.nn.Linear(4, 4, bias=False)])
    model[1].weight = tied.weight  # tied weights are one tensor
    assert model_bytes(model) == 4 * 4 * 4


def test_saved_tensor_counter_takes_the_peak_over_micro_batches():
    layer = torch.nn.Linear(3, 4, bias=False)
    counter = SavedTensorCounter(
        layer, exclude={(str(p.device), p.untyped_storage().data_ptr()) for p in layer.parameters()}
    )
    with counter.counting():
        for rows in (2, 5, 1):
            # linear saves its input [rows, 3] (the weight is excluded), relu its output [rows, 4]: 28 bytes a row
            torch.relu(layer(torch.randn(rows, 3))).sum().backward()
    assert counter.peak == 5 * (3 + 4) * 4


def test_adamw_state_is_two_tensors_per_parameter_plus_step_counters():
    layer = torch.nn.Linear(3, 4)  # 12 + 4 parameters
    opt = torch.optim.AdamW(layer.parameters())
    assert optimizer_state_bytes(opt) == 0  # states appear at the first step
    layer(torch.randn(2, 3)).sum().backward()
    opt.step()
    assert optimizer_state_bytes(opt) == 2 * 16 * 4 + 2 * 4  # m and v in fp32, one fp32 step scalar each


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("lora_rank", [0, 4])
def test_activation_formula_is_exact_for_a_grouped_query_llama(dtype, padded, lora_rank):
    """What autograd really saves for token_logprobs of a Llama with 4 heads and 2 kv heads, fully
    trained or with LoRA adapters on every projection (frozen embedding, norms and head)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from rlvr.config import ModelConfig
    from rlvr.diagnostics.memory_estimate import activation_bytes
    from rlvr.diagnostics.memory_model import spec_from_config
    from rlvr.models.forward import forward_for
    from rlvr.models.logprobs import token_logprobs
    from rlvr.models.lora import add_lora

    config = LlamaConfig(
        vocab_size=50,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(dtype)
    if lora_rank:
        model = add_lora(model, ModelConfig(lora_rank=lora_rank))
    policy = forward_for(model, "hf")  # the formula is HF's forward; the fused forward shares prompts
    n, prompt_len, completion_len = 3, 5, 7
    prompt_ids, completion_ids = torch.randint(3, 50, (n, prompt_len)), torch.randint(3, 50, (n, completion_len))
    prompt_mask, completion_mask = torch.ones_like(prompt_ids), torch.ones_like(completion_ids)
    if padded:
        prompt_mask[0, :2] = 0  # one left-padded prompt: HF then builds a mask and repeats k and v
    exclude = {(str(p.device), p.untyped_storage().data_ptr()) for p in model.parameters()}
    counter = SavedTensorCounter(model, exclude)
    with counter.counting():
        token_logprobs(
            policy, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature=1.0, with_entropy=True
        )
    expected = activation_bytes(
        spec_from_config(config.to_dict(), "gqa"),
        sequences=n,
        prompt_len=prompt_len,
        completion_len=completion_len,
        act_bytes=torch.finfo(dtype).bits // 8,
        padding_free=not padded,
        lora_rank=lora_rank,
        adapter_bytes=4,  # peft keeps the adapters in fp32 on a bf16 base
    )
    assert counter.peak == expected


SMALL = [
    "train.batch_queries=4",
    "rollout.group_size=4",
    "task.num_train=40",
    "task.num_eval=8",
    "rollout.max_new_tokens=16",
    "optim.micro_batch_size=8",
]


def _measured_and_estimated(tmp_path, base_model_dir, algorithm, beta, forward="hf", lora_rank=0):
    # The estimator describes HF's forward (model.forward=hf, the default on GPUs); on the CPU the
    # default fused forward (models/fast_llama.py) runs each distinct prompt once and holds less.
    cfg = load_config(
        None,
        [
            f"model.name={base_model_dir}",
            *SMALL,
            f"algo.algorithm={algorithm}",
            f"algo.beta={beta}",
            f"model.forward={forward}",
            f"model.lora_rank={lora_rank}",
        ],
    )
    trainer = Trainer(cfg, tmp_path)
    metrics = trainer.step(0)
    components = {k for k in metrics if k.startswith("memory/")} - {"memory/rss_max"}  # the process's, all of it
    measured = {k.removeprefix("memory/"): metrics[k] for k in components}
    # the estimator sees the same config; P is the padded prompt width of this step's queries
    queries = batch_queries(trainer.train_queries, 0, cfg.train.batch_queries, cfg.train.seed)
    prompt_len = encode_prompts(trainer.tokenizer, [q.prompt for q in queries])[0].shape[1]
    setup = TrainingSetup(
        algorithm=algorithm,
        precision="fp32",
        optimizer="adamw",
        prompt_len=prompt_len,
        completion_len=cfg.rollout.max_new_tokens,
        batch=cfg.train.batch_queries,
        group=cfg.rollout.group_size,
        micro_batch=cfg.optim.micro_batch_size,
        beta=beta,
        lora_rank=lora_rank,
        online_pairs=int(metrics["dpo/pairs"]) if algorithm == "dpo" else 0,  # the pairs this step formed
    )
    estimated = {k: c.bytes for k, c in estimate(load_model_spec("tiny-arith"), setup).components.items()}
    return measured, estimated


# Online DPO back-propagates only the pairs the verifier yields (3 pairs, 6 rows, in this small
# step): the estimate is given that count (`online_pairs`), as a user would give the expected one.
CASES = [(name, 0.04) for name in ALGORITHMS] + [("grpo", 0.0)]


@pytest.mark.parametrize("algorithm, beta", CASES)
def test_estimate_agrees_with_a_real_step_within_ten_percent(base_model_dir, tmp_path, algorithm, beta):
    assert algorithm in ALGORITHMS, f"rlvr memory does not know which models {algorithm} holds"
    measured, estimated = _measured_and_estimated(tmp_path, base_model_dir, algorithm, beta)
    assert measured["activations"] > 0 and measured["kv_cache"] > 0 and measured["policy_optimizer"] > 0
    for name in sorted(set(measured) | set(estimated)):
        got, want = measured.get(name, 0.0), estimated.get(name, 0.0)
        assert abs(got - want) <= 0.10 * max(want, 1.0), f"{name}: measured {got:.0f} B, estimated {want:.0f} B"
    assert (measured["reference_weights"] > 0) == (beta > 0 or algorithm == "dpo")  # beta = 0 holds none (DPO always)


@pytest.mark.parametrize("algorithm, beta", [("grpo", 0.04), ("grpo", 0.0), ("dpo", 0.04)])
def test_lora_estimate_agrees_with_a_real_step_within_ten_percent(base_model_dir, tmp_path, algorithm, beta):
    """rlvr memory --lora-rank 4 against a LoRA run: adapters alone have gradients and AdamW states,
    the reference is the base with adapters off (no second copy), and the frozen embedding, norms and
    head keep fewer activations (docs/memory.md)."""
    measured, estimated = _measured_and_estimated(tmp_path, base_model_dir, algorithm, beta, lora_rank=4)
    assert measured["kv_cache"] > 0 and measured["reference_weights"] == 0
    assert measured["policy_gradients"] < 0.1 * measured["policy_weights"]  # 40,960 adapter weights of 907,392
    for name in sorted(set(measured) | set(estimated)):
        got, want = measured.get(name, 0.0), estimated.get(name, 0.0)
        assert abs(got - want) <= 0.10 * max(want, 1.0), f"{name}: measured {got:.0f} B, estimated {want:.0f} B"


def test_lean_forward_saves_less_than_the_hf_estimate_and_reports_its_cache(base_model_dir, tmp_path):
    measured, estimated = _measured_and_estimated(tmp_path, base_model_dir, "grpo", 0.04, forward="lean")
    assert 0 < measured["activations"] < 0.95 * estimated["activations"]  # G = 4 rows share each prompt
    # the lean sampler allocates prompt + max_new_tokens columns up front; HF's cache grows to it
    assert measured["kv_cache"] >= 0.9 * estimated["kv_cache"]


def test_memory_metrics_can_be_turned_off(base_model_dir, tmp_path):
    cfg = load_config(None, [f"model.name={base_model_dir}", *SMALL, "train.memory_metrics=false"])
    metrics = Trainer(cfg, tmp_path).step(0)
    assert "loss" in metrics and not any(k.startswith("memory/") for k in metrics)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_allocator_peak_covers_the_accounted_peak(base_model_dir, tmp_path):
    cfg = load_config(None, [f"model.name={base_model_dir}", *SMALL, "model.device=cuda"])
    trainer = Trainer(cfg, tmp_path)
    trainer.step(0)
    metrics = trainer.step(1)  # from the second step on, optimizer states exist during the backward
    # everything the accounting adds up is alive at once at the last micro-batch's backward (or while
    # sampling), so the allocator, which also sees transients, cannot have peaked lower
    assert metrics["memory/cuda_max_allocated"] >= metrics["memory/peak_total"]
