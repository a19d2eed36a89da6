"""The HF sampler's log-probs (rollout/hf.py, SampledLogProbs): recorded step by step by a logits
processor, they are the trainer's untruncated, tempered π_θ, whatever generate's warpers and the
model's own generation_config do to the sampling."""

import math

import pytest
import torch

from rlvr.models.forward import forward_for
from rlvr.models.logprobs import token_logprobs
from rlvr.rollout.hf import SampledLogProbs, encode_prompts, sample_completions
from rlvr.tasks.arith import make_queries


def _trainer_logprobs(model, batch, temperature):
    logp, _ = token_logprobs(
        model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=temperature
    )
    return logp  # [N, T]


@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 0.5)])
def test_generate_returns_the_trainers_log_probs_of_its_samples(base_policy, temperature, top_p):
    model, tok = base_policy
    hf = forward_for(model, "hf")  # transformers' generate, as on a GPU
    torch.manual_seed(0)
    batch = sample_completions(
        hf, tok, make_queries(3, split="heldout", seed=0), group_size=4, max_new_tokens=24,
        temperature=temperature, top_p=top_p,
    )  # fmt: skip
    # top-p cuts the sampling, not the log-probs: both sides score the whole tempered distribution
    assert torch.allclose(_trainer_logprobs(hf, batch, temperature), batch.old_logp, atol=1e-4)
    assert (batch.old_logp[batch.completion_mask == 0] == 0).all()


def test_a_repetition_penalty_in_the_models_generation_config_is_not_applied(base_policy):
    model, tok = base_policy
    hf = forward_for(model, "hf")
    queries = make_queries(4, split="heldout", seed=0)
    plain = sample_completions(hf, tok, queries, group_size=1, max_new_tokens=24, greedy=True)
    model.generation_config.repetition_penalty = 3.0  # as a Hub model's generation_config.json may set one
    prompt_ids, prompt_mask = encode_prompts(tok, [q.prompt for q in queries])
    penalised = model.generate(
        input_ids=prompt_ids, attention_mask=prompt_mask, do_sample=False, max_new_tokens=24,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
    )[:, prompt_ids.shape[1] :]  # fmt: skip
    assert penalised.tolist() != plain.completion_ids.tolist()  # the penalty is live in the model's own generate
    batch = sample_completions(hf, tok, queries, group_size=1, max_new_tokens=24, greedy=True)
    assert batch.completion_ids.tolist() == plain.completion_ids.tolist()  # but not in rlvr's sampler
    assert torch.allclose(_trainer_logprobs(hf, batch, 1.0), batch.old_logp, atol=1e-4)


def test_the_recorder_keeps_one_step_of_logits():
    recorder = SampledLogProbs(temperature=2.0)
    scores = torch.tensor([[0.0, 2.0], [4.0, 0.0]])  # [N=2, V=2]; at T = 2: [0, 1] and [2, 0]
    recorder(torch.tensor([[7], [7]]), scores)  # step 1's logits
    recorder(torch.tensor([[7, 1], [7, 0]]), scores)  # step 1 drew tokens 1 and 0 (the likelier ones)
    logp = recorder.logprobs(torch.tensor([0, 1]))  # step 2 drew 0 and 1 (the less likely ones)
    # log softmax of [0, d]: -log(1 + e^-d) for the larger logit, -d - log(1 + e^-d) for the smaller
    row0 = [-math.log1p(math.exp(-1)), -1 - math.log1p(math.exp(-1))]
    row1 = [-math.log1p(math.exp(-2)), -2 - math.log1p(math.exp(-2))]
    assert torch.allclose(logp, torch.tensor([row0, row1]))
    assert recorder.previous.shape == (2, 2)  # one step of logits held, never [N, T, V]
