"""The weights the vLLM sampler streams after every update (rollout/vllm.py, `hf_weights`), checked
without vLLM: a LoRA policy's are its merged weights under the plain model's names."""

import copy

import torch

from rlvr.config import ModelConfig
from rlvr.models import load_policy
from rlvr.models.lora import add_lora
from rlvr.rollout.vllm import hf_weights


def test_a_plain_policy_streams_its_parameters_as_they_are(random_policy):
    model, _ = random_policy
    assert [(n, p.data_ptr()) for n, p in hf_weights(model)] == [(n, p.data_ptr()) for n, p in model.named_parameters()]


def test_a_lora_policy_streams_merged_weights_under_the_base_names(random_model_dir):
    model, _ = load_policy(str(random_model_dir))
    names = [n for n, _ in model.named_parameters()]
    policy = add_lora(model, ModelConfig(lora_rank=2, lora_target_modules=["q_proj", "v_proj", "down_proj"]))
    with torch.no_grad():  # trained adapters: B is no longer 0, so the merge changes W
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn_like(p))
    before = {n: p.detach().clone() for n, p in policy.named_parameters()}
    streamed = dict(hf_weights(policy))
    merged = dict(copy.deepcopy(policy).merge_and_unload().named_parameters())  # peft's own W + (α/r)·B A

    assert list(streamed) == names  # vLLM's load_weights reads the Hugging Face names
    for name in names:
        assert torch.allclose(streamed[name], merged[name], atol=1e-6), name
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.allclose(streamed[q], before[f"base_model.model.{q.removesuffix('.weight')}.base_layer.weight"])
    assert all(torch.equal(p, before[n]) for n, p in policy.named_parameters())  # nothing merged in place
