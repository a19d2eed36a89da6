"""`rlvr eval`'s per-sample records: every number in eval.json recomputes from samples.jsonl, samples
the verifier cannot score are counted in the open, and the lm-eval-harness export holds them too."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from rlvr.config import TaskConfig
from rlvr.eval.passk import pass_at_k
from rlvr.eval.stats import bootstrap_ci, paired_bootstrap_ci
from rlvr.studies import passk_eval
from rlvr.studies.passk_eval import evaluate_passk, format_eval_table
from rlvr.types import ErrorClass, Verdict, VerifierResult
from rlvr.verifiers.registry import get_verifier


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _recount(samples: list[dict], label: str, query_ids: list[str]) -> list[tuple[int, int, int | None]]:
    """(scorable n, right answers, right answers with right reasoning) per query, from the records alone."""
    by_query = defaultdict(list)
    for s in samples:
        if s["model"] == label:
            by_query[s["query_id"]].append(s)
    counts = []
    for query_id in query_ids:
        scorable = [s for s in by_query[query_id] if s["verdict"] not in ("error", "unavailable", "unknown")]
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


def _check_recomputes(out: Path, report: dict) -> None:
    """Every pass@k and CoT-pass@k value, interval and difference in eval.json, from samples.jsonl."""
    samples = _lines(out / "samples.jsonl")
    assert len(samples) == report["n"] * report["num_queries"] * len(report["models"])
    boot = report["bootstrap"]
    assert boot == {"over": "queries", "resamples": 1000, "confidence": 0.95, "seed": report["seed"]}
    per_k: dict[str, dict[str, list]] = {}
    for label, result in report["models"].items():
        counts = _recount(samples, label, result["query_ids"])
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
    difference = report.get("difference")
    for curve, by_label in per_k.items():
        if difference is None or "base" not in by_label:
            continue
        pairs = list(zip(by_label["model"], by_label["base"]))
        assert difference[curve] == pytest.approx([_mean(m) - _mean(b) for m, b in pairs])
        expected = [list(paired_bootstrap_ci(m, b, resamples=1000, seed=boot["seed"])) for m, b in pairs]
        assert difference[f"{curve}_ci"] == expected


def _check_lm_eval_export(out: Path, report: dict) -> None:
    rows = _lines(out / "samples_lm_eval.jsonl")
    assert len(rows) == report["num_queries"] * len(report["models"])
    for row in rows:
        result = report["models"][row["model"]]
        n, correct, _ = result["per_query"][row["doc_id"]]
        assert row["doc"]["query_id"] == result["query_ids"][row["doc_id"]]
        assert {"doc_id", "doc", "target", "resps", "filtered_resps", "pass@1"} <= set(row)
        assert len(row["resps"]) == 1 and len(row["resps"][0]) == report["n"] and len(row["filtered_resps"]) == n
        assert row["pass@1"] == (None if n == 0 else pytest.approx(correct / n))


def test_arith_numbers_recompute_from_the_samples(tmp_path: Path) -> None:
    out = tmp_path / "ev"
    report = evaluate_passk("tiny-arith", base="tiny-arith", task=TaskConfig(), n=4, ks=[1, 2, 4], num_queries=5,
                            temperature=1.0, seed=1, out=out, progress=False, max_new_tokens=32)  # fmt: skip
    assert report == json.loads((out / "eval.json").read_text())
    assert all(r["reasoning_verdict"] in ("pass", "fail") for r in _lines(out / "samples.jsonl"))
    _check_recomputes(out, report)
    _check_lm_eval_export(out, report)
    # the same model drawn with the same seed: a difference of exactly 0, interval included
    assert report["difference"]["pass@k"] == [0.0] * 3 and report["difference"]["pass@k_ci"] == [[0.0, 0.0]] * 3
    table = format_eval_table(report)
    assert "model-base pass@k" in table and "+0.0 [+0.0, +0.0]" in table and "1000 resamples" in table
    first = report["models"]["model"]
    low, high = first["pass@k_ci"][0]
    assert f"{100 * first['pass@k'][0]:.1f}% [{100 * low:.1f}, {100 * high:.1f}]" in table


def test_a_task_without_a_reasoning_checker_recomputes_too(tmp_path: Path) -> None:
    out = tmp_path / "ev"
    report = evaluate_passk("tiny-arith", base=None, task=TaskConfig(name="funcsynth", data_seed=1), n=2, ks=[1, 2],
                            num_queries=3, temperature=1.0, seed=0, out=out, progress=False, max_new_tokens=32)  # fmt: skip
    assert report["models"]["model"]["cot_pass@k"] is None and "difference" not in report
    assert all(r["reasoning_verdict"] is None for r in _lines(out / "samples.jsonl"))
    _check_recomputes(out, report)
    _check_lm_eval_export(out, report)
    assert "n/a" in format_eval_table(report)


def test_unscorable_samples_are_left_out_and_their_queries_listed(tmp_path: Path, monkeypatch) -> None:
    """The verifier cannot judge any sample of the first query, nor the first sample of the second:
    the first is listed at every k, the second at k=4 (3 scorable samples), and both are named in
    the table; the means are over the queries that have k scorable samples."""
    real = get_verifier("math")
    seen: dict[str, int] = defaultdict(int)

    class Flaky:
        def verify_batch(self, items):
            results = real.verify_batch(items)
            for i, (query, _) in enumerate(items):
                seen[query.id] += 1
                if query.id == order[0] or (query.id == order[1] and seen[query.id] == 1):
                    results[i] = VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, "the pool died")
            return results

    from rlvr.tasks.registry import load_heldout

    order = [q.id for q in load_heldout(TaskConfig(num_eval=4))[:4]]
    reward = passk_eval.RewardFunction
    monkeypatch.setattr(
        passk_eval,
        "RewardFunction",
        lambda weights: reward(weights, verifier_for=lambda name: Flaky() if name == "math" else get_verifier(name)),
    )
    out = tmp_path / "ev"
    report = evaluate_passk("tiny-arith", base=None, task=TaskConfig(), n=4, ks=[1, 4], num_queries=4,
                            temperature=1.0, seed=0, out=out, progress=False, max_new_tokens=32)  # fmt: skip
    result = report["models"]["model"]
    assert result["unscorable"] == 5 and result["query_ids"] == order
    assert [row[0] for row in result["per_query"]] == [0, 3, 4, 4]
    assert result["too_few_scorable"] == [[order[0]], order[:2]]
    _check_recomputes(out, report)
    _check_lm_eval_export(out, report)
    table = format_eval_table(report)
    assert (
        f"k=1: queries with fewer than 1 scorable samples, left out of that k's mean (of 4): model 1: {order[0]}"
        in table
    )
    assert "k=4: queries with fewer than 4 scorable samples" in table and f"model 2: {order[0]}, {order[1]}" in table
