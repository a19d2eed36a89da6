"""pass@k and CoT-pass@k curves over a list of k, and where two models' curves cross.

The crossing answers "does RLVR teach new capabilities or only compress search?" (Yue et al. 2025,
"Does Reinforcement Learning Really Incentivize Reasoning Capacity in LLMs Beyond the Base
Model?"): a trained model that leads at k = 1 but is overtaken by its base at large k has made
the base's successes more likely without adding problems the base could not already solve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlvr.eval.passk import pass_at_k
from rlvr.eval.stats import bootstrap_ci, paired_bootstrap_ci

CURVES = ("pass@k", "cot_pass@k")
"""The two curves of a report: right answers, and right answers with right reasoning."""


@dataclass(frozen=True)
class QueryCounts:
    """One query's samples: how many were scored, how many answered right, how many also reasoned right."""

    n: int
    """Samples the verifier could score (0 when it could score none); the others are left out."""
    correct: int
    cot_correct: int | None
    """Samples with a right answer *and* right reasoning; None when the task has no reasoning checker."""
    query_id: str = ""


@dataclass(frozen=True)
class Bootstrap:
    """How intervals are drawn: a percentile bootstrap over queries."""

    resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"over": "queries", "resamples": self.resamples, "confidence": self.confidence, "seed": self.seed}


def query_pass_at_k(per_query: list[QueryCounts], k: int, curve: str = "pass@k") -> list[float | None]:
    """Each query's pass@k (or CoT-pass@k) estimate; None where it has fewer than k scorable samples
    (no estimate exists: such a query is listed by `too_few_scorable`, not counted as 0)."""
    return [
        None if q.n < k else pass_at_k(q.n, q.correct if curve == "pass@k" else q.cot_correct, k)  # type: ignore[arg-type]
        for q in per_query
    ]


def too_few_scorable(per_query: list[QueryCounts], ks: list[int]) -> list[list[str]]:
    """For each k, the ids of the queries with fewer than k scorable samples, left out of that k's mean."""
    return [[q.query_id for q in per_query if q.n < k] for k in ks]


def _has(per_query: list[QueryCounts], curve: str) -> bool:
    """CoT-pass@k exists only when every query has a reasoning verdict."""
    return curve == "pass@k" or all(q.cot_correct is not None for q in per_query)


def _mean(values: list[float | None]) -> float | None:
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else None


def curves(per_query: list[QueryCounts], ks: list[int]) -> dict[str, list[float | None] | None]:
    """{"pass@k": [...], "cot_pass@k": [...] or None when any query has no reasoning verdict}: for
    each k the mean over the queries with at least k scorable samples (None where none has)."""
    return {
        curve: [_mean(query_pass_at_k(per_query, k, curve)) for k in ks] if _has(per_query, curve) else None
        for curve in CURVES
    }


def intervals(per_query: list[QueryCounts], ks: list[int], bootstrap: Bootstrap) -> dict[str, Any]:
    """{"pass@k_ci": [[low, high] per k], "cot_pass@k_ci": ... or None}: percentile bootstrap
    intervals of each curve's mean over queries (None at a k no query reaches)."""

    def ci(values: list[float | None]) -> list[float] | None:
        found = bootstrap_ci(
            values, confidence=bootstrap.confidence, resamples=bootstrap.resamples, seed=bootstrap.seed
        )
        return None if found is None else list(found)

    return {
        f"{curve}_ci": [ci(query_pass_at_k(per_query, k, curve)) for k in ks] if _has(per_query, curve) else None
        for curve in CURVES
    }


def paired_difference(
    model: list[QueryCounts], base: list[QueryCounts], ks: list[int], bootstrap: Bootstrap
) -> dict[str, Any]:
    """model − base at each k for both curves, with paired bootstrap intervals: the same resampled
    queries for both models. The two lists hold the same queries in the same order."""
    if [q.query_id for q in model] != [q.query_id for q in base]:
        raise ValueError("a paired difference needs both models' counts over the same queries, in order")
    found: dict[str, Any] = {}
    for curve in CURVES:
        if not (_has(model, curve) and _has(base, curve)):
            found |= {curve: None, f"{curve}_ci": None}
            continue
        pairs = [(query_pass_at_k(model, k, curve), query_pass_at_k(base, k, curve)) for k in ks]
        means = [(_mean(m), _mean(b)) for m, b in pairs]
        found[curve] = [None if m is None or b is None else m - b for m, b in means]
        found[f"{curve}_ci"] = [
            _listed(
                paired_bootstrap_ci(
                    m, b, confidence=bootstrap.confidence, resamples=bootstrap.resamples, seed=bootstrap.seed
                )
            )  # fmt: skip
            for m, b in pairs
        ]
    return found


def _listed(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else list(interval)


def crossing_k(ks: list[int], base: list[float], trained: list[float]) -> int | None:
    """The smallest k at which the base curve meets or exceeds the trained one after having been
    below it at a smaller k; None when that never happens (including when base never trails)."""
    base_trailed = False
    for k, b, t in sorted(zip(ks, base, trained)):
        if b < t:
            base_trailed = True
        elif base_trailed:
            return k
    return None


SUPPORT_CLASSES = ("preserved", "expanded", "shrunk", "never")
"""Per query, base against trained at one k (Wu et al. 2025, "The Invisible Leash"): solved by both,
by the trained model alone, by the base alone, by neither."""


def support_class(base_first: int | None, trained_first: int | None, k: int) -> str:
    """Which of SUPPORT_CLASSES a query falls in at k, from the index of each model's first success
    among its draws (None: none in the draws made; each model drew at least k)."""
    base, trained = base_first is not None and base_first < k, trained_first is not None and trained_first < k
    if base:
        return "preserved" if trained else "shrunk"
    return "expanded" if trained else "never"


def support_counts(base_first: list[int | None], trained_first: list[int | None], k: int) -> dict[str, int]:
    """How many queries fall in each support class at k (queries in the same order for both models)."""
    if len(base_first) != len(trained_first):
        raise ValueError(f"support: {len(base_first)} base queries against {len(trained_first)} trained ones")
    classes = [support_class(b, t, k) for b, t in zip(base_first, trained_first)]
    return {name: classes.count(name) for name in SUPPORT_CLASSES}


def support_summary(per_seed: list[dict[str, int]]) -> tuple[dict[str, int], int]:
    """Support classes (`support_counts` of each seed) summed over seeds, and on how many seeds more
    queries were expanded than shrunk."""
    total = {name: sum(counts[name] for counts in per_seed) for name in SUPPORT_CLASSES}
    return total, sum(counts["expanded"] > counts["shrunk"] for counts in per_seed)
