"""CoqVerifier: real coqtop in the real sandbox. Proofs pass only when Coq's kernel accepts exactly
the row's statement with no assumption beyond the row's, Coq ran exactly the sentences the screen
saw, and no check changes what another sees."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.coq import SESSION_LIMITS, CoqCriteria, CoqVerifier, Screened, extract_proof, screen
from rlvr.verifiers.coq_report import read_assumptions, sentences_ran
from rlvr.verifiers.coq_sentences import CoqSyntaxRefused, defined_tactics, sentence_kind, split
from rlvr.verifiers.coq_session import CoqSession, name
from rlvr.verifiers.registry import get_verifier

needs_coq = pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed (setup.sh installs it)")
pytestmark = [pytest.mark.sandbox]


def row(statement: str, preamble: str = "", **extra) -> Query:
    return Query("lemma-1", "", {"type": "coq", "statement": statement, "preamble": preamble, **extra})


COMM = row("Theorem add_comm' : forall n m : nat, n + m = m + n.", "Require Import Lia.")
NEGB = row("Theorem negb_involutive' : forall b : bool, negb (negb b) = b.")
FALSE = row("Theorem one_is_two : 1 = 2.")
ABSURD = row("Theorem absurd : False.")
APP_NIL = row("Theorem app_nil_r' : forall (A : Type) (l : list A), l ++ nil = l.", "Require Import List.")
ZGT = row("Theorem z_gt : forall n m : Z, (n > m)%Z -> (m < n)%Z.", "Require Import ZArith Lia.")
ZLE = row("Theorem z_le : forall n m : Z, (m <= n)%Z -> (m < n \\/ m = n)%Z.", "Require Import ZArith.")
ADD = row("Theorem add_comm_nat : forall n m : nat, n + m = m + n.", "Require Import Arith.")
PAIR = row("Theorem pair : True /\\ True.")
TRIPLE = row("Theorem triple : True /\\ (True /\\ True).")
LTAC = row("Theorem by_ltac : True /\\ True.", "Ltac Split_all := repeat split.")


@pytest.fixture(scope="module")
def coq() -> Iterator[CoqVerifier]:
    verifier = CoqVerifier(check_timeout_s=8)
    yield verifier
    verifier.close()


def answer(proof: str) -> str:
    return f"<think>by cases</think><answer>{proof}</answer>"


HONEST = [
    (COMM, "intros. lia."),
    (COMM, "Proof. intros n m. lia. Qed."),
    (NEGB, "intros b. destruct b; reflexivity."),
    (NEGB, "destruct b.\n- reflexivity.\n- reflexivity."),
    (NEGB, "intros [|]. { reflexivity. } { simpl. reflexivity. }"),
    (APP_NIL, "intros A l. induction l as [|x l IH]. reflexivity. simpl. rewrite IH. reflexivity."),
    (APP_NIL, "intros. apply app_nil_r."),
    # module-qualified names: an Ltac (Z.swap_greater) and lemmas (Nat.add_comm, Z.le_elim)
    (ZGT, "intros n m H. Z.swap_greater. lia."),
    (ZLE, "intros n m H. Z.le_elim H; [left | right]; assumption."),
    (ADD, "intros. apply Nat.add_comm."),
    # a bare closing Qed./Defined., with or without Proof., and Proof with
    (ADD, "intros. apply Nat.add_comm. Qed."),
    (ADD, "Proof. intros n m. apply Nat.add_comm. Defined."),
    (ADD, "Proof with auto.\nintros n m. rewrite Nat.add_comm...\nQed."),
    # bullets, braces and every goal selector, comments and strings as Coq reads them
    (TRIPLE, "split.\n- exact I.\n- split.\n  + exact I.\n  + exact I."),
    (TRIPLE, "split. 2: { split. 1-2: exact I. } exact I."),
    (TRIPLE, "split; [> exact I | split ]. all: exact I."),
    (TRIPLE, "refine (conj ?[a] ?[b]). [b]: { split; exact I. } [a]: exact I."),
    (TRIPLE, "split. { !: exact I. } split; exact I."),
    (PAIR, 'split. (* a period. "a *) in a string" (* nested. *) still a comment *) all: exact I.'),
    (PAIR, 'idtac "a. b"" c". split; exact I.'),
    (PAIR, "(* é ∀ *) split; exact I."),
    (PAIR, "Proof with exact I. split..."),
    # a capitalised tactic that the row's preamble defines
    (LTAC, "Split_all; exact I."),
]


@needs_coq
@pytest.mark.parametrize("query, proof", HONEST)
def test_real_proofs_pass(coq, query, proof):
    result = coq.verify(query, answer(proof))
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0), result.detail


SMUGGLED = "Unset Guard Checking. Fixpoint loop (n : nat) : False := loop n. exact (loop 0)."
HOSTILE = [
    # proofs by fiat
    (FALSE, "admit.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "give_up.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Admitted.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "reflexivity. Qed. Theorem other : True. Proof. exact I. Abort.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Abort. Theorem one_is_two : 1 = 1. Proof. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "exact_no_check (eq_refl 1).", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Proof with admit. idtac...", ErrorClass.PROTOCOL_VIOLATION),
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
    # universes, plugins, the guard checker: plain, and behind every sentence boundary Coq has
    (ABSURD, "Unset Universe Checking. exact I.", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, SMUGGLED, ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"1: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"[absurd]: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"- 1: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"- {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"7: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"all: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"!: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"1-2, 4: {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"1 : (* x *) {{ {SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, f"1:{{{SMUGGLED} }}", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "1: { #[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n. exact (loop 0). }",
     ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "1: { Unset Positivity Checking. Inductive bad := C : (bad -> False) -> bad. exact I. }",
     ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "1: { Local Definition x := 0. Global Set Universe Polymorphism. exact I. }",
     ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "1: { Require Import Classical. exact I. }", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "Time exact I.", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "Fail Fail Unset Guard Checking. exact I.", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, 'Declare ML Module "evil_plugin". exact I.', ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "Polymorphic Universe u. exact I.", ErrorClass.PROTOCOL_VIOLATION),
    (ABSURD, "cbv. w:{{ . Unset Guard Checking. }} exact I.", ErrorClass.PROTOCOL_VIOLATION),
    # leaving Coq, reading files, hiding text from the split
    (FALSE, "Drop.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Load "/etc/passwd".', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'Redirect "/tmp/x" Print nat. reflexivity.', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "reflexivity. (* . Qed.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, 'idtac "unterminated. Qed.', ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "reflexivity", ErrorClass.PROTOCOL_VIOLATION),
    # wedging the session: its markers and resets
    (FALSE, "Definition Rlvr_after_preamble := 0. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "idtac. Reset Initial.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Back 2. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Abort All. Module Wedge.", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "Restart. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),
    (NEGB, "start ltac profiling. destruct b; reflexivity.", ErrorClass.PROTOCOL_VIOLATION),  # Reset keeps it
    (FALSE, "idtac \ud800. reflexivity.", ErrorClass.PROTOCOL_VIOLATION),  # no UTF-8 for coqtop's stdin
    # what gets past the screen and must fail in Coq
    (FALSE, "reflexivity.", ErrorClass.COMPILE_ERROR),
    (FALSE, "reflexivity. (* . Qed. *)", ErrorClass.COMPILE_ERROR),
    (FALSE, "pose proof (ltac:(exact I)) as H. exact H.", ErrorClass.COMPILE_ERROR),
    (FALSE, "exact (ltac:(admit)).", ErrorClass.PROTOCOL_VIOLATION),
    (FALSE, "refine ?[x].", ErrorClass.COMPILE_ERROR),
    (FALSE, "shelve.", ErrorClass.COMPILE_ERROR),
    (FALSE, "assert (H : 1 = 2) by shelve. exact H.", ErrorClass.COMPILE_ERROR),
    (FALSE, "intros. idtac. auto.", ErrorClass.COMPILE_ERROR),
    (FALSE, "(exact I).", ErrorClass.COMPILE_ERROR),
    (FALSE, "idtac.Unset Guard Checking. reflexivity.", ErrorClass.COMPILE_ERROR),
    (FALSE, 'idtac "Closed under the global context". reflexivity.', ErrorClass.COMPILE_ERROR),
    # nontermination
    (FALSE, "repeat (assert True by exact I).", ErrorClass.TIMEOUT),
    (FALSE, "let rec f := f in f.", ErrorClass.MEMORY),  # a stack overflow, also on a fresh session
]  # fmt: skip


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
    # printing a report of its own changes nothing: the report read is the one after the host's Check
    forged = 'idtac "Closed under the global context". intros. apply classic.'
    assert coq.verify(row(statement, "Require Import Classical."), answer(forged)).verdict is Verdict.FAIL


def test_the_report_is_read_whole_and_only_known_lines_pass():
    """What Coq 8.16 prints (printing/printer.ml, pr_assumptionset): names with types, a name alone
    with its type on the next line, notes about unsafe checks. Only the first two pass."""
    fetching = "Fetching opaque proofs from disk for Coq.Init.Logic\n"
    assert read_assumptions(fetching + "Closed under the global context\n") == (set(), "")
    broken = "Axioms:\nClassicalDedekindReals.sig_forall_dec\n  : forall P : nat -> Prop,\n    P 0\nclassic : forall P : Prop, P\n"
    assert read_assumptions(broken) == ({"ClassicalDedekindReals.sig_forall_dec", "classic"}, "")
    for note in (
        "loop is assumed to be guarded.",
        "bad is assumed to be positive.",
        "T relies on an unsafe hierarchy.",
        "t relies on definitional UIP.",
        "Type hierarchy is collapsed (logic is inconsistent)",
        "Set is impredicative",
        "Section Variables:",
    ):
        assert read_assumptions(f"Axioms:\nclassic : forall P : Prop, P\n{note}\n")[1] == note
        assert read_assumptions(f"{note}\n")[1] == note
    long_note = "Axioms:\nvery_long_fixpoint_name\n  is assumed to be guarded.\n"
    assert read_assumptions(long_note)[1] == "  is assumed to be guarded."
    assert read_assumptions("Closed under the global context\nloop is assumed to be guarded.\n")[1]
    assert read_assumptions("")[1] == "no assumptions report"


@needs_coq
def test_coq_reports_unsafe_checks_in_lines_the_reader_refuses():
    """The notes come from real coqtop (commands no proof may run, run here by the host)."""
    session = CoqSession(SESSION_LIMITS, 20)
    try:
        unsafe = {
            "Unset Guard Checking.\nFixpoint loop (n : nat) : False := loop n.\nSet Guard Checking.\n": "guarded",
            "Unset Positivity Checking.\nInductive bad := C : (bad -> False) -> bad.\n": "positive",
            "Unset Universe Checking.\nDefinition U := Type.\nDefinition T : U := U.\n": "unsafe hierarchy",
        }
        for index, (commands, note) in enumerate(unsafe.items()):
            statement = f"Theorem t{index} : True. exact (let _ := {['loop', 'bad', 'T'][index]} in I). Qed.\n"
            output, _ = session.ask(f"{commands}{statement}Print Assumptions t{index}.\n")
            ran = sentences_ran(output)  # ..., Qed, Print Assumptions, the marker's Print
            _, unknown = read_assumptions(output[ran[-3].line_end : ran[-2].line_start])
            assert note in unknown, output
    finally:
        session.close()


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
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA)


def test_the_screen_runs_without_coq_and_on_every_path():
    """What the proof text decides needs no Coq and no sandbox (it runs before either)."""
    assert isinstance(screen("intros. lia."), Screened)
    assert "no tactic" in screen("Qed.")
    assert "is a command" in screen("intros. Qed. exact I.")
    assert "banned admit" in screen("admit.")
    assert "ends inside a sentence" in screen("intros; lia")
    assert "is a command" in screen("Split_all.") and isinstance(
        screen("Split_all.", frozenset({"Split_all"})), Screened
    )
    assert extract_proof("```coq\nProof.\nexact I.\nQed.\n```") == "Proof.\nexact I.\nQed."
    verifier = get_verifier("coq")
    batch = verifier.verify_batch([(FALSE, answer("Admitted.")), (FALSE, "no proof")])
    assert [(r.verdict, r.error_class) for r in batch] == [
        (Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION),
        (Verdict.FAIL, ErrorClass.NO_ANSWER),
    ]


def test_the_screen_keeps_offsets_and_blanks_only_the_opener_and_closer():
    """``Proof.`` and ``Qed.`` are blanked to spaces of the same byte length, so the sentences'
    byte offsets are the proof's own (``Proof with`` becomes the opener Coq runs)."""
    screened = screen("Proof with auto. (* é *) intros... Qed.")
    assert screened.opener == "Proof with auto."
    assert screened.text == " " * 16 + " (* é *) intros...     "
    # "intros..." starts after 16 + 1 + 8 characters, 9 bytes past the 2-byte é: byte 26
    assert [(s.start, s.end) for s in screened.sentences] == [(26, 35)]
    assert len(screened.text.encode()) == len("Proof with auto. (* é *) intros... Qed.".encode())


@pytest.mark.parametrize(
    "text, kinds",
    [
        ("- + * -- { }", ["structural"] * 6),
        ("1: { 1-2, 4: { [g] : { !: { all: {", ["structural"] * 5),
        ("2: idtac. [g]: idtac. par: idtac. all: idtac. Z.swap_greater. (idtac). [> idtac ].", ["tactic"] * 7),
        ("Unset Guard Checking. #[local] Definition x := 0. Time idtac. [ idtac ]. 0x1: { Z .f.", ["command"] * 5),
        ("a.b. idtac..x. idtac.(x). idtac", None),  # ends inside a sentence: refused whole
    ],
)
def test_sentence_kinds(text, kinds):
    """Bullets, braces and SELECTOR: { are structure; a tactic starts with a lowercase name, a
    qualified name, ``(`` or ``[>`` after an optional selector; anything else is a command. Refused
    too, on the safe side: ``[ ... ]`` alone, a name spaced from its field, and a hexadecimal
    selector (``0x1: {`` is one sentence here, and starts with a number that selects nothing)."""
    if kinds is None:
        with pytest.raises(CoqSyntaxRefused, match="ends inside a sentence"):
            split(text)
        return
    assert [sentence_kind(sentence.tokens) for sentence in split(text)] == kinds


def test_preambles_declare_their_capitalised_tactics():
    preamble = 'Ltac Foo := idtac.\n#[local] Ltac Bar x := exact x.\nTactic Notation "Baz" constr(x) := exact x.\n'
    assert defined_tactics(preamble) == {"Foo", "Bar", "Baz"}
    assert defined_tactics("Require Import Lia.") == frozenset()


DIFFERENTIAL = [
    "1: { Unset Guard Checking. Fixpoint loop (n : nat) : False := loop n. exact I. }",
    "- 1: { #[bypass_check(guard)] Fixpoint loop2 (n : nat) : False := loop2 n. exact I. }",
    "1 : (* { *) { Local Definition x := 0. exact I. }",
    "{ - exact I. }",
    "refine ?[g]. [g]: { exact I. }",
    'idtac "a. b"" c". (* c. "*)" d. *) Z.swap_greater. exact I.',
    "exact I.. idtac. exact I.",
    "idtac.Unset Guard Checking. exact I.",
    "intros. (* é ∀ (* nested *) *) exact (let x := 1 in I)...",
]


@needs_coq
@pytest.mark.parametrize("text", DIFFERENTIAL)
def test_the_screen_splits_where_coq_does(text):
    """Run the text in a real coqtop (commands included: a throwaway session, not a check) and
    compare the byte ranges Coq reports for the sentences it ran with the screen's: every range Coq
    ran is one of the screen's, and where nothing erred, they are the same list."""
    session = CoqSession(SESSION_LIMITS, 20)
    try:
        session.ask("Require Import ZArith.\n")
        output, marker = session.ask(f"Goal True.\n{text}\n")
    finally:
        session.close()
    ran = sentences_ran(output)
    goal_end = ran[0].end + 1
    coq = []
    for r in ran[1:-1]:  # the Goal, then the text's sentences, then the marker
        if coq and r.start - goal_end <= coq[-1][0]:
            break  # commands replayed at the end of a proof: already counted
        coq.append((r.start - goal_end, r.end - goal_end))
    screen_ranges = [(s.start, s.end) for s in split(text)]
    assert set(coq) <= set(screen_ranges), (coq, screen_ranges)
    if "Error" not in output.replace(f"Error: {marker}", ""):
        assert coq == screen_ranges


@needs_coq
def test_coq_side_refuses_what_a_screen_miss_would_let_through(coq):
    """Were the screen to miss a command, Coq's own report of what it ran fails the check and the
    session is replaced; honest and wrong checks after it are judged as on a fresh session."""

    def unscreened(query: Query, proof: str):
        criteria = CoqCriteria.from_dict(query.verifier)
        with coq._lock:
            return coq._run_screened(query, criteria, Screened(proof, tuple(split(proof))))

    for proof, reported in (
        (f"1: {{ {SMUGGLED} }}", True),
        (SMUGGLED, True),
        ("Definition Rlvr_after_preamble := 0. Unset Guard Checking. exact I.", True),
        ('idtac "Chars 7 - 12 [exact~I.] 0. secs (0.u,0.s)". Unset Universe Checking. exact I.', True),
        ("Abort All. Module Wedge. Section S.", True),
        ("idtac. Reset Initial.", False),  # coqtop prints no Chars line for a backtrack...
        ("Back 1. exact I.", False),  # ...so here the reset's probes are what keeps the session clean
    ):
        result = unscreened(ABSURD, proof)
        assert result.verdict is Verdict.FAIL and result.error_class is not ErrorClass.NONE, (proof, result)
        started = coq.sessions_started
        assert coq.verify(NEGB, answer("destruct b; reflexivity.")).verdict is Verdict.PASS
        assert coq.sessions_started == started + reported, proof  # a coqtop that ran a command is replaced
        assert coq.verify(FALSE, answer("reflexivity.")).verdict is Verdict.FAIL


@needs_coq
def test_after_a_reset_the_probes_see_any_state_the_preamble_did_not_leave():
    """CoqSession.reset answers False when the state after ``Reset mark`` differs from the one
    right after the preamble: a module or section left open, a kernel check switched off, a library
    loaded, Ltac profiling switched on."""
    session = CoqSession(SESSION_LIMITS, 20)
    try:
        assert session.load("Require Import Bool.") == ""
        profiled = "Goal True. start ltac profiling. exact I. Qed.\n"  # a tactic whose effect Reset keeps
        for dirt in (
            "Module Wedge.\n",
            "Unset Guard Checking.\n",
            "Section S.\n",
            "Require Import List.\n",
            profiled,
            "",
        ):
            mark = name("mark")
            session.ask(f"{dirt}Definition {mark} := 0.\nTheorem t : True.\n")
            assert session.reset(mark) is (dirt == ""), dirt
            session.load("Require Import Bool.")  # back to a known state for the next case
    finally:
        session.close()


@needs_coq
def test_a_check_that_redefines_markers_changes_no_later_verdict():
    """The issue's wedge: a proof that redefines the reset mark (refused), and the same through
    Coq with the screen bypassed, then many checks on the same preamble: right ones pass, wrong
    ones fail, none is an error."""
    verifier = CoqVerifier(check_timeout_s=8)
    same_preamble = row("Theorem negb_twice : forall b : bool, negb (negb b) = b.", "Require Import Bool.")
    try:
        wedge = "Definition Rlvr_after_preamble := 0. Reset Rlvr_after_preamble. destruct b; reflexivity."
        assert verifier.verify(same_preamble, answer(wedge)).error_class is ErrorClass.PROTOCOL_VIOLATION
        criteria = CoqCriteria.from_dict(same_preamble.verifier)
        with verifier._lock:
            bypass = verifier._run_screened(same_preamble, criteria, Screened(wedge, tuple(split(wedge))))
        assert bypass.verdict is Verdict.FAIL
        proofs = ["intros b. destruct b; reflexivity.", "intros b. reflexivity."] * 15
        verdicts = [verifier.verify(same_preamble, answer(proof)).verdict for proof in proofs]
        assert verdicts == [Verdict.PASS, Verdict.FAIL] * 15
    finally:
        verifier.close()


RECYCLED = [
    ("", "Theorem r{i} : {i} + 0 = {i}.", "reflexivity.", "exact I."),
    ("Require Import Lia.", "Theorem r{i} : forall n, n + {i} >= {i}.", "intros. lia.", "intros. reflexivity."),
    ("Require Import List.", "Theorem r{i} : length (@nil nat) = 0 /\\ {i} = {i}.", "split; reflexivity.", "exact I."),
    ("Require Import ZArith.", "Theorem r{i} : (Z.of_nat {i} >= 0)%Z.", "lia.", "reflexivity."),
    (
        "Require Import Bool.",
        "Theorem r{i} : negb (negb true) = true /\\ {i} = {i}.",
        "split; reflexivity.",
        "exact I.",
    ),
]


def recycled_rows(count: int) -> list[tuple[Query, str, Verdict]]:
    """Checks whose preamble changes every time (so coqtop's memory grows), honest and wrong."""
    rows = []
    for i in range(count):
        preamble, statement, right, wrong = RECYCLED[i % len(RECYCLED)]
        preamble += "\nRequire Import Lia." if "lia" in right and "Lia" not in preamble else ""
        query = row(statement.format(i=i), preamble + f"\n(* row {i} *)")
        rows.append((query, right if i % 3 else wrong, Verdict.PASS if i % 3 else Verdict.FAIL))
    return rows


@needs_coq
def test_sessions_are_recycled_by_measured_memory_before_they_run_out():
    """A 1.6 GB cap, replaced above half of it: 40 checks on changing preambles all get their own
    verdict, more than one session serves them, and no check had to be run again."""
    verifier = CoqVerifier(check_timeout_s=20, memory_mb=1600, recycle_at=0.5)
    try:
        rows = recycled_rows(40)
        results = [verifier.verify(query, answer(proof)) for query, proof, _ in rows]
        assert [r.verdict for r in results] == [expected for _, _, expected in rows], [r.detail for r in results]
        assert verifier.sessions_started >= 2 and verifier.reruns == 0
    finally:
        verifier.close()


@needs_coq
def test_sessions_are_replaced_after_a_number_of_checks_and_verdicts_do_not_change():
    """Recycled every 3 checks, 8 checks take 3 sessions; never recycled for its count, one; both
    give every check its own verdict (each check slows coqtop a little: coq_session_growth.py)."""
    rows = [(row(f"Theorem t{i} : forall b : bool, negb (negb b) = b."), i % 2) for i in range(8)]
    verdicts = []
    for every, sessions in ((3, 3), (0, 1)):
        verifier = CoqVerifier(recycle_after_checks=every)
        try:
            got = [verifier.verify(q, answer("intros b. destruct b; reflexivity." if ok else "intros b. reflexivity."))
                   for q, ok in rows]  # fmt: skip
            assert verifier.sessions_started == sessions and verifier.reruns == 0
        finally:
            verifier.close()
        verdicts.append([r.verdict for r in got])
    assert verdicts[0] == verdicts[1] == [Verdict.PASS if ok else Verdict.FAIL for _, ok in rows]


@needs_coq
def test_a_check_that_meets_the_sessions_exhaustion_runs_again_on_a_fresh_one():
    """No recycling and a 1.1 GB cap: the session runs out of memory while loading some check's
    preamble; that check is run again on a fresh session and gets its own verdict."""
    verifier = CoqVerifier(check_timeout_s=20, memory_mb=1100, recycle_at=1.0)
    try:
        rows = recycled_rows(24)
        results = [verifier.verify(query, answer(proof)) for query, proof, _ in rows]
        assert [r.verdict for r in results] == [expected for _, _, expected in rows], [r.detail for r in results]
        assert verifier.reruns >= 1
    finally:
        verifier.close()


@needs_coq
def test_rlvr_verify_on_proof_rows_passes_real_proofs_and_fails_every_hostile_one(tmp_path, cli):
    real = [(COMM, "intros. lia."), (NEGB, "destruct b; reflexivity."), (ZGT, "intros n m H. Z.swap_greater. lia.")]
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
