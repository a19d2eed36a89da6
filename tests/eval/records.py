"""Recomputing `rlvr eval`'s numbers from its records alone: every count, pass@k and CoT-pass@k
value, interval and paired difference in eval.json, from samples.jsonl, and the lm-eval-harness
export's rows from the report. Shared by the per-task tests; nothing here samples."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from rlvr.eval.passk import pass_at_k
from rlvr.eval.stats import bootstrap_ci, paired_bootstrap_ci

UNSCORABLE = ("error", "unavailable", "unknown")
"""Verdicts the verifier could not judge (rlvr.types.Verdict): kept out of a query's n."""


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def recount(samples: list[dict], label: str, query_ids: list[str]) -> list[tuple[int, int, int | None]]:
    """(scorable n, right answers, right answers with right reasoning) per query, from the records alone."""
    by_query = defaultdict(list)
    for s in samples:
        if s["model"] == label:
            by_query[s["query_id"]].append(s)
    counts = []
    for query_id in query_ids:
        scorable = [s for s in by_query[query_id] if s["verdict"] not in UNSCORABLE]
        right = [s for s in scorable if s["verdict"] == "pass"]
        no_checker = any(s["reasoning_verdict"] is None for s in by_query[query_id])
        cot = None if no_checker else sum(s["reasoning_verdict"] == "pass" for s in right)
        counts.append((len(scorable), len(right), cot))
    return counts


def _per_query(counts, k: int, column: int) -> list[float | None]:
    return [None if row[0] < k else pass_at_k(row[0], row[column], k) for row in counts]


def _mean(values: list[float | None]) -> float | None:
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else None


def check_recomputes(out: Path, report: dict) -> None:
    """Every pass@k and CoT-pass@k value, interval and difference in eval.json, from samples.jsonl."""
    samples = lines(out / "samples.jsonl")
    assert len(samples) == report["n"] * report["num_queries"] * len(report["models"])
    boot = report["bootstrap"]
    assert boot == {"over": "queries", "resamples": 1000, "confidence": 0.95, "seed": report["seed"]}
    per_k: dict[str, dict[str, list]] = {}
    for label, result in report["models"].items():
        counts = recount(samples, label, result["query_ids"])
        assert [list(c) for c in counts] == result["per_query"]
        assert len(counts) == report["num_queries"]  # every query, even one with nothing scorable
        for curve, column in (("pass@k", 1), ("cot_pass@k", 2)):
            if result[curve] is None:
                assert all(c[2] is None for c in counts) and result[f"{curve}_ci"] is None
                continue
            values = [_per_query(counts, k, column) for k in report["k"]]
            per_k.setdefault(curve, {})[label] = values
            assert result[curve] == pytest.approx([_mean(v) for v in values])
            assert result[f"{curve}_ci"] == [list(bootstrap_ci(v, resamples=1000, seed=boot["seed"])) for v in values]
        short = [[q for q, c in zip(result["query_ids"], counts) if c[0] < k] for k in report["k"]]
        assert result["too_few_scorable"] == short
        assert result["unscorable"] == sum(s["model"] == label and s["verdict"] in UNSCORABLE for s in samples)
    difference = report.get("difference")
    for curve, by_label in per_k.items():
        if difference is None or "base" not in by_label:
            continue
        pairs = list(zip(by_label["model"], by_label["base"]))
        assert difference[curve] == pytest.approx([_mean(m) - _mean(b) for m, b in pairs])
        expected = [list(paired_bootstrap_ci(m, b, resamples=1000, seed=boot["seed"])) for m, b in pairs]
        assert difference[f"{curve}_ci"] == expected


def check_lm_eval_export(out: Path, report: dict) -> None:
    rows = lines(out / "samples_lm_eval.jsonl")
    assert len(rows) == report["num_queries"] * len(report["models"])
    for row in rows:
        result = report["models"][row["model"]]
        n, correct, _ = result["per_query"][row["doc_id"]]
        assert row["doc"]["query_id"] == result["query_ids"][row["doc_id"]]
        assert {"doc_id", "doc", "target", "resps", "filtered_resps", "pass@1"} <= set(row)
        assert len(row["resps"]) == 1 and len(row["resps"][0]) == report["n"] and len(row["filtered_resps"]) == n
        assert row["pass@1"] == (None if n == 0 else pytest.approx(correct / n))
