"""model.forward chosen once per model (models/forward.py), and what the fused path tells an observer."""

from __future__ import annotations

import copy

import pytest
import torch

from rlvr.config import ModelConfig
from rlvr.models.forward import ForwardHooks, as_forward, forward_for
from rlvr.models.logprobs import token_logprobs
from rlvr.models.lora import add_lora
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries


def test_each_setting_picks_the_fused_forward_or_hfs_once(base_policy):
    model, _ = base_policy
    assert forward_for(model).fused is not None  # auto on the CPU: fused
    assert forward_for(model, "lean").fused is not None
    assert forward_for(model, "hf").fused is None
    assert as_forward(model).fused is not None  # a bare model runs as auto decides
    chosen = forward_for(model, "hf")
    assert as_forward(chosen) is chosen  # a Forward is used as given, never re-decided
    with pytest.raises(ValueError, match="model.forward='fast'"):
        forward_for(model, "fast")


def test_lora_adapters_take_hfs_forward_even_when_lean_is_asked(base_policy):
    model, _ = base_policy
    adapted = add_lora(copy.deepcopy(model), ModelConfig(lora_rank=2))
    assert forward_for(adapted, "lean").fused is None  # the fused forward reads the base weights only


def test_a_copy_keeps_the_choice_and_the_hooks(base_policy):
    model, _ = base_policy
    policy = forward_for(model, "hf")
    copied = policy.of(copy.deepcopy(model).to(torch.bfloat16))  # the sampler's bf16 copy
    assert copied.fused is None and copied.setting == "hf" and copied.hooks is policy.hooks
    assert policy.of(model).model is model


def test_the_fused_path_reports_scoring_passes_and_its_cache_to_the_hooks(base_policy):
    model, tok = base_policy
    policy = forward_for(model)
    passes, caches = [], []
    queries = make_queries(2, split="heldout", seed=0)
    with policy.hooks.observing(on_scoring=lambda: passes.append(1), on_cache=caches.append):
        batch = sample_completions(policy, tok, queries, group_size=3, max_new_tokens=10, greedy=True)
        token_logprobs(
            policy, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=1.0
        )
    c = model.config
    p = batch.prompt_ids.shape[1]
    # one cache of keys and values per layer: [6 rows, kv heads, p + 10 columns, head dim] in float32
    head_dim = c.hidden_size // c.num_attention_heads
    assert caches == [2 * c.num_hidden_layers * 6 * c.num_key_value_heads * (p + 10) * head_dim * 4]
    assert passes == [1]
    assert policy.hooks.on_scoring is None and policy.hooks.on_cache is None  # put back after the block


def test_hooks_nest_and_put_back_what_was_there():
    hooks, seen = ForwardHooks(), []
    with hooks.observing(on_cache=seen.append):
        with hooks.observing(on_scoring=lambda: seen.append("scoring")):
            hooks.scoring()
            hooks.cache(7)
        hooks.scoring()  # no scoring hook any more: nothing happens
    hooks.cache(8)
    assert seen == ["scoring", 7]
