"""pass@k and CoT-pass@k curves over a list of k, and where two models' curves cross.

The crossing answers "does RLVR teach new capabilities or only compress search?" (Yue et al. 2025,
"Does Reinforcement Learning Really Incentivize Reasoning Capacity in LLMs Beyond the Base
Model?"): a trained model that leads at k = 1 but is overtaken by its base at large k has made
the base's successes more likely without adding problems the base could not already solve.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr.errors import UserError
from rlvr.eval.passk import mean_pass_at_k


class KTooLargeError(UserError):
    """A k larger than the samples a query has: pass@k cannot be estimated from n < k samples."""


@dataclass(frozen=True)
class QueryCounts:
    """One query's samples: how many were scored, how many answered right, how many also reasoned right."""

    n: int
    correct: int
    cot_correct: int | None
    """Samples with a right answer *and* right reasoning; None when the task has no reasoning checker."""


def pass_at_k_curve(counts: list[tuple[int, int]], ks: list[int]) -> list[float]:
    """Mean pass@k over queries for each k; every k must be <= every query's n."""
    if not counts:
        raise ValueError("pass@k over no queries is undefined")
    smallest_n = min(n for n, _ in counts)
    too_large = [k for k in ks if k > smallest_n]
    if too_large:
        raise KTooLargeError(
            f"k={too_large[0]} exceeds n={smallest_n} samples per query; use k <= n or sample more (--n)"
        )
    return [mean_pass_at_k(counts, k) for k in ks]


def curves(per_query: list[QueryCounts], ks: list[int]) -> dict[str, list[float] | None]:
    """{"pass@k": [...], "cot_pass@k": [...] or None when any query has no reasoning verdict}."""
    answer = pass_at_k_curve([(q.n, q.correct) for q in per_query], ks)
    if any(q.cot_correct is None for q in per_query):
        return {"pass@k": answer, "cot_pass@k": None}
    cot = pass_at_k_curve([(q.n, q.cot_correct) for q in per_query], ks)  # type: ignore[misc]
    return {"pass@k": answer, "cot_pass@k": cot}


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
