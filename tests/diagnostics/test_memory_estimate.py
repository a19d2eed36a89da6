"""The estimator's arithmetic on hand-computed tiny configs, presets, and ZeRO / LoRA / precision effects."""

import json
from dataclasses import replace

import pytest

from rlvr.diagnostics.memory_estimate import (
    TrainingSetup,
    activation_bytes,
    estimate,
    kv_cache_bytes,
)
from rlvr.diagnostics.memory_model import ModelSpec, load_model_spec, spec_from_config
from rlvr.errors import UserError

# h=4, L=1, a=2 heads, k=1 kv head, d=2, I=8, V=10, untied
HAND = ModelSpec(
    name="hand",
    hidden_size=4,
    num_layers=1,
    num_heads=2,
    num_kv_heads=1,
    head_dim=2,
    intermediate_size=8,
    vocab_size=10,
    tie_embeddings=False,
)


def test_parameter_count_of_a_hand_model():
    # q 4*(2*2)=16, k 4*(1*2)=8, v 8, o 16 -> 48; SwiGLU 3*4*8 = 96; two norms 8 -> 152 per layer
    assert HAND.layer_params == 152
    # one layer + embedding 10*4 + untied head 40 + final norm 4
    assert HAND.num_params == 152 + 40 + 40 + 4
    assert replace(HAND, tie_embeddings=True).num_params == 152 + 40 + 4
    assert replace(HAND, qkv_bias=True).layer_params == 152 + 4 + 2 + 2  # q, k, v biases
    # critic: the untied 40-parameter LM head becomes a scalar head of h + 1 = 5
    assert HAND.value_model_params == 236 - 40 + 5


def test_lora_parameters_are_rank_times_in_plus_out():
    # (in, out): q (4,4) k (4,2) v (4,2) o (4,4) gate (4,8) up (4,8) down (8,4): in+out sums to 64
    assert HAND.lora_params(2) == 2 * 64
    assert HAND.lora_params(4) == 2 * HAND.lora_params(2)


def test_activation_bytes_of_a_hand_model():
    # b=1 sequence, P=1, T=1 (s=2), e=4 bytes:
    # RMSNorm (4 + 2*4)*4 + 4 = 52; attention 4*2*2*4 + 4*2 (lse) + 4*2 (mask row) = 80; MLP 4*8*4 = 128
    # layer = 2*52 + 80 + 128 = 312; per model: ids 8 + cos/sin 2*2*4 + final norm 52 = 76
    # per completion token: 4*10 + 16 = 56  ->  2*(312 + 76) + 56 = 832
    assert activation_bytes(HAND, sequences=1, prompt_len=1, completion_len=1, act_bytes=4) == 832
    assert activation_bytes(HAND, sequences=3, prompt_len=1, completion_len=1, act_bytes=4) == 3 * 832
    # checkpointing stores the layer input (e*h = 16) and recomputes one layer: 2*(16+312+76) + 56
    assert (
        activation_bytes(HAND, sequences=1, prompt_len=1, completion_len=1, act_bytes=4, grad_checkpointing=True) == 864
    )


def test_kv_cache_is_two_times_layers_kv_heads_head_dim_bytes_per_token():
    # 3 sequences x 5 tokens x 2 (k and v) x L=1 x k=1 x d=2 x 2 bytes
    assert kv_cache_bytes(HAND, sequences=3, tokens=5, act_bytes=2) == 3 * 5 * 2 * 1 * 1 * 2 * 2


SMALL = TrainingSetup(prompt_len=4, completion_len=4, batch=4, group=2, micro_batch=2)


@pytest.mark.parametrize(
    "precision, optimizer, weights, grads, opt",
    [
        ("fp32", "adamw", 4, 4, 8),  # 16 bytes per parameter, all fp32
        ("bf16-mixed", "adamw", 2, 2, 12),  # ZeRO paper section 3.1: 2 + 2 + (4 master + 4 m + 4 v) = 16
        ("bf16", "adamw", 2, 2, 4),  # pure bf16: m and v in bf16
        ("bf16-mixed", "adam8bit", 2, 2, 4 + 2 * (1 + 4 / 2048)),  # 1-byte states + fp32 absmax per 2048
        ("fp32", "sgd", 4, 4, 0),
        ("fp32", "sgd-momentum", 4, 4, 4),
    ],
)
def test_bytes_per_parameter(precision, optimizer, weights, grads, opt):
    c = estimate(HAND, replace(SMALL, precision=precision, optimizer=optimizer)).components
    p = HAND.num_params
    assert c["policy_weights"].bytes == weights * p
    assert c["policy_gradients"].bytes == grads * p
    assert c["policy_optimizer"].bytes == pytest.approx(opt * p)


def test_zero_stages_divide_exactly_what_the_paper_says():
    full = estimate(HAND, replace(SMALL, gpus=4)).components
    stage = {s: estimate(HAND, replace(SMALL, gpus=4, zero_stage=s)).components for s in range(4)}
    for s in range(4):
        for name, min_stage in (
            ("policy_optimizer", 1),
            ("policy_gradients", 2),
            ("policy_weights", 3),
            ("reference_weights", 99),  # rlvr keeps the frozen reference whole (engine/sharding.py)
        ):
            divisor = 4 if s >= min_stage else 1
            assert stage[s][name].bytes == full[name].bytes / divisor, (s, name)
        assert stage[s]["activations"].bytes == full["activations"].bytes  # ZeRO does not shard activations
    totals = [stage[s]["peak_total"].bytes for s in range(4)]
    assert totals[:3] == sorted(totals[:3], reverse=True) and totals[3] < totals[0]
    # sharded weights cost a whole copy to sample from (rlvr's HF sampler; engine/sharding.py)
    copy = stage[3]["sampler_weights"].bytes
    assert "sampler_weights" not in stage[2] and copy == HAND.num_params * 4  # in rollout_dtype, float32
    assert totals[3] == totals[2] - stage[2]["policy_weights"].bytes * 3 / 4 + copy


def test_cpu_offload_leaves_the_gathered_units_on_the_gpu_and_the_shards_in_cpu_memory():
    sharded = replace(SMALL, gpus=4, zero_stage=3)
    kept, moved = estimate(HAND, sharded).components, estimate(HAND, replace(sharded, cpu_offload=True)).components
    assert HAND.num_layers == 1  # the root and its one layer (two where there are more) gathered at once
    assert moved["policy_weights"].bytes == HAND.num_params * 2 == moved["policy_gradients"].bytes  # bf16-mixed
    deep = replace(HAND, num_layers=5)
    three_left = estimate(deep, replace(sharded, cpu_offload=True)).components["policy_weights"].bytes
    assert three_left == (deep.num_params - 3 * deep.layer_params) * 2
    assert moved["policy_optimizer"].bytes == 0 and moved["cpu_offloaded"].bytes == HAND.num_params * 16 / 4
    for name in ("reference_weights", "sampler_weights", "activations", "kv_cache"):  # whole copies stay
        assert moved[name] == kept[name], name
    # the peak: the shards' weights and AdamW states leave the persistent part, the gathered units'
    # gradients replace the gradient shards in the backward, the larger phase here in both
    assert kept["activations"].bytes > kept["kv_cache"].bytes
    persistent_saved = kept["policy_weights"].bytes + kept["policy_optimizer"].bytes - moved["policy_weights"].bytes
    backward_added = moved["policy_gradients"].bytes - kept["policy_gradients"].bytes
    assert moved["peak_total"].bytes == pytest.approx(kept["peak_total"].bytes - persistent_saved + backward_added)


def test_data_parallel_splits_the_rollout_over_gpus():
    one = estimate(HAND, SMALL).components["kv_cache"].bytes
    assert estimate(HAND, replace(SMALL, gpus=2)).components["kv_cache"].bytes == one / 2


def test_lora_trains_only_adapters_and_shares_the_reference():
    spec = load_model_spec("Qwen2.5-1.5B")
    setup = TrainingSetup(beta=0.04)
    full = estimate(spec, setup).components
    lora = {r: estimate(spec, replace(setup, lora_rank=r)).components for r in (8, 16, 64)}
    assert lora[8]["policy_gradients"].bytes == spec.lora_params(8) * 2  # bf16 gradients
    assert lora[8]["policy_optimizer"].bytes == spec.lora_params(8) * 12
    assert lora[8]["policy_weights"].bytes == (spec.num_params + spec.lora_params(8)) * 2
    assert lora[8]["reference_weights"].bytes == 0  # the base with adapters switched off
    totals = [lora[r]["peak_total"].bytes for r in (8, 16, 64)]
    assert totals == sorted(totals) and totals[-1] < full["peak_total"].bytes


def test_a_lora_critic_trains_its_adapters_and_its_value_head():
    c = estimate(HAND, replace(SMALL, algorithm="ppo", lora_rank=2)).components
    # adapters 2*64 = 128 plus the scalar head h + 1 = 5, bf16 gradients; all 201 critic weights are held
    assert c["critic_gradients"].bytes == (128 + 5) * 2
    assert c["critic_weights"].bytes == (HAND.value_model_params + 128) * 2


def test_checkpointing_lowers_activations_of_a_deep_model():
    spec, setup = load_model_spec("Qwen2.5-7B"), TrainingSetup()
    plain = estimate(spec, setup).components["activations"].bytes
    assert estimate(spec, replace(setup, grad_checkpointing=True)).components["activations"].bytes < plain / 5


def test_components_follow_the_algorithm():
    grpo = estimate(HAND, replace(SMALL, beta=0.04)).components
    assert "reference_weights" in grpo and "critic_weights" not in grpo and "kv_cache" in grpo
    assert "reference_weights" not in estimate(HAND, replace(SMALL, beta=0.0)).components
    ppo = estimate(HAND, replace(SMALL, algorithm="ppo")).components
    assert ppo["critic_weights"].bytes == 2 * HAND.value_model_params  # bf16
    assert ppo["critic_optimizer"].bytes == 12 * HAND.value_model_params
    dpo = estimate(HAND, replace(SMALL, algorithm="dpo", beta=0.0)).components
    assert "reference_weights" in dpo and "kv_cache" not in dpo  # DPO's loss always needs pi_ref; no sampling
    with_rm = estimate(HAND, replace(SMALL, reward_model=True)).components
    assert with_rm["reward_model_weights"].bytes == 2 * HAND.value_model_params


def test_peak_total_is_persistent_plus_the_larger_phase():
    c = {k: v.bytes for k, v in estimate(HAND, replace(SMALL, beta=0.04)).components.items()}
    persistent = c["policy_weights"] + c["policy_optimizer"] + c["reference_weights"]
    assert c["peak_total"] == persistent + max(c["policy_gradients"] + c["activations"], c["kv_cache"])


def test_a_bf16_sampler_holds_a_bf16_copy_of_the_policy_and_a_bf16_kv_cache():
    # rollout.dtype=bfloat16 with the hf backend deep-copies the policy to bf16 (rollout/backends.py):
    # 236 parameters x 2 B, whole on every GPU (ZeRO-3 shards the trained weights, not this copy).
    fp32 = replace(SMALL, precision="fp32")
    plain = estimate(HAND, fp32).components
    assert "sampler_weights" not in plain  # float32 samples with the policy itself
    bf16 = estimate(HAND, replace(fp32, rollout_dtype="bfloat16")).components
    assert bf16["sampler_weights"].bytes == 236 * 2
    assert (
        estimate(HAND, replace(fp32, rollout_dtype="bfloat16", gpus=2, zero_stage=3))
        .components["sampler_weights"]
        .bytes
        == 236 * 2
    )
    # its KV cache is bf16 too: 4*2 sequences x 8 tokens x 2*L=1*k=1*d=2 x 2 B, against 4 B in fp32
    assert bf16["kv_cache"].bytes == 8 * 8 * 2 * 1 * 1 * 2 * 2 == plain["kv_cache"].bytes / 2
    assert bf16["peak_total"].bytes == plain["peak_total"].bytes + 236 * 2  # persistent; backward > KV here
    assert (
        "sampler_weights"
        not in estimate(HAND, replace(SMALL, algorithm="dpo", group=2, rollout_dtype="bfloat16")).components
    )  # no sampling


def test_vllm_reserves_its_share_of_the_gpu_for_weights_and_kv_cache():
    # vLLM holds u x M for good: 0.25 x 1 GiB = 268,435,456 B, of which its bf16 weights are 236 x 2 B
    # and the rest KV cache blocks; the trainer then keeps no sampling KV cache of its own.
    setup = replace(
        SMALL, rollout_backend="vllm", rollout_dtype="bfloat16", vllm_gpu_memory_utilization=0.25, gpu_memory_gib=1.0
    )
    c = {k: v.bytes for k, v in estimate(HAND, setup).components.items()}
    assert c["vllm_weights"] == 236 * 2
    assert c["vllm_kv_cache"] == 2**28 - 236 * 2
    assert "kv_cache" not in c and "sampler_weights" not in c
    persistent = c["policy_weights"] + c["policy_optimizer"] + c["reference_weights"] + 2**28
    assert c["peak_total"] == persistent + c["policy_gradients"] + c["activations"]
    # float32 weights take 4 B each out of the same reservation
    fp32 = estimate(HAND, replace(setup, rollout_dtype="float32")).components
    assert fp32["vllm_weights"].bytes == 236 * 4 and fp32["vllm_kv_cache"].bytes == 2**28 - 236 * 4


def test_a_vllm_share_smaller_than_its_weights_is_a_user_error():
    # Qwen2.5-7B in bf16 is 15.2 GB; 0.1 x 80 GiB = 8 GiB cannot hold it
    setup = TrainingSetup(rollout_backend="vllm", rollout_dtype="bfloat16", vllm_gpu_memory_utilization=0.1)
    with pytest.raises(UserError, match="raise vllm-gpu-memory-utilization"):
        estimate(load_model_spec("Qwen2.5-7B"), setup)


# Parameter counts published on each model's Hugging Face page (safetensors metadata).
@pytest.mark.parametrize(
    "preset, published",
    [
        ("Qwen2.5-0.5B", 494_032_768),
        ("Qwen2.5-1.5B", 1_543_714_304),
        ("Qwen2.5-7B", 7_615_616_512),
        ("Llama-3-8B", 8_030_261_248),
    ],
)
def test_presets_have_the_published_parameter_counts(preset, published):
    assert load_model_spec(preset).num_params == published
    assert load_model_spec(preset.lower()).name == preset


def test_tiny_arith_preset_counts_the_shipped_models_parameters():
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlvr.bases import SHIPPED

    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(SHIPPED))
    assert load_model_spec("tiny-arith").num_params == sum(p.numel() for p in model.parameters())


def test_config_json_parsing(tmp_path):
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "intermediate_size": 96,
        "vocab_size": 50,
        "head_dim": 32,
        "tie_word_embeddings": True,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = load_model_spec(str(tmp_path))  # a directory holding config.json
    assert (spec.num_kv_heads, spec.head_dim, spec.tie_embeddings, spec.qkv_bias) == (4, 32, True, False)
    assert replace(spec, name="") == replace(load_model_spec(str(tmp_path / "config.json")), name="")
    assert spec_from_config({**config, "model_type": "qwen2"}, "q").qkv_bias  # Qwen2 biases q, k, v


def test_bad_models_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="presets: tiny-arith, Qwen2.5-0.5B"):
        load_model_spec("gpt-17")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_model_spec(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    with pytest.raises(UserError, match="lacks num_hidden_layers"):
        load_model_spec(str(tmp_path / "config.json"))
    with pytest.raises(UserError, match="no such file"):
        load_model_spec(str(tmp_path / "missing" / "config.json"))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"gpus": 3}, "evenly over 3 GPUs"),
        ({"gpus": 0}, "gpus must be >= 1"),
        ({"zero_stage": 4}, "ZeRO stage"),
        ({"micro_batch": 9}, "micro-batch 9 exceeds"),
        ({"algorithm": "a2c"}, "unknown algorithm 'a2c'"),
        ({"precision": "fp8"}, "unknown precision"),
        ({"algorithm": "dpo", "group": 4}, "group must be 2"),
        ({"rollout_backend": "sglang"}, "unknown rollout backend"),
        ({"rollout_dtype": "float16"}, "unknown rollout dtype"),
        ({"vllm_gpu_memory_utilization": 1.5}, "must be in"),
        ({"cpu_offload": True}, "CPU offload moves the shards of a policy sharded over several GPUs"),
        ({"cpu_offload": True, "zero_stage": 3}, r"got ZeRO-3 over 1 GPU\(s\)"),
    ],
)
def test_impossible_setups_are_user_errors(change, message):
    with pytest.raises(UserError, match=message):
        estimate(HAND, replace(SMALL, **change))


def test_a_sampler_in_the_working_weights_precision_is_the_policy_itself():
    # model.dtype=bfloat16 (bf16-mixed: 2-byte working weights) sampling at rollout.dtype=bfloat16 holds
    # no copy: the KV cache alone, at 2 B, as with float32 sampling; fp32 weights need a bf16 copy
    bf16 = estimate(HAND, replace(SMALL, precision="bf16-mixed", rollout_dtype="bfloat16")).components
    assert "sampler_weights" not in bf16 and bf16["kv_cache"].bytes == 8 * 8 * 2 * 1 * 1 * 2 * 2
    fp32 = estimate(HAND, replace(SMALL, precision="fp32", rollout_dtype="bfloat16")).components
    assert fp32["sampler_weights"].bytes == 236 * 2
