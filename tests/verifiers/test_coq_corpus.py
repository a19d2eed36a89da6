"""Honest Coq proofs written outside this project pass the coq verifier; each with a wrong control.

The corpus (tests/verifiers/corpus/coq_honest.jsonl, built by build_coq_honest.py next to it) holds
lemmas of Coq 8.16.1's standard library and test suite and of the Coq'Art textbook's exercise
solutions, each with its source, its preamble and the proof as its authors wrote it; coqc accepted
every one. At least 99% must pass, every refusal must be one of the documented rules (a
vernacular command inside the proof), and every control (the proof without its last tactic, or
``idtac.`` for a one-tactic proof) must fail.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.coq import CoqVerifier
from rlvr.verifiers.coq_sentences import sentence_kind, split

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed (setup.sh installs it)"),
]

CORPUS = Path(__file__).with_name("corpus") / "coq_honest.jsonl"
ITEMS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
DOCUMENTED_REFUSALS = ("is a command",)
"""What docs/verifiers.md (coq) says is refused in an honest-looking proof: a vernacular command
inside it (``Time``, ``Unshelve``, ``Show``, a capitalised tactic the preamble does not define, ...)."""


def control(proof: str) -> str:
    """The proof without its last tactic sentence, or ``idtac.`` if that leaves no tactic."""
    sentences = split(proof)
    tactics = [s for s in sentences if sentence_kind(s.tokens) == "tactic"]
    if len(tactics) < 2:
        return "idtac."
    last = proof.encode()
    return (last[: tactics[-1].start] + last[tactics[-1].end :]).decode()


def check_half(items: list[dict]) -> list[tuple[VerifierResult, VerifierResult]]:
    """(honest, control) results of ``items`` on one verifier: one coqtop per core."""
    verifier = CoqVerifier()
    try:
        results = []
        for item in items:
            verifier_row = {key: item[key] for key in ("statement", "preamble", "axioms")}
            query = Query(item["id"], "", {"type": "coq", **verifier_row})
            honest = verifier.verify(query, f"```coq\n{item['proof']}\n```")
            results.append((honest, verifier.verify(query, f"```coq\n{control(item['proof'])}\n```")))
        return results
    finally:
        verifier.close()


def test_the_corpus_is_large_and_records_its_sources():
    assert len(ITEMS) >= 130 and len({item["id"] for item in ITEMS}) == len(ITEMS)
    repos = {item["source"]["repo"] for item in ITEMS}
    assert repos == {"coq/coq", "coq-community/coq-art"}
    paths = {item["source"]["path"].split("/")[0] for item in ITEMS}
    assert {"theories", "test-suite"} <= paths  # standard library, test suite and the textbook


def test_honest_proofs_pass_and_every_control_fails():
    middle = len(ITEMS) // 2
    with ThreadPoolExecutor(2) as pool:
        halves = list(pool.map(check_half, [ITEMS[:middle], ITEMS[middle:]]))
    results = [pair for half in halves for pair in half]
    refused = {
        item["id"]: (honest.verdict.value, honest.error_class.value, honest.detail)
        for item, (honest, _) in zip(ITEMS, results)
        if honest.verdict is not Verdict.PASS
    }
    assert len(refused) <= len(ITEMS) // 100, refused  # at least 99% pass
    for verdict, error_class, detail in refused.values():
        assert (verdict, error_class) == ("fail", ErrorClass.PROTOCOL_VIOLATION.value), detail
        assert any(rule in detail for rule in DOCUMENTED_REFUSALS), detail
    passed_controls = [item["id"] for item, (_, wrong) in zip(ITEMS, results) if wrong.verdict is not Verdict.FAIL]
    assert not passed_controls
