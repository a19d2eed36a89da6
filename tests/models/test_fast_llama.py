"""The fused Llama forward (models/fast_llama.py) and its sampler (rollout/fast_decode.py) against
transformers' own LlamaForCausalLM: same logits, gradients and samples."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
from transformers.generation.logits_process import TopPLogitsWarper

from rlvr.models.fast_llama import FastLlama
from rlvr.models.forward import forward_for
from rlvr.models.logprobs import token_logprobs
from rlvr.rollout.fast_decode import sample, top_p_filter
from rlvr.rollout.hf import encode_prompts, sample_completions
from rlvr.tasks.arith import make_queries


def hf_twin(model):
    """The same weights forced through HF's forward and generate (model.forward=hf)."""
    return forward_for(copy.deepcopy(model), "hf")


def fused(model, setting: str = "auto") -> bool:
    """Whether `model` runs the fused forward under model.forward=`setting`."""
    return forward_for(model, setting).fused is not None


def ragged_batch(tok, queries, group_size: int, seed: int):
    """Prompts of different lengths (left padding) and completions of different lengths (right padding)."""
    g = torch.Generator().manual_seed(seed)
    prompt_ids, prompt_mask = encode_prompts(tok, [q.prompt for q in queries for _ in range(group_size)])
    n = prompt_ids.shape[0]
    completion_ids = torch.randint(3, tok.vocab_size, (n, 9), generator=g)  # [n, 9]
    lengths = torch.randint(1, 10, (n,), generator=g)  # [n]
    completion_mask = (torch.arange(9)[None] < lengths[:, None]).long()
    completion_ids = completion_ids.masked_fill(completion_mask == 0, tok.pad_token_id)
    return prompt_ids, prompt_mask, completion_ids, completion_mask


@pytest.mark.parametrize("policy", ["random_policy", "base_policy"])
def test_logprobs_and_entropy_equal_hf_forward(policy, request):
    model, tok = request.getfixturevalue(policy)
    assert fused(model)
    batch = ragged_batch(tok, make_queries(5, split="train", seed=3), group_size=3, seed=0)
    lean_logp, lean_entropy = token_logprobs(model, *batch, temperature=0.7, with_entropy=True)
    hf_logp, hf_entropy = token_logprobs(hf_twin(model), *batch, temperature=0.7, with_entropy=True)
    assert torch.allclose(lean_logp, hf_logp, atol=2e-5), (lean_logp - hf_logp).abs().max()
    assert torch.allclose(lean_entropy, hf_entropy, atol=2e-5)
    assert (lean_logp[batch[3] == 0] == 0).all() and (lean_logp[batch[3] == 1] < 0).all()


def test_one_token_completions_are_scored_from_the_prompt_alone(base_policy):
    model, tok = base_policy
    prompt_ids, prompt_mask, completion_ids, _ = ragged_batch(tok, make_queries(3, split="train", seed=1), 2, 1)
    one = completion_ids[:, :1]
    mask = torch.ones_like(one)
    lean_logp, _ = token_logprobs(model, prompt_ids, prompt_mask, one, mask, temperature=1.0)
    hf_logp, _ = token_logprobs(hf_twin(model), prompt_ids, prompt_mask, one, mask, temperature=1.0)
    assert lean_logp.shape == (6, 1) and torch.allclose(lean_logp, hf_logp, atol=2e-5)


def test_gradients_equal_hf_backward_with_shared_prompts(base_policy):
    """G rows share a prompt: the prompt runs once and its gradient sums over the G completions."""
    model, tok = base_policy
    twin = hf_twin(model)
    batch = ragged_batch(tok, make_queries(4, split="train", seed=5), group_size=4, seed=2)
    weights = torch.randn(batch[2].shape, generator=torch.Generator().manual_seed(0))  # [n, T]
    for m in (model, twin):
        logp, _ = token_logprobs(m, *batch, temperature=1.0)
        (logp * weights).sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.model.parameters()):
        assert p.grad is not None and torch.allclose(p.grad, q.grad, atol=1e-4, rtol=1e-4), name


def test_greedy_samples_equal_hf_generate(base_policy):
    """Rows finish at different steps here, so the decoder drops finished rows along the way."""
    model, tok = base_policy
    queries = make_queries(24, split="heldout", seed=0)
    lean = sample_completions(model, tok, queries, group_size=1, max_new_tokens=40, greedy=True)
    hf = sample_completions(hf_twin(model), tok, queries, group_size=1, max_new_tokens=40, greedy=True)
    lengths = lean.completion_mask.sum(dim=1)
    assert lengths.min() < lengths.max()  # ragged: the row-dropping path ran
    assert lean.texts == hf.texts and torch.equal(lean.completion_ids, hf.completion_ids)
    assert torch.allclose(lean.old_logp, hf.old_logp, atol=2e-5)
    assert torch.equal(lean.prompt_ids, hf.prompt_ids) and lean.finish_reasons == hf.finish_reasons


def test_sampled_logprobs_are_the_trainers_and_rows_end_at_eos(base_policy):
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(
        model, tok, make_queries(6, split="train", seed=2), group_size=8, max_new_tokens=40, temperature=0.8
    )
    twin_logp, _ = token_logprobs(
        hf_twin(model),
        batch.prompt_ids,
        batch.prompt_mask,
        batch.completion_ids,
        batch.completion_mask,
        temperature=0.8,
    )
    assert torch.allclose(batch.old_logp, twin_logp, atol=2e-5)
    ends = batch.completion_mask.sum(dim=1) - 1  # [N] index of the last kept token
    stopped = torch.tensor([r == "stop" for r in batch.finish_reasons])
    assert (batch.completion_ids[stopped, ends[stopped]] == tok.eos_token_id).all()
    assert len(set(batch.texts)) > 6  # samples differ within groups


def test_top_p_cut_matches_transformers_warper():
    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(0)) * 3
    for top_p in (0.3, 0.9, 0.99):
        expected = TopPLogitsWarper(top_p=top_p)(None, logits.clone())
        assert torch.equal(top_p_filter(logits, top_p).isinf(), expected.isinf())
    assert top_p_filter(logits, 1.0) is logits


def test_top_p_sampling_never_leaves_the_nucleus(base_policy):
    model, tok = base_policy
    torch.manual_seed(0)
    batch = sample_completions(
        model, tok, make_queries(4, split="train", seed=0), group_size=8, max_new_tokens=40, temperature=1.0, top_p=0.5
    )
    logits = FastLlama(model).completion_logits(batch.prompt_ids, batch.prompt_mask, batch.completion_ids)
    kept = ~top_p_filter(logits.reshape(-1, logits.shape[-1]), 0.5).isinf()  # [N*T, V]
    chosen = kept.gather(1, batch.completion_ids.reshape(-1, 1))[:, 0].view_as(batch.completion_mask)
    assert chosen[batch.completion_mask == 1].all()


def test_other_architectures_and_the_hf_setting_take_hf_forward(base_policy):
    model, _ = base_policy
    assert fused(model) and fused(model, "lean") and not fused(model, "hf")
    qwen = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=50,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    )
    assert not fused(qwen, "lean")  # q/k/v biases: not this module's math
    scaled = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=50,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            rope_scaling={"rope_type": "linear", "factor": 2.0},
        )
    )
    assert not fused(scaled, "lean")


def test_grouped_query_attention_matches_hf():
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=40,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        )
    ).eval()
    assert fused(model)
    prompt_ids = torch.tensor([[0, 0, 1, 5, 6], [1, 7, 8, 9, 10]])
    prompt_mask = (prompt_ids != 0).long()
    completion_ids = torch.tensor([[11, 12, 2, 0], [13, 14, 15, 16]])
    completion_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    args = (prompt_ids, prompt_mask, completion_ids, completion_mask)
    lean_logp, _ = token_logprobs(model, *args, temperature=1.0)
    hf_logp, _ = token_logprobs(hf_twin(model), *args, temperature=1.0)
    assert torch.allclose(lean_logp, hf_logp, atol=2e-5)
    ids, logp = sample(
        FastLlama(model),
        prompt_ids,
        prompt_mask,
        group_size=2,
        max_new_tokens=6,
        temperature=1.0,
        top_p=1.0,
        greedy=True,
        stop_ids=[2],
        pad_id=0,
    )
    out = hf_twin(model).model.generate(
        input_ids=prompt_ids,
        attention_mask=prompt_mask,
        do_sample=False,
        max_new_tokens=6,
        eos_token_id=2,
        pad_token_id=0,
    )
    assert torch.equal(ids[::2], out[:, 5 : 5 + ids.shape[1]]) and torch.equal(ids[::2], ids[1::2])
