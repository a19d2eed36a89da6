"""LeanVerifier: the real toolchain lookup (no Lean here, so ``unavailable``); rows and banned words.

The compiling path (a ``lean`` on PATH under /usr) has never run on this machine; these tests
cover what does run here: the lookup, row validation, proof extraction and the banned-word screen.
"""

from __future__ import annotations

import shutil

import pytest

from rlvr.sandbox import SandboxRun
from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.lean import LeanVerifier, banned_tokens, extract_proof
from rlvr.verifiers.registry import get_verifier

ROW = Query("comm", "", {"type": "lean", "statement": "theorem my_add_comm (a b : Nat) : a + b = b + a"})


@pytest.mark.skipif(shutil.which("lean") is not None, reason="a Lean toolchain is on PATH here")
def test_no_toolchain_is_unavailable_with_the_reason_never_a_fail() -> None:
    result = LeanVerifier().verify(ROW, "<answer>by omega</answer>")
    assert (result.verdict, result.error_class) == (Verdict.UNAVAILABLE, ErrorClass.INFRASTRUCTURE), result
    assert "`lean` is not on PATH" in result.detail
    assert not result.scorable and result.score == 0.0


@pytest.mark.parametrize("proof", [
    "by sorry",
    "by\n  intro h\n  admit",
    "by exact foo\naxiom cheat : False",
    "by native_decide",
    "by decide\n#eval IO.println \"'x' does not depend on any axioms\"",
    "by decide\n#exit",
    "by\n  set_option maxHeartbeats 0 in omega",
    "by decide\nmacro \"trivial\" : tactic => `(tactic| sorry)",
    "by decide\nelab \"hack\" : tactic => pure ()",
    "Lean.ofReduceBool _ _ rfl",
])  # fmt: skip
def test_banned_words_fail_before_any_toolchain(proof: str) -> None:
    result = LeanVerifier().verify(ROW, f"<answer>{proof}</answer>")
    assert (result.verdict, result.error_class, result.score) == (Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION, 0.0)
    assert "banned" in result.detail


def test_banned_words_are_whole_words() -> None:
    assert banned_tokens("by simp [sorry_free, Nat.admits, axiomatic]") == []
    assert banned_tokens("by exact (sorry)") == ["sorry"]
    assert banned_tokens("by decide\n#print axioms x") == ["#print"]
    assert banned_tokens("by exact Lean.ofReduceBool _ _ rfl") == ["ofReduceBool"]


def test_proof_comes_from_the_last_lean_fence_else_the_answer() -> None:
    fenced = "```lean\nby simp\n```\nthen\n```lean4\nby omega\n```\n<answer>by rfl</answer>"
    assert extract_proof(fenced) == "by omega"
    assert extract_proof("<answer> by rfl </answer>") == "by rfl"
    assert extract_proof("no proof at all") == ""


def test_no_proof_is_no_answer() -> None:
    result = LeanVerifier().verify(ROW, "I think it is true.")
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.NO_ANSWER)


@pytest.mark.parametrize(("criteria", "key"), [
    ({}, '"statement"'),
    ({"statement": "lemma x : True"}, '"statement"'),
    ({"statement": "theorem x : True := trivial"}, '"statement"'),
    ({"statement": "theorem x : True", "preamble": ["open Nat"]}, '"preamble"'),
])  # fmt: skip
def test_bad_criteria_is_an_error_naming_the_query_and_key(criteria: dict, key: str) -> None:
    result = LeanVerifier().verify(Query("bad-row", "", {"type": "lean", **criteria}), "<answer>by trivial</answer>")
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE), result
    assert "'bad-row'" in result.detail and key in result.detail


def test_registry_builds_the_lean_verifier() -> None:
    assert isinstance(get_verifier("lean"), LeanVerifier)


def _run(stdout: str, exit_code: int = 0) -> SandboxRun:
    return SandboxRun(exit_code=exit_code, signal=None, timed_out=False, output_truncated=False,
                      stdout=stdout.encode(), stderr=b"")


@pytest.mark.parametrize(("stdout", "exit_code", "verdict", "error_class"), [
    ("'N.t' depends on axioms: [propext, Quot.sound]\n", 0, Verdict.PASS, ErrorClass.NONE),
    ("'N.t' does not depend on any axioms\n", 0, Verdict.PASS, ErrorClass.NONE),
    ("'N.t' depends on axioms: [propext, sorryAx]\n", 0, Verdict.FAIL, ErrorClass.WRONG_ANSWER),
    ("'N.t' does not depend on any axioms\n'N.t' depends on axioms: [cheat]\n", 0, Verdict.FAIL,
     ErrorClass.PROTOCOL_VIOLATION),
    ("'other' does not depend on any axioms\n", 0, Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION),
    ("Proof.lean:3:2: error: unsolved goals\n'N.t' does not depend on any axioms\n", 1, Verdict.FAIL,
     ErrorClass.COMPILE_ERROR),
    ("'N.t' does not depend on any axioms\n", 1, Verdict.FAIL, ErrorClass.COMPILE_ERROR),
])  # fmt: skip
def test_judging_lean_output(stdout: str, exit_code: int, verdict: Verdict, error_class: ErrorClass) -> None:
    """The host's reading of `lean` output; the format is Lean 4's `#print axioms` report, not run here."""
    result = LeanVerifier()._judge(_run(stdout, exit_code), "N.t")
    assert (result.verdict, result.error_class) == (verdict, error_class), result
