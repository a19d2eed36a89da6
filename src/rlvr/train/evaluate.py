"""Held-out accuracy of a policy: pass@1 from n samples per query at the training temperature,
with greedy accuracy beside it."""

from __future__ import annotations

from dataclasses import dataclass

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.eval.passk import mean_pass_at_k
from rlvr.rollout.hf import sample_completions
from rlvr.types import Query
from rlvr.verifiers import RewardFunction


@dataclass
class HeldoutResult:
    pass_at_1: float
    """Mean over queries of c/n: the unbiased pass@1 from n samples (Chen et al. 2021)."""
    greedy: float
    """Share of queries whose greedy completion passes."""
    n: int
    num_queries: int
    unscorable: int
    """Samples the verifier could not judge (kept out of both numbers)."""

    def to_dict(self) -> dict[str, float | int]:
        return {"pass@1": self.pass_at_1, "greedy": self.greedy, "n": self.n,
                "num_queries": self.num_queries, "unscorable": self.unscorable}


def _correct_counts(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, queries: list[Query],
    reward_fn: RewardFunction, *, n: int, chunk: int, **sampling: object,
) -> tuple[list[tuple[int, int]], int]:
    counts, unscorable = [], 0
    for start in range(0, len(queries), chunk):
        part = queries[start : start + chunk]
        batch = sample_completions(model, tokenizer, part, group_size=n, **sampling)
        scored = reward_fn.score_batch([(batch.query_of(i), t) for i, t in enumerate(batch.texts)])
        for q in range(len(part)):
            group = scored[q * n : (q + 1) * n]
            judged = [s for s in group if s.reward is not None]
            unscorable += len(group) - len(judged)
            if judged:
                counts.append((len(judged), sum(s.correct for s in judged)))
    return counts, unscorable


def evaluate_heldout(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    reward_fn: RewardFunction,
    *,
    n: int,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    chunk_completions: int = 512,
) -> HeldoutResult:
    chunk = max(1, chunk_completions // n)
    sampled, bad_s = _correct_counts(model, tokenizer, queries, reward_fn, n=n, chunk=chunk,
                                     temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)
    greedy, bad_g = _correct_counts(model, tokenizer, queries, reward_fn, n=1, chunk=chunk_completions,
                                    greedy=True, max_new_tokens=max_new_tokens)
    return HeldoutResult(
        pass_at_1=mean_pass_at_k(sampled, 1) if sampled else float("nan"),
        greedy=sum(c for _, c in greedy) / max(len(greedy), 1),
        n=n, num_queries=len(queries), unscorable=bad_s + bad_g,
    )
