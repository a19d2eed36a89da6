"""CoqVerifier: real coqtop in the real sandbox. Proofs pass only when Coq's kernel accepts exactly
the row's statement with no assumption beyond the row's; every hostile proof fails with a class."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.coq import CoqVerifier, extract_proof, screen
from rlvr.verifiers.registry import get_verifier

needs_coq = pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed (setup.sh installs it)")
pytestmark = [pytest.mark.sandbox]


def row(statement: str, preamble: str = "", **extra) -> Query:
    return Query("lemma-1", "", {"type": "coq", "statement": statement, "preamble": preamble, **extra})


COMM = row("Theorem add_comm' : forall n m : nat, n + m = m + n.", "Require Import Lia.")
NEGB = row("Theorem negb_involutive' : forall b : bool, negb (negb b) = b.")
FALSE = row("Theorem one_is_two : 1 = 2.")
APP_NIL = row("Theorem app_nil_r' : forall (A : Type) (l : list A), l ++ nil = l.", "Require Import List.")


@pytest.fixture(scope="module")
def coq() -> Iterator[CoqVerifier]:
    verifier = CoqVerifier(check_timeout_s=8)
    yield verifier
    verifier.close()


def answer(proof: str) -> str:
    return f"<think>by cases</think><answer>{proof}</answer>"


@needs_coq
@pytest.mark.parametrize(
    "query, proof",
    [
        (COMM, "intros. lia."),
        (COMM, "Proof. intros n m. lia. Qed."),
        (NEGB, "intros b. destruct b; reflexivity."),
        (NEGB, "destruct b.\n- reflexivity.\n- reflexivity."),
        (NEGB, "intros [|]. { reflexivity. } { simpl. reflexivity. }"),
        (APP_NIL, "intros A l. induction l as [|x l IH]. reflexivity. simpl. rewrite IH. reflexivity."),
        (APP_NIL, "intros. apply app_nil_r."),
    ],
)
def test_real_proofs_pass(coq, query, proof):
    result = coq.verify(query, answer(proof))
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0), result.detail


HOSTILE = [
    # proofs by fiat
    (FALSE, "admit.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "give_up.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Admitted.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "reflexivity. Qed. Theorem other : True. Proof. exact I. Abort.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Abort. Theorem one_is_two : 1 = 1. Proof. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "exact_no_check (eq_refl 1).", ErrorClass.PROTOCOL_VIOLATION),
    # axiom smuggling
    (FALSE, "Axiom cheat : 1 = 2. exact cheat.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Parameter cheat : 1 = 2. exact cheat.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Local Axiom cheat : 1 = 2. exact cheat.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "#[local] Axiom cheat : 1 = 2. exact cheat.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Hypothesis cheat : 1 = 2. exact cheat.", ErrorClass.PROTOCOL_VIOLATION),
    # redefining the statement's names, notation tricks
    (FALSE, "Definition nat := bool. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Notation "1" := 2. reflexivity.', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Local Infix "=" := (fun _ _ => True). exact I.', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Open Scope bool_scope. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Ltac reflexivity := admit. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    # universes, plugins, the guard checker
    (FALSE, "Unset Universe Checking. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Unset Guard Checking. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Declare ML Module "evil_plugin". reflexivity.', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Polymorphic Universe u. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    # leaving Coq, reading files
    (FALSE, "Drop.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Load "/etc/passwd".', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Redirect "/tmp/x" Print nat. reflexivity.', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "reflexivity. (* . Qed. *)", ErrorClass.PROTOCOL_VIOLATION),
    # what gets past the screen and must fail in Coq
    (FALSE, "reflexivity.", ErrorClass.COMPILE_ERROR),
    (FALSE, "pose proof (ltac:(exact I)) as H. exact H.", ErrorClass.COMPILE_ERROR),
    (FALSE, "exact (ltac:(admit)).", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "refine ?[x].", ErrorClass.COMPILE_ERROR),
    (FALSE, "shelve.", ErrorClass.COMPILE_ERROR),
    (FALSE, "assert (H : 1 = 2) by shelve. exact H.", ErrorClass.COMPILE_ERROR),
    (FALSE, "intros. idtac. auto.", ErrorClass.COMPILE_ERROR),
    (FALSE, "(exact I).", ErrorClass.COMPILE_ERROR),
    # nontermination
    (FALSE, "repeat (assert True by exact I).", ErrorClass.TIMEOUT),
    (FALSE, "let rec f := f in f.", ErrorClass.COMPILE_ERROR),
]


@needs_coq
@pytest.mark.parametrize("query, proof, error_class", HOSTILE)
def test_hostile_proofs_fail_with_a_class(coq, query, proof, error_class):
    result = coq.verify(query, answer(proof))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, error_class), result.detail
    honest = coq.verify(NEGB, answer("destruct b; reflexivity."))  # the session is clean afterwards
    assert honest.verdict is Verdict.PASS, honest.detail


@needs_coq
def test_axioms_pass_only_when_the_row_allows_them(coq):
    statement = "Theorem lem : forall P : Prop, P \\/ ~ P."
    strict = coq.verify(row(statement, "Require Import Classical."), answer("intros. apply classic."))
    assert (strict.verdict, strict.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER)
    assert "classic" in strict.detail
    allowed = coq.verify(
        row(statement, "Require Import Classical.", axioms=["classic"]), answer("intros. apply classic.")
    )
    assert allowed.verdict is Verdict.PASS


@needs_coq
def test_a_proof_of_another_checks_state_does_not_leak_into_the_next(coq):
    """Each check runs in a module reset afterwards: a lemma proved in one is gone in the next."""
    assert coq.verify(COMM, answer("intros. lia.")).verdict is Verdict.PASS
    named = row("Theorem uses_previous : forall n m : nat, n + m = m + n.", "Require Import Lia.")
    result = coq.verify(named, answer("exact add_comm'."))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.COMPILE_ERROR)


@needs_coq
def test_broken_rows_are_errors_naming_the_row(coq):
    bad = coq.verify(row("Theorem broken : 1 = ."), answer("reflexivity."))
    assert (bad.verdict, bad.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)
    assert "lemma-1" in bad.detail
    unknown = coq.verify(row("Theorem t : True.", "Require Import NoSuchLibrary."), answer("exact I."))
    assert unknown.verdict is Verdict.ERROR
    assert coq.verify(NEGB, answer("destruct b; reflexivity.")).verdict is Verdict.PASS


@pytest.mark.parametrize(
    "criteria",
    [
        {"statement": "theorem t : True."},
        {"statement": "Theorem t : True"},
        {"statement": "Theorem t : True := I."},
        {"statement": "Theorem t : True.", "preamble": 3},
        {"statement": "Theorem t : True.", "axioms": "classic"},
    ],
)
def test_malformed_criteria_are_errors_before_coq(criteria):
    result = CoqVerifier().verify(Query("r", "", {"type": "coq", **criteria}), answer("exact I."))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)


def test_the_screen_runs_without_coq_and_on_every_path():
    """What the proof text decides needs no Coq and no sandbox (it runs before either)."""
    assert screen("intros. lia.") == ""
    assert "command" in screen("Qed.")
    assert "banned admit" in screen("admit.")
    assert screen("intros; lia") != ""  # no sentence end
    assert extract_proof("```coq\nProof.\nexact I.\nQed.\n```") == "exact I."
    verifier = get_verifier("coq")
    batch = verifier.verify_batch([(FALSE, answer("Admitted.")), (FALSE, "no proof")])
    assert [(r.verdict, r.error_class) for r in batch] == [
        (Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION),
        (Verdict.FAIL, ErrorClass.NO_ANSWER),
    ]


@needs_coq
def test_rlvr_verify_on_proof_rows_passes_real_proofs_and_fails_every_hostile_one(tmp_path, cli):
    import json

    real = [(COMM, "intros. lia."), (NEGB, "destruct b; reflexivity."), (APP_NIL, "intros. apply app_nil_r.")]
    hostile = [(query, proof) for query, proof, error_class in HOSTILE if error_class is not ErrorClass.TIMEOUT]
    rows = tmp_path / "proofs.jsonl"
    lines = [
        json.dumps({"query": {"id": f"p{i}", "prompt": "", "verifier": query.verifier}, "completion": answer(proof)})
        for i, (query, proof) in enumerate(real + hostile)
    ]
    rows.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    run = cli("verify", "--input", str(rows), "--out", str(out))
    assert run.returncode == 0, run.stderr
    verdicts = [json.loads(line)["verdict"] for line in out.read_text().splitlines()]
    assert verdicts == ["pass"] * len(real) + ["fail"] * len(hostile)
    assert "checks/s" in run.stdout or "per second" in run.stdout
