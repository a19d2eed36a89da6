"""LeanVerifier: the real toolchain lookup (no Lean here, so ``unavailable``); rows and banned words.

The compiling path (a ``lean`` on PATH under /usr) has never run on this machine; these tests
cover what does run here: the lookup, row validation, proof extraction and the banned-word screen,
on every path a completion takes (``verify``, ``verify_batch``, ``rlvr verify``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.sandbox import SandboxRun
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.lean import LeanVerifier, banned_tokens, extract_proof
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.rows import verify_rows

ROW = Query("comm", "", {"type": "lean", "statement": "theorem my_add_comm (a b : Nat) : a + b = b + a"})


@pytest.mark.skipif(shutil.which("lean") is not None, reason="a Lean toolchain is on PATH here")
def test_no_toolchain_is_unavailable_with_the_reason_never_a_fail() -> None:
    result = LeanVerifier().verify(ROW, "<answer>by omega</answer>")
    assert (result.verdict, result.error_class) == (Verdict.UNAVAILABLE, ErrorClass.INFRASTRUCTURE), result
    assert "`lean` is not on PATH" in result.detail
    assert not result.scorable and result.score == 0.0


no_toolchain = pytest.mark.skipif(shutil.which("lean") is not None, reason="a Lean toolchain is on PATH here")

REFUSED = [
    "by sorry",
    "by\n  intro h\n  admit",
    "by stop\n  omega",  # `stop` is `repeat sorry`
    "by exact sorryAx _ false",
    "by exact lcProof",
    "by exact foo\naxiom cheat : False",
    "by omega\ntermination_by a\ndecreasing_by sorry",
    "by native_decide",
    "by decide +native",
    "by decide (config := { native := true })",
    "by bv_decide",
    "Lean.ofReduceBool _ _ rfl",
    "open Lean in ofReduceBool _ _ rfl",
    "by exact Lean.trustCompiler",
    "by\n  set_option maxHeartbeats 0 in omega",
    "by\n  set_option debug.skipKernelTC true in decide",
    "by decide\nimport Mathlib",
    "by decide\n#eval IO.println \"'x' does not depend on any axioms\"",
    "by decide\n#print axioms Nat.add_comm",
    "by decide\n#exit",
    "by decide\nmacro \"trivial\" : tactic => `(tactic| omega)",
    "by decide\nmacro_rules | `(tactic| omega) => `(tactic| decide)",
    "by decide\nelab \"hack\" : tactic => pure ()",
    "by decide\nelab_rules : tactic | `(tactic| omega) => pure ()",
    "by decide\nsyntax \"hack\" : tactic",
    "by decide\nnotation \"two\" => 2",
    "by decide\nopen Lean Elab Command in\nrun_cmd logInfo \"hi\"",
    "by exact (by_elab pure (Lean.mkConst ``True.intro))",
    "by decide\n@[command_elab Lean.Parser.Command.print] def fake : Lean.Elab.Command.CommandElab := fun _ => pure ()",
    "by decide\nattribute [command_elab Lean.Parser.Command.print] Lean.Elab.Command.elabEnd",
    "by decide\n@[implemented_by id] def g (n : Nat) : Nat := n + 1",
    "by decide\n@[extern \"c_fn\"] opaque h : Nat",
    "by decide\nunsafe def u : Nat := 0",
    "by decide\ninitialize pure ()",
    "by decide\nsimproc fake (Nat.add _ _) := fun _ => pure .continue",
]  # fmt: skip
"""Proofs the screen refuses: each names a way to prove by fiat, to trust the compiler over the
kernel, to switch a check off, or to run code that could fake the host's `#print axioms` report."""

HONEST = [
    "by omega",
    "fun a b => Nat.add_comm a b",
    "by simp [Nat.add_comm]",
    "by\n  induction a with\n  | zero => simp\n  | succ n ih => omega",
    "open Nat in by omega",
    "by exact Nat.add_comm a b  -- commutativity",
]  # fmt: skip


def _refused(result: VerifierResult) -> tuple:
    return result.verdict, result.error_class, result.score, "banned" in result.detail


@pytest.mark.parametrize("proof", REFUSED)
def test_refused_proof_fails_alike_in_verify_and_verify_batch(proof: str) -> None:
    completion = f"<answer>{proof}</answer>"
    single = LeanVerifier().verify(ROW, completion)
    batched = LeanVerifier().verify_batch([(ROW, "<answer>by omega</answer>"), (ROW, completion)])[1]
    expected = (Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION, 0.0, True)
    assert _refused(single) == expected, single
    assert _refused(batched) == expected, batched
    assert single.detail == batched.detail


@no_toolchain
def test_verify_batch_screens_every_item_and_leaves_only_screened_proofs_unavailable() -> None:
    bad_row = Query("bad-row", "", {"type": "lean", "statement": "lemma x : True"})
    items = [(ROW, f"<answer>{proof}</answer>") for proof in REFUSED + HONEST]
    items += [(ROW, "I think it is true."), (bad_row, "<answer>by trivial</answer>")]
    results = get_verifier("lean").verify_batch(items)  # the registry's instance, as the trainer gets it
    expected = (
        [(Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION)] * len(REFUSED)
        + [(Verdict.UNAVAILABLE, ErrorClass.INFRASTRUCTURE)] * len(HONEST)
        + [(Verdict.FAIL, ErrorClass.NO_ANSWER), (Verdict.ERROR, ErrorClass.BAD_CRITERIA)]
    )
    assert [(r.verdict, r.error_class) for r in results] == expected, results
    assert [r.detail for r in results] == [LeanVerifier().verify(q, c).detail for q, c in items]


@no_toolchain
def test_rlvr_verify_fails_refused_proofs_instead_of_calling_them_unavailable(tmp_path: Path) -> None:
    query = {"id": "comm", "prompt": "", "verifier": ROW.verifier}
    rows = [{"query": query, "completion": f"<answer>{proof}</answer>"} for proof in REFUSED + HONEST[:1]]
    lines = [json.dumps(row) for row in rows]
    report = verify_rows(lines)  # what `rlvr verify` runs, in process
    assert report.verdicts == {"fail": len(REFUSED), "unavailable": 1}, report.records
    assert report.error_classes == {"protocol_violation": len(REFUSED), "infrastructure": 1}
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "verify", "--input", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdicts"] == {"fail": len(REFUSED), "unavailable": 1}


def test_banned_words_are_whole_words() -> None:
    assert banned_tokens("by simp [sorry_free, Nat.admits, axiomatic, Std.Range.stop, r.native]") == []
    assert banned_tokens("by exact (sorry)") == ["sorry"]
    assert banned_tokens("by decide\n#print axioms x") == ["#print"]
    assert banned_tokens("by exact Lean.ofReduceBool _ _ rfl") == ["ofReduceBool"]
    assert banned_tokens("by decide +native") == ["native"]
    assert banned_tokens("by decide\n@[simp] theorem t : True := trivial") == ["@["]
    assert all(banned_tokens(proof) == [] for proof in HONEST)
    assert all(banned_tokens(proof) for proof in REFUSED)


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
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA), result
    assert "'bad-row'" in result.detail and key in result.detail


def test_registry_builds_the_lean_verifier() -> None:
    assert isinstance(get_verifier("lean"), LeanVerifier)


def _run(stdout: str, exit_code: int = 0) -> SandboxRun:
    return SandboxRun(
        exit_code=exit_code, signal=None, timed_out=False, output_truncated=False, stdout=stdout.encode(), stderr=b""
    )


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
