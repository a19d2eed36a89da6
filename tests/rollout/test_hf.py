import torch

from rlvr.models.logprobs import token_logprobs
from rlvr.rollout.hf import completion_mask, encode_prompts, sample_completions
from rlvr.tasks.arith import make_queries


def test_completion_mask_keeps_tokens_through_the_first_eos():
    eos = 2
    ids = torch.tensor([[5, 6, 2, 7, 2], [5, 6, 7, 8, 9], [2, 0, 0, 0, 0]])
    assert completion_mask(ids, [eos]).tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]]


def test_completion_mask_stops_at_the_first_of_any_stop_token():
    eos, end_of_turn = 2, 9
    ids = torch.tensor([[5, 9, 2, 7], [5, 2, 9, 7], [5, 6, 7, 8]])
    # row 0 ends at the end of turn (position 1), row 1 at EOS (position 1), row 2 at neither
    expected = [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
    assert completion_mask(ids, [eos, end_of_turn]).tolist() == expected
    assert completion_mask(ids, torch.tensor([end_of_turn, eos])).tolist() == expected


def test_prompts_are_left_padded_after_bos(random_policy):
    _, tok = random_policy
    ids, mask = encode_prompts(tok, ["1+2", "(1+2)*3"])
    assert ids.shape == (2, 8) and mask[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert ids[0, 4].item() == tok.bos_token_id and ids[0, 0].item() == tok.pad_token_id


def test_samples_come_back_grouped_with_the_samplers_logprobs(base_policy):
    model, tok = base_policy
    queries = make_queries(3, split="heldout", seed=0)
    torch.manual_seed(0)
    batch = sample_completions(model, tok, queries, group_size=4, max_new_tokens=40, temperature=1.0)
    assert batch.completion_ids.shape[0] == 12 and batch.old_logp.shape == batch.completion_ids.shape
    assert [batch.query_of(i).id for i in range(12)] == [q.id for q in queries for _ in range(4)]
    assert set(batch.finish_reasons) <= {"stop", "length"}
    assert (batch.old_logp[batch.completion_mask == 0] == 0).all()
    assert (batch.old_logp[batch.completion_mask == 1] < 0).all()
    # The trainer's forward pass recomputes the same numbers: the first ratio is 1 up to rounding.
    logp, entropy = token_logprobs(
        model,
        batch.prompt_ids,
        batch.prompt_mask,
        batch.completion_ids,
        batch.completion_mask,
        temperature=1.0,
        with_entropy=True,
    )
    assert torch.allclose(logp, batch.old_logp, atol=1e-4)
    assert (entropy >= 0).all()
    # a finished completion's text ends with its answer, the EOS itself is stripped
    for text, reason in zip(batch.texts, batch.finish_reasons):
        if reason == "stop":
            assert "<eos>" not in text


def test_temperature_scales_the_logprobs(base_policy):
    model, tok = base_policy
    queries = make_queries(2, split="heldout", seed=0)
    torch.manual_seed(1)
    batch = sample_completions(model, tok, queries, group_size=2, max_new_tokens=40, temperature=0.7)
    logp, _ = token_logprobs(
        model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=0.7
    )
    assert torch.allclose(logp, batch.old_logp, atol=1e-4)
    logp_t1, _ = token_logprobs(
        model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=1.0
    )
    assert not torch.allclose(logp_t1, batch.old_logp, atol=1e-3)


def test_greedy_is_deterministic(base_policy):
    model, tok = base_policy
    queries = make_queries(4, split="heldout", seed=0)
    a = sample_completions(model, tok, queries, group_size=1, max_new_tokens=40, greedy=True)
    b = sample_completions(model, tok, queries, group_size=1, max_new_tokens=40, greedy=True)
    assert a.texts == b.texts
