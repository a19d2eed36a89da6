"""model.dtype and model.gradient_checkpointing where the policy is loaded (models/loading.py), on a
tiny randomly initialised Qwen2 (the recipe's architecture: q/k/v biases, 7 query heads per KV
head, tied embeddings) saved with the ChatML character tokenizer."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from rlvr.config import ModelConfig
from rlvr.models import load_policy
from rlvr.models.forward import forward_for
from rlvr.models.loading import checkpointed_layers
from rlvr.models.logprobs import token_logprobs
from rlvr.models.lora import add_lora
from rlvr.models.tokenizer import build_chat_tokenizer
from rlvr.rollout.hf import encode_prompts


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-qwen2")
    tok = build_chat_tokenizer()
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=56, intermediate_size=112, num_hidden_layers=3,
        num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _batch(tok):
    """Two prompts of different lengths (left padding) with completions of 5 and 3 tokens."""
    prompt_ids, prompt_mask = encode_prompts(tok, ["What is 2+3?", "7*6?"])  # [2, P]
    completion_ids = torch.tensor([tok("<answer>5", add_special_tokens=False).input_ids[:5], [9, 10, 11, 0, 0]])
    completion_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])  # [2, 5]
    return prompt_ids, prompt_mask, completion_ids, completion_mask


def _loss_and_grads(model, tok) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    logp, _ = token_logprobs(model, *_batch(tok), temperature=1.0)  # [2, 5]
    loss = -logp.sum() / 8  # 8 real completion tokens
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _count_layer_forwards(model) -> list[int]:
    """Runs of the layers' bodies, counted at their MLPs: transformers checkpoints a layer's
    `forward`, so a hook on the layer itself fires once, and one inside it at every recompute too."""
    calls = [0]
    for layer in model.model.layers:
        layer.mlp.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


@pytest.mark.parametrize("lora", [False, True])
def test_checkpointing_recomputes_each_layer_and_keeps_loss_and_gradients(qwen_dir, lora):
    plain, tok = load_policy(str(qwen_dir))
    checkpointed, _ = load_policy(str(qwen_dir), gradient_checkpointing=True)
    assert not checkpointed_layers(plain) and len(checkpointed_layers(checkpointed)) == 3
    calls = _count_layer_forwards(checkpointed)
    if lora:
        plain, checkpointed = (
            add_lora(plain, ModelConfig(lora_rank=4)),
            add_lora(checkpointed, ModelConfig(lora_rank=4)),
        )
    loss, grads = _loss_and_grads(plain, tok)
    loss_ckpt, grads_ckpt = _loss_and_grads(checkpointed, tok)
    # 3 layers run in the forward and again in the backward, which recomputes them from their inputs
    assert calls[0] == 2 * 3
    assert torch.equal(loss, loss_ckpt)
    # with LoRA only A and B of 7 projections in 3 layers get gradients: 2 * 7 * 3 = 42
    assert grads.keys() == grads_ckpt.keys() and len(grads) == (42 if lora else len(list(plain.parameters())))
    for name in grads:
        assert torch.allclose(grads[name], grads_ckpt[name], rtol=1e-5, atol=1e-7), name


def test_checkpointing_leaves_the_policy_in_eval_mode_and_skips_no_grad_passes(qwen_dir):
    model, tok = load_policy(str(qwen_dir), gradient_checkpointing=True)
    calls = _count_layer_forwards(model)
    with torch.no_grad():  # sampling and the reference: nothing to recompute
        token_logprobs(model, *_batch(tok), temperature=1.0)
    assert calls[0] == 3
    # only the layers' own flag is set (what transformers' checkpoint wrapper reads); their attention
    # and MLP, and the model itself, stay in eval mode, so sampling and scoring compute one function
    assert not model.training and not any(
        m.training for layer in model.model.layers for m in layer.modules() if m is not layer
    )


def test_a_checkpointed_llama_takes_hf_forward_on_the_cpu(random_model_dir):
    model, _ = load_policy(str(random_model_dir))
    assert (
        forward_for(model).fused is not None
    )  # a plain Llama on the CPU: the fused forward, which cannot recompute layers
    checkpointed, _ = load_policy(str(random_model_dir), gradient_checkpointing=True)
    assert forward_for(checkpointed).fused is None
    assert forward_for(copy.deepcopy(checkpointed)).fused is None  # the reference copy too


def test_bfloat16_loads_the_weights_in_bf16_and_lora_keeps_its_adapters_in_float32(qwen_dir):
    model, _ = load_policy(str(qwen_dir), dtype="bfloat16")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16} and model.dtype == torch.bfloat16
    policy = add_lora(model, ModelConfig(lora_rank=4))
    dtypes = {name: p.dtype for name, p in policy.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}  # peft's autocast_adapter_dtype
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}
    assert {n for n, p in policy.named_parameters() if p.requires_grad} == {n for n in dtypes if "lora_" in n}
    assert policy.dtype == torch.bfloat16  # what the sampler compares rollout.dtype with
