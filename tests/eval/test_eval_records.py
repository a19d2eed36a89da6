"""`rlvr eval`'s per-sample records: every number in eval.json recomputes from samples.jsonl, samples
the verifier cannot score are counted in the open, and the lm-eval-harness export holds them too."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from rlvr.config import TaskConfig
from rlvr.studies import passk_eval
from rlvr.studies.eval_table import format_eval_table
from rlvr.studies.passk_eval import evaluate_passk
from rlvr.types import ErrorClass, Verdict, VerifierResult
from rlvr.verifiers.registry import get_verifier

from .records import check_lm_eval_export, check_recomputes, lines


def test_arith_numbers_recompute_from_the_samples(tmp_path: Path) -> None:
    out = tmp_path / "ev"
    report = evaluate_passk("tiny-arith", base="tiny-arith", task=TaskConfig(), n=4, ks=[1, 2, 4], num_queries=5,
                            temperature=1.0, seed=1, out=out, progress=False, max_new_tokens=32)  # fmt: skip
    assert report == json.loads((out / "eval.json").read_text())
    assert all(r["reasoning_verdict"] in ("pass", "fail") for r in lines(out / "samples.jsonl"))
    check_recomputes(out, report)
    check_lm_eval_export(out, report)
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
    assert all(r["reasoning_verdict"] is None for r in lines(out / "samples.jsonl"))
    check_recomputes(out, report)
    check_lm_eval_export(out, report)
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
    check_recomputes(out, report)
    check_lm_eval_export(out, report)
    table = format_eval_table(report)
    assert (
        f"k=1: queries with fewer than 1 scorable samples, left out of that k's mean (of 4): model 1: {order[0]}"
        in table
    )
    assert "k=4: queries with fewer than 4 scorable samples" in table and f"model 2: {order[0]}, {order[1]}" in table
