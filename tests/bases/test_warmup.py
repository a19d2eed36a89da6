import random

import torch

from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.bases.warmup import WarmupSpec, sft_batch, warm_up
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.tasks.arith import make_queries, worked_solution


def test_sft_batch_masks_prompt_and_padding():
    tok = build_char_tokenizer()
    ids, labels = sft_batch(tok, [("1+2", "<answer>3</answer>"), ("(1+2)*3", "<answer>9</answer>")])
    # row 0: BOS + 3 prompt chars, then <answer> 3 </answer> EOS, then padding
    assert labels[0, :4].tolist() == [-100] * 4
    assert labels[0, 4:8].tolist() == ids[0, 4:8].tolist() and ids[0, 7] == tok.eos_token_id
    assert (labels[0, 8:] == -100).all() and (ids[0, 8:] == tok.pad_token_id).all()


def _warm(seed):
    tok = build_char_tokenizer()
    arch = TinyArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2)
    model = build_tiny_llama(tok, arch, seed=seed)
    queries = make_queries(50, split="train", seed=0)
    spec = WarmupSpec(steps=4, batch_size=8, lr=1e-2, warmup_steps=1, error_rate=0.35, seed=seed)
    warm_up(model, tok, queries, lambda q, rng: worked_solution(q, rng=rng, error_rate=0.35), spec)
    return model


def test_warm_up_is_deterministic_in_its_seed_and_learns():
    a, b, c = _warm(0), _warm(0), _warm(1)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), c.parameters()))
    tok = build_char_tokenizer()
    q = make_queries(8, split="train", seed=0)
    ids, labels = sft_batch(tok, [(x.prompt, worked_solution(x, rng=random.Random(0))) for x in q])
    fresh = build_tiny_llama(tok, TinyArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2), seed=0)
    with torch.no_grad():
        assert a(input_ids=ids, labels=labels).loss < fresh(input_ids=ids, labels=labels).loss
