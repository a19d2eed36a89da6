"""Held-out accuracy of a policy: pass@1 from n samples per query at the training temperature,
with greedy accuracy beside it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from transformers import PreTrainedTokenizerBase

from rlvr.eval.curves import QueryCounts, curves
from rlvr.eval.passk import mean_pass_at_k
from rlvr.models.forward import Runnable
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.prompts import PromptFormat
from rlvr.rollout.tools import ToolUse, calls_run
from rlvr.types import Query
from rlvr.verifiers import RewardFunction, ScoredCompletion


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
    gold_pass_at_1: float | None = None
    """pass@1 of the same samples judged by the gold verifier (equal to pass_at_1 when training is gold)."""
    hacking_rate: float | None = None
    """Share of the samples the training verifier passes and the gold verifier fails."""
    gold_greedy: float | None = None
    """Greedy accuracy judged by the gold verifier (equal to greedy when training is gold)."""
    tool_use_rate: float | None = None
    """rollout.tools: share of the sampled completions that ran at least one tool call."""
    pass_at_k: dict[int, float] = field(default_factory=dict)
    """train.eval_ks: the unbiased pass@k from the same n samples, for each k asked."""

    @classmethod
    def from_dict(cls, data: dict[str, float | int]) -> HeldoutResult:
        """The result `to_dict` wrote (a summary.json's "base" or "final")."""
        ks = {int(key[5:]): value for key, value in data.items() if key.startswith("pass@") and key != "pass@1"}
        return cls(
            pass_at_1=data["pass@1"],
            greedy=data["greedy"],
            n=data["n"],
            num_queries=data["num_queries"],
            unscorable=data["unscorable"],
            gold_pass_at_1=data.get("gold_pass@1"),
            hacking_rate=data.get("hacking_rate"),
            gold_greedy=data.get("gold_greedy"),
            tool_use_rate=data.get("tool_use_rate"),
            pass_at_k=ks,
        )

    def to_dict(self) -> dict[str, float | int]:
        extra = (
            {}
            if self.gold_pass_at_1 is None
            else {"gold_pass@1": self.gold_pass_at_1, "hacking_rate": self.hacking_rate}
        )
        if self.gold_greedy is not None:
            extra["gold_greedy"] = self.gold_greedy
        if self.tool_use_rate is not None:
            extra["tool_use_rate"] = self.tool_use_rate
        return {
            "pass@1": self.pass_at_1,
            **{f"pass@{k}": value for k, value in sorted(self.pass_at_k.items())},
            "greedy": self.greedy,
            "n": self.n,
            "num_queries": self.num_queries,
            "unscorable": self.unscorable,
            **extra,
        }


class GoldCheck:
    """Gold verdicts of the sampled held-out completions, beside the training verifier's."""

    def __init__(self, gold_fn: RewardFunction):
        self.gold_fn = gold_fn
        self.counts: list[tuple[int, int]] = []
        self.hacked = self.judged = 0

    def add(self, items: list[tuple[Query, str]], scored: list[ScoredCompletion], n: int) -> None:
        from rlvr.meters.hacking import hacking_counts

        gold = self.gold_fn.score_batch(items)
        for q in range(len(items) // n):
            judged = [s for s in gold[q * n : (q + 1) * n] if s.reward is not None]
            if judged:
                self.counts.append((len(judged), sum(s.correct for s in judged)))
        hacked, _, judged_pairs = hacking_counts(scored, gold)
        self.hacked += hacked
        self.judged += judged_pairs

    def pass_at_1(self) -> float:
        return mean_pass_at_k(self.counts, 1) if self.counts else float("nan")

    def hacking_rate(self) -> float:
        return self.hacked / self.judged if self.judged else float("nan")


def _correct_counts(
    model: Runnable,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    reward_fn: RewardFunction,
    *,
    n: int,
    chunk: int,
    gold: GoldCheck | None = None,
    tool_use: list[bool] | None = None,
    draw_seed: int | None = None,
    **sampling: object,
) -> tuple[list[tuple[int, int]], int]:
    """Per query (judged samples, correct ones), and the unscorable count; `tool_use`, if given,
    collects whether each sample ran a tool call."""
    counts, unscorable = [], 0
    for start in range(0, len(queries), chunk):
        part = queries[start : start + chunk]
        batch = sample_completions(model, tokenizer, part, group_size=n, draw_seed=draw_seed, **sampling)
        if tool_use is not None and batch.turns is not None:
            tool_use += [bool(calls_run(turns)) for turns in batch.turns]
        items = [(batch.query_of(i), t) for i, t in enumerate(batch.texts)]
        scored = reward_fn.score_batch(items)
        if gold is not None:
            gold.add(items, scored, n)
        for q in range(len(part)):
            group = scored[q * n : (q + 1) * n]
            judged = [s for s in group if s.reward is not None]
            unscorable += len(group) - len(judged)
            if judged:
                counts.append((len(judged), sum(s.correct for s in judged)))
    return counts, unscorable


def evaluate_heldout(
    model: Runnable,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    reward_fn: RewardFunction,
    *,
    n: int,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    chunk_completions: int = 512,
    gold_fn: RewardFunction | None = None,
    prompt_format: PromptFormat = PromptFormat(),
    tools: ToolUse | None = None,
    ks: tuple[int, ...] = (),
    draw_seed: int | None = None,
) -> HeldoutResult:
    """``gold_fn``: the gold reward behind a weakened ``reward_fn``; its pass@1 and the hacking rate
    come back with the result (None: ``reward_fn`` is gold, so the two pass@1 are one number).
    ``tools`` (rollout.tools): samples are tool rollouts, and the share that called the tool comes back.
    ``ks`` (train.eval_ks): pass@k from the same samples, over the queries with at least k scorable ones.
    ``draw_seed``: paired draws (rollout/draws.py): every evaluation with the same seed draws the same
    random numbers for the same query and sample, so a model that did not change scores the same
    (None: torch's generator, as a base's warm-up reports do)."""
    gold = GoldCheck(gold_fn) if gold_fn is not None else None
    gold_g = GoldCheck(gold_fn) if gold_fn is not None else None
    tool_use: list[bool] = []
    counts = functools.partial(
        _correct_counts,
        model,
        tokenizer,
        queries,
        reward_fn,
        max_new_tokens=max_new_tokens,
        prompt_format=prompt_format,
        tools=tools,
    )
    chunk = max(1, chunk_completions // n)
    sampled, bad_s = counts(
        n=n, chunk=chunk, gold=gold, temperature=temperature, top_p=top_p, tool_use=tool_use, draw_seed=draw_seed
    )
    greedy, bad_g = counts(n=1, chunk=chunk_completions, gold=gold_g, greedy=True)
    pass_at_1 = mean_pass_at_k(sampled, 1) if sampled else float("nan")
    greedy_share = sum(c for _, c in greedy) / max(len(greedy), 1)
    return HeldoutResult(
        pass_at_1=pass_at_1,
        greedy=greedy_share,
        gold_greedy=gold_g.pass_at_1() if gold_g is not None else greedy_share,
        n=n,
        num_queries=len(queries),
        unscorable=bad_s + bad_g,
        gold_pass_at_1=gold.pass_at_1() if gold is not None else pass_at_1,
        hacking_rate=gold.hacking_rate() if gold is not None else 0.0,
        tool_use_rate=sum(tool_use) / len(tool_use) if tools is not None and tool_use else None,
        pass_at_k=_pass_at_ks(sampled, ks),
    )


def _pass_at_ks(counts: list[tuple[int, int]], ks: tuple[int, ...]) -> dict[int, float]:
    """pass@k for each k, as `rlvr eval` computes it (eval/curves.py: the mean over the queries with
    at least k scorable samples); NaN where no query has k."""
    if not ks:
        return {}
    means = curves([QueryCounts(judged, correct, None) for judged, correct in counts], list(ks))["pass@k"]
    return {k: float("nan") if mean is None else mean for k, mean in zip(ks, means)}
