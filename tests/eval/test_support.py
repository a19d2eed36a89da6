"""Support at large k (`rlvr eval --support-k`, studies/passk_eval.py): drawing on in rounds for the
queries not solved yet finds what one long draw finds, and a base evaluated alone can stand in for
the base of every evaluation made with its settings, and of no other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import TaskConfig
from rlvr.errors import UserError
from rlvr.studies.passk_eval import evaluate_passk, first_hits

DEEP = TaskConfig(name="arith", operands=5, max_value=999)
"""Held-out 5-operand chains: tiny-arith-deep answers some right in a few dozen draws, chains rarely."""


def _evaluate(out: Path, model: str = "tiny-arith-deep", **settings) -> dict:
    kwargs = dict(base=None, task=DEEP, n=4, ks=[1, 4], num_queries=5, temperature=1.0, seed=3, out=out,
                  progress=False, max_new_tokens=80) | settings  # fmt: skip
    return evaluate_passk(model, **kwargs)


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_drawing_on_finds_the_first_successes_one_long_draw_finds(tmp_path: Path) -> None:
    report = _evaluate(tmp_path / "support", support_k=40, seed=5)
    long = _evaluate(tmp_path / "long", n=40, ks=[1], seed=5)
    records = _records(tmp_path / "long")
    ids = long["models"]["model"]["query_ids"]
    expected = [first_hits([r for r in records if r["query_id"] == qid]) for qid in ids]
    support = report["models"]["model"]["support"]
    assert [[a, c] for a, c in zip(support["first_correct"], support["first_cot"])] == expected
    assert any(h is not None and h >= 4 for hit in expected for h in hit)  # found past the first n = 4 draws
    for hit, drawn in zip(expected, support["drawn"]):
        assert drawn == 40 if None in hit else drawn <= 40  # unsolved: every draw; solved: stopped early
    assert len(_records(tmp_path / "support")) == 5 * 4  # the draws past n are counted, not recorded


def test_a_base_evaluated_alone_stands_in_for_the_base_of_a_like_evaluation(tmp_path: Path) -> None:
    alone = _evaluate(tmp_path / "base", support_k=12)
    assert alone["models"]["model"]["path"] == "tiny-arith-deep" and "support" not in alone
    settings = dict(base="tiny-arith-deep", support_k=12)
    reused = _evaluate(tmp_path / "reused", "tiny-arith", base_report=tmp_path / "base" / "eval.json", **settings)
    fresh = _evaluate(tmp_path / "fresh", "tiny-arith", **settings)
    without_time = [{k: v for k, v in r["models"]["base"].items() if k != "wall_s"} for r in (reused, fresh)]
    assert without_time[0] == without_time[1]
    assert reused["support"] == fresh["support"] and reused["difference"] == fresh["difference"]
    assert sum(reused["support"]["pass@k"].values()) == 5
    # an evaluation that stops at n reuses it too (its first n draws are the same); one to another k does not
    short = _evaluate(
        tmp_path / "short", "tiny-arith", base="tiny-arith-deep", base_report=tmp_path / "base" / "eval.json"
    )
    assert short["models"]["base"]["per_query"] == fresh["models"]["base"]["per_query"] and "support" not in short
    with pytest.raises(UserError, match="other settings: support_k"):
        _evaluate(tmp_path / "z", "tiny-arith", base="tiny-arith-deep", support_k=16,
                  base_report=tmp_path / "base" / "eval.json")  # fmt: skip
    with pytest.raises(UserError, match="other settings: seed"):
        _evaluate(tmp_path / "x", "tiny-arith", seed=4, base_report=tmp_path / "base" / "eval.json", **settings)
    with pytest.raises(UserError, match=r"model \(tiny-arith-deep is not tiny-arith\)"):
        _evaluate(tmp_path / "y", "tiny-arith-deep", base="tiny-arith", support_k=12,
                  base_report=tmp_path / "base" / "eval.json")  # fmt: skip
