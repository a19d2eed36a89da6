"""Honest answers written outside this project pass; their wrong controls fail (issue 27, item 7).

The corpus (tests/verifiers/corpus/math_*.jsonl) is the (gold, answer) pairs that the test suites of
Math-Verify, Hendrycks' MATH and Qwen2.5-Math's grader mark as equal or unequal, each with its
source; tests/verifiers/corpus/build_math_corpus.py rebuilds it from those projects and says how a
worked solution became an answer. Everything runs through the real verifier and its math-verify
workers, one batch per file (about 10 s on 2 busy cores for the whole module).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.math import MathVerifier

CORPUS = Path(__file__).parent / "corpus"
SOURCES = ("huggingface/Math-Verify@", "hendrycks/math@", "QwenLM/Qwen2.5-Math@")
PASS_RATE = 0.99
"""Issue 27: honest work passes at least 99% of the time, every refusal traceable to a rule."""


def pairs(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


HONEST, WRONG, SET_ASIDE = pairs("math_honest"), pairs("math_wrong"), pairs("math_set_aside")


@pytest.fixture(scope="module")
def verifier() -> Iterator[MathVerifier]:
    """10 s a check: these tests pin verdicts, not speed, on 2 shared cores."""
    with MathVerifier(kill_after_s=10.0) as shared:
        yield shared


def judged(verifier: MathVerifier, rows: list[dict]) -> list[VerifierResult]:
    items = []
    for index, row in enumerate(rows):
        criteria = {"type": "math", "answer": row["gold"]}
        if "tolerance" in row:
            criteria["tolerance"] = row["tolerance"]
        items.append((Query(f"corpus-{index}", "", criteria), f"<answer>{row['answer']}</answer>"))
    return verifier.verify_batch(items)


def shown(row: dict, result: VerifierResult) -> str:
    return f"{row['source']}: {row['gold']!r} vs {row['answer']!r} -> {result.verdict.value}: {result.detail[:120]}"


def test_the_corpus_is_large_and_every_pair_names_its_source() -> None:
    assert len(HONEST) >= 280
    for row in HONEST + WRONG + SET_ASIDE:
        assert row["source"].startswith(SOURCES), row["source"]
    by_source = {source: sum(row["source"].startswith(source) for row in HONEST) for source in SOURCES}
    assert all(by_source.values()), by_source  # all three projects contribute
    assert len({(row["gold"], row["answer"]) for row in HONEST}) == len(HONEST)  # no pair counted twice


def test_honest_answers_from_other_graders_pass(verifier: MathVerifier) -> None:
    results = judged(verifier, HONEST)
    refused = [
        shown(row, result) for row, result in zip(HONEST, results, strict=True) if result.verdict is not Verdict.PASS
    ]
    assert 1 - len(refused) / len(HONEST) >= PASS_RATE, "\n".join(refused)
    assert all(result.verdict is Verdict.FAIL for result in results if result.verdict is not Verdict.PASS), refused


def test_pairs_set_aside_are_judged_by_the_rule_named_beside_them(verifier: MathVerifier) -> None:
    """Marked equal but refused on purpose (a chain through 7, a decimal comma, ≈), or marked unequal
    but equal by a documented reading (a bare list is a set): each as its ``rule`` says."""
    results = judged(verifier, SET_ASIDE)
    wrong = []
    for row, result in zip(SET_ASIDE, results, strict=True):
        expected = (
            (Verdict.PASS, ErrorClass.NONE) if row["expect"] == "pass" else (Verdict.FAIL, ErrorClass(row["expect"]))
        )
        if (result.verdict, result.error_class) != expected:
            wrong.append(f"{shown(row, result)} (rule: {row['rule']})")
    assert not wrong, "\n".join(wrong)


def test_wrong_controls_fail(verifier: MathVerifier) -> None:
    results = judged(verifier, WRONG)
    passed = [
        shown(row, result) for row, result in zip(WRONG, results, strict=True) if result.verdict is not Verdict.FAIL
    ]
    assert not passed, "\n".join(passed)


def perturbed(gold: str) -> str:
    """The gold with every integer in it one larger: "\\frac{1}{2}" -> "\\frac{2}{3}", "(6,31,-1)" ->
    "(7,32,-2)". Every value changes, so no honest answer to the gold is an answer to this."""
    return re.sub(r"[0-9]+", lambda match: str(int(match.group()) + 1), gold)


def test_no_honest_answer_passes_against_a_perturbed_gold(verifier: MathVerifier) -> None:
    """The honest pairs again, each gold's numbers moved by one: a verifier that passed the honest
    pairs by passing nearly anything would pass these too."""
    rows = [{**row, "gold": perturbed(row["gold"])} for row in HONEST if re.search(r"[0-9]", row["gold"])]
    assert len(rows) >= 250
    results = judged(verifier, rows)
    passed = [shown(row, result) for row, result in zip(rows, results, strict=True) if result.verdict is Verdict.PASS]
    assert not passed, "\n".join(passed)  # a gold math-verify cannot read is the row's error, not a pass
