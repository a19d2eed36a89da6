"""Paired draws (rollout/draws.py): each sampled token of held-out evaluation comes from a uniform
fixed by (seed, query id, sample, position), through both samplers and tool rollouts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlvr.bases import resolve_model_path
from rlvr.models import load_policy
from rlvr.models.forward import forward_for
from rlvr.rollout.draws import Draws, inverse_cdf, row_key, uniforms_at
from rlvr.rollout.heldout import evaluate_heldout
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.tools import FORMATS, ToolUse, calls_run
from rlvr.tasks.arith import make_queries
from rlvr.verifiers import RewardFunction

MASK = (1 << 64) - 1


def _splitmix64(key: int, position: int) -> float:
    """The reference: SplitMix64 (Steele et al. 2014) in Python's exact integers."""
    z = (key + (position + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return (z >> 11) / 2.0**53


def test_uniforms_are_splitmix64_of_the_key_and_position():
    keys = [row_key(0, "q1", 0), row_key(0, "q1", 1), row_key(7, "q1", 0), MASK, 0]
    positions = [0, 1, 5, 1000, 3]
    got = uniforms_at(np.array(keys, dtype=np.uint64), np.array(positions))
    assert got.tolist() == [_splitmix64(k, p) for k, p in zip(keys, positions)]
    assert len({row_key(0, "q1", 0), row_key(0, "q1", 1), row_key(1, "q1", 0), row_key(0, "q2", 0)}) == 4


def test_inverse_cdf_draws_follow_the_distribution_and_skip_zero_mass():
    probs = torch.tensor([0.5, 0.0, 0.2, 0.3, 0.0])
    draws = Draws.for_queries(0, [f"q{i}" for i in range(20_000)], 1)
    u = draws.uniforms(torch.arange(len(draws)), step=0)
    tokens = inverse_cdf(probs.expand(len(draws), -1), u)
    share = torch.bincount(tokens, minlength=5).double() / len(draws)
    assert share[1] == 0 and share[4] == 0
    assert torch.allclose(share, probs.double(), atol=0.012)  # about 4 standard errors at n = 20,000
    edge = inverse_cdf(probs.expand(3, -1), torch.tensor([0.0, 0.5, 1.0 - 2**-53], dtype=torch.float64))
    assert edge.tolist() == [0, 2, 3]


@pytest.fixture(scope="module")
def arith_policy():
    return load_policy(resolve_model_path("tiny-arith"))


@pytest.mark.parametrize("setting", ["auto", "hf"])  # the fused sampler, and HF generate
def test_a_querys_samples_do_not_depend_on_the_batch_or_the_generator(arith_policy, setting):
    model, tok = arith_policy
    forward = forward_for(model, setting)
    assert (forward.fused is not None) == (setting == "auto")
    queries = [q for q in make_queries(40, split="heldout", seed=0) if len(tok(q.prompt).input_ids) == 7][:4]
    assert len(queries) == 4  # one prompt length: no padding to move a logit between the batches

    def texts(batch_queries, generator_seed, draw_seed=5):
        torch.manual_seed(generator_seed)
        batch = sample_completions(
            forward, tok, batch_queries, group_size=3, max_new_tokens=24, temperature=1.0, draw_seed=draw_seed
        )
        return {(batch.query_of(i).id, i % 3): text for i, text in enumerate(batch.texts)}

    together = texts(queries, generator_seed=0)
    alone = texts([queries[2]], generator_seed=1)
    reordered = texts(queries[::-1], generator_seed=2)
    assert alone == {key: text for key, text in together.items() if key[0] == queries[2].id}
    assert reordered == together
    assert texts(queries, generator_seed=0, draw_seed=6) != together  # another seed, other draws
    assert len({together[(queries[0].id, j)] for j in range(3)}) > 1  # the samples of a query differ


def test_an_unchanged_model_scores_the_same_and_a_changed_one_mostly_draws_alike(arith_policy):
    model, tok = arith_policy
    queries = make_queries(24, split="heldout", seed=0)
    reward = RewardFunction()

    def heldout(m, generator_seed):
        torch.manual_seed(generator_seed)
        return evaluate_heldout(
            m, tok, queries, reward, n=4, temperature=1.0, top_p=1.0, max_new_tokens=40, draw_seed=3
        ).to_dict()

    first = heldout(model, 0)
    assert heldout(model, 123) == first  # the generator's state plays no part
    unpaired = [
        evaluate_heldout(model, tok, queries, reward, n=4, temperature=1.0, top_p=1.0, max_new_tokens=40).pass_at_1
        for _ in range(2)
    ]
    assert unpaired[0] != unpaired[1]  # without paired draws the same model scores differently


def test_tool_rollouts_draw_the_same_tokens_for_the_same_query_and_sample():
    model, tok = load_policy(resolve_model_path("tiny-arith-tool"))
    queries = make_queries(6, split="heldout", seed=0)
    tools = ToolUse(FORMATS["tags"], max_turns=2, slots=1)
    try:
        runs = []
        for generator_seed, part in ((0, queries), (9, queries[3:])):
            torch.manual_seed(generator_seed)
            batch = sample_completions(
                model, tok, part, group_size=4, max_new_tokens=48, temperature=1.0, tools=tools, draw_seed=1
            )
            runs.append({(batch.query_of(i).id, i % 4): t for i, t in enumerate(batch.texts)})
            called = [bool(calls_run(turns)) for turns in batch.turns]
    finally:
        tools.close()
    assert runs[1] == {key: text for key, text in runs[0].items() if key[0] in {q.id for q in queries[3:]}}
    assert any(called)  # some rollouts ran a call, so later turns drew too


def test_a_continued_draw_is_the_tail_of_one_longer_draw(arith_policy):
    """Samples first_sample.. of a query are the ones a single draw of more samples makes there, so a
    support reading can draw on where an evaluation stopped (studies/passk_eval.continue_support)."""
    model, tok = arith_policy
    queries = make_queries(3, split="heldout", seed=0)
    whole = sample_completions(model, tok, queries, group_size=6, max_new_tokens=24, draw_seed=5)
    tail = sample_completions(model, tok, queries, group_size=2, max_new_tokens=24, draw_seed=5, first_sample=4)
    assert tail.texts == [whole.texts[q * 6 + j] for q in range(3) for j in (4, 5)]
    other = sample_completions(model, tok, queries, group_size=2, max_new_tokens=24, draw_seed=5, first_sample=0)
    assert other.texts == [whole.texts[q * 6 + j] for q in range(3) for j in (0, 1)] != tail.texts
