"""Coq proofs, checked by a persistent ``coqtop -time`` in the bubblewrap sandbox.

Rows look like ``{"type": "coq", "statement": "Theorem add_comm' : forall n m : nat, n + m = m +
n.", "preamble": "Require Import Lia."}`` (``preamble`` optional; ``axioms`` optional, the names
of axioms a proof may rest on, e.g. ``["classic"]`` with ``Require Import Classical.``; default
none). The completion's proof is the last ```` ```coq ```` block, else its ``<answer>``: a tactic
script, optionally opened by ``Proof.`` or ``Proof with TACTIC.`` and closed by ``Qed.`` or
``Defined.`` (each may be there without the other).

**Screened first**, on every path and with or without a Coq install (``fail``/``protocol_violation``
when refused): the proof is split into sentences where Coq splits them (``coq_sentences``: a period
before a blank, a bullet, a brace, ``SELECTOR: {``; comments and strings skipped), and every
sentence must be a bullet, a brace, ``SELECTOR: {`` or a tactic, never a vernacular command
(``coq_sentences.sentence_kind``). The tactics in ``BANNED_TACTICS`` are refused anywhere.

**Then Coq decides.** The host sends, with names drawn per check from a CSPRNG after the proof
was written (so a proof can name none of them),

    Definition {mark} := 0.  Module {module}.  {statement}  Print {stated}.
    Proof.  {proof}  Qed.  End {module}.  Check {module}.{name}.
    Print Assumptions {module}.{name}.  Print {done}.

(the proof's own ``Proof with`` in place of ``Proof.``). ``-time`` makes coqtop print, for each
sentence it ran, its byte range and the sentence as it parsed it. The proof passes only if those
lines are exactly the screen's sentences in order (anchored at ``Proof``), each printed back as a
tactic, bullet or brace, no sentence errs, and the assumptions report between the ``Check`` and
``Print Assumptions`` lines is exactly "Closed under the global context" or lists only the row's
``axioms`` (``coq_report.read_assumptions``: a fixpoint "assumed to be guarded", an inductive
"assumed to be positive", an unsafe universe hierarchy, any line not understood: ``fail``).

**No check can affect another.** After each check the host sends ``Reset {mark}`` and asks
``coq_session._PROBES``; the answers must equal those given right after the preamble was loaded.
Otherwise the session is replaced and the check run again on a fresh one, where leaving coqtop
dirty again is that check's ``fail``. A check in which Coq ran anything but the screen's
sentences also ends its session.

**Sessions are recycled by measured use**: after a check, a session that has run
``recycle_after_checks`` checks, whose ``coqtop`` holds more address space (``VmSize``, what the cap
counts) than ``recycle_at`` of the cap, or has used its CPU budget but three check timeouts, is
replaced. The count matters for speed: ``Reset`` undoes a check's definitions, but each check still
leaves coqtop a little slower (its document keeps growing), so a session that never ends pays for
every check before (12 ms per check fresh, 94 ms after 500; benchmarks/coq_session_growth.py). A check during which the session died, ran out of
memory or stack, or failed to load a preamble or statement is run again on a fresh session unless
it ran on one already: only then is the result the check's own.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxUnavailable
from rlvr.sandbox.session import SessionEnded
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import fail, unavailable, verifier_error
from rlvr.verifiers.coq_report import errors, exhausted, read_assumptions, sentences_ran
from rlvr.verifiers.coq_sentences import (
    BANNED_TACTICS,
    CoqSyntaxRefused,
    Sentence,
    defined_tactics,
    printed_kind,
    sentence_kind,
    split,
)
from rlvr.verifiers.coq_session import CoqSession, name
from rlvr.verifiers.proof_rows import TheoremCriteria, fenced_proof, read_theorem
from rlvr.verifiers.sandboxed import SandboxedVerifier

SESSION_LIMITS = SandboxLimits(wall_s=0, cpu_s=900, memory_mb=4096, processes=8, output_bytes=4 << 20)
"""For the whole session: a fresh coqtop holds about 500 MB of address space, and each preamble
loaded after ``Reset Initial`` adds 30-400 MB that Coq never gives back (measured)."""
CHECK_TIMEOUT_S = 20.0
"""Wall clock per exchange of a check; beyond it the session is killed and the proof fails with ``timeout``."""
RECYCLE_AFTER_CHECKS = 50
"""Checks after which a session is replaced: a fresh coqtop costs a fraction of a second and each check
in a session costs a little more than the one before, so recycling keeps the mean near a fresh
session's (600 lemma checks: 29.7 s in one session, 8.5 s recycled every 50, 3.5x; measured with
benchmarks/coq_session_growth.py on 2 cores)."""
RECYCLE_AT = 0.5
"""Share of the session's address-space cap above which it is replaced after a check: the next
check keeps half the cap for itself."""

_STATEMENT = re.compile(
    r"\s*(Theorem|Lemma|Fact|Remark|Corollary|Proposition|Example)\s+([A-Za-z_][\w']*)[\s(:{]", re.ASCII
)
_FENCE = re.compile(r"```[ \t]*(?:coq|Coq)[ \t]*\r?\n(.*?)```", re.DOTALL)
_CLOSERS = (("Qed", "."), ("Defined", "."))
SELF_CHECK = Query("coq-self-check", "", {"type": "coq", "statement": "Theorem rlvr_self_check : 2 + 2 = 4."})
SELF_CHECK_PROOF = "<answer>reflexivity.</answer>"


@dataclass(frozen=True)
class CoqCriteria(TheoremCriteria):
    """The ``verifier`` object of a coq row."""

    axioms: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> CoqCriteria:
        form = "Theorem NAME : TYPE."
        statement, name, preamble = read_theorem(criteria, _STATEMENT, form, "Coq", name_group=2, ends_with=".")
        axioms = criteria.get("axioms", [])
        if not isinstance(axioms, list) or not all(isinstance(a, str) for a in axioms):
            raise ValueError(f'"axioms" must be a list of axiom names, got {axioms!r}')
        return cls(statement, name, preamble, frozenset(axioms))


@dataclass(frozen=True)
class Screened:
    """A proof that passed the screen: the text Coq gets and the sentences Coq must report."""

    text: str
    """The proof with its opening ``Proof`` sentence and a closing ``Qed.``/``Defined.`` blanked
    out (so offsets are the proof's own)."""
    sentences: tuple[Sentence, ...]
    opener: str = "Proof."
    """``Proof.``, or the proof's own ``Proof with TACTIC.`` (which sets the tactic ``...`` runs)."""
    tactics: frozenset[str] = frozenset()
    """Capitalised tactics the row's preamble defines (``coq_sentences.defined_tactics``)."""


def extract_proof(completion: str) -> str:
    """The last ```` ```coq ```` block, else the ``<answer>`` content, else ""."""
    return fenced_proof(completion, _FENCE)


def screen(proof: str, tactics: frozenset[str] = frozenset()) -> Screened | str:
    """The screened proof, or why it is refused before Coq sees it (module docstring); ``tactics``:
    capitalised tactic names the row's preamble defines."""
    if not proof.isascii() and any("\ud800" <= char <= "\udfff" for char in proof):
        return "the proof is not text coqtop can read (a lone surrogate has no UTF-8 form)"
    try:
        sentences = split(proof)
    except CoqSyntaxRefused as error:
        return str(error)
    kept = list(sentences)
    opener, dropped = "Proof.", []
    if kept and kept[0].words[:1] == ("Proof",):
        opener = proof[kept[0].tokens[0].start : kept[0].tokens[-1].end]
        if kept[0].words != ("Proof", ".") and not _tactic_opener(kept[0], tactics):
            return f"{clip(opener)!r} is a command (a proof may open with Proof. or Proof with TACTIC.)"
        dropped.append(kept.pop(0))
    if kept and kept[-1].words in _CLOSERS:
        dropped.append(kept.pop())
    if not kept:
        return "proof has no tactic (a tactic ends with a period)"
    words = [token.text.lstrip(".") for sentence in [*kept, *dropped] for token in sentence.tokens]
    banned = [word for word in words if word in BANNED_TACTICS]
    if banned:
        return f"proof uses banned {', '.join(dict.fromkeys(banned))}"
    for sentence in kept:
        if sentence_kind(sentence.tokens, tactics) == "command":
            return f"proof sentences must be tactics; {clip(' '.join(sentence.words[:3]))!r} is a command"
    text = proof
    for sentence in reversed(dropped):  # blanks of the same byte length: offsets stay the proof's
        first, last = sentence.tokens[0].start, sentence.tokens[-1].end
        text = text[:first] + " " * len(proof[first:last].encode()) + text[last:]
    return Screened(text, tuple(kept), opener, tactics)


def _tactic_opener(sentence: Sentence, tactics: frozenset[str]) -> bool:
    """``Proof with TACTIC.``: the tactic a sentence ending in ``...`` runs after its own."""
    return sentence.words[:2] == ("Proof", "with") and sentence_kind(sentence.tokens[2:], tactics) == "tactic"


@dataclass(frozen=True)
class Outcome:
    """A check's result, and whether the session rather than the proof may be to blame for it (then
    the check runs again on a fresh session, unless it just ran on one)."""

    result: VerifierResult
    session_suspect: bool = False


@dataclass(frozen=True)
class Tail:
    """What is sent after the statement, and the byte ranges of the sentences Coq must report."""

    text: str
    expected: tuple[tuple[int, int], ...]
    proof_ranges: frozenset[tuple[int, int]]


def build_tail(screened: Screened, module: str, theorem: str, done: str) -> Tail:
    """The opener (``Proof.`` or the proof's ``Proof with ...``: the first sentence Coq reports,
    printing nothing before it), the proof, then the host's sentences; the ranges are relative to
    the opener's start."""
    host = [
        "Qed.",
        f"End {module}.",
        f"Check {module}.{theorem}.",
        f"Print Assumptions {module}.{theorem}.",
        f"Print {done}.",
    ]
    opener = screened.opener.encode()
    proof = [(len(opener) + 1 + s.start, len(opener) + 1 + s.end) for s in screened.sentences]
    expected = [(0, len(opener)), *proof]
    offset = len(opener) + 1 + len(screened.text.encode()) + 1
    for sentence in host:
        expected.append((offset, offset + len(sentence.encode())))
        offset += len(sentence.encode()) + 1
    text = "\n".join([screened.opener, screened.text, *host]) + "\n"
    return Tail(text, tuple(expected), frozenset(proof))


def judge(
    output: str, tail: Tail, criteria: CoqCriteria, done: str, screened_tactics: frozenset[str]
) -> tuple[Outcome, bool]:
    """(the check's outcome, whether Coq ran anything but the screen's sentences) from what coqtop
    printed for the tail."""
    ran = sentences_ran(output)
    base = ran[0].start if ran and ran[0].printed.startswith("Proof") else None
    observed = [(r.start - base, r.end - base) for r in ran] if base is not None else []
    stray = base is None or any(
        span not in tail.expected
        or (span in tail.proof_ranges and printed_kind(r.printed, screened_tactics) == "command")
        for span, r in zip(observed, ran)
    )
    if exhausted(output):
        return Outcome(fail(ErrorClass.MEMORY, "coqtop ran out of memory or stack"), session_suspect=True), stray
    problems = errors(output, done)
    if problems:
        return Outcome(fail(ErrorClass.COMPILE_ERROR, clip(problems[0]))), stray
    if stray or tuple(observed) != tail.expected:
        return Outcome(fail(ErrorClass.PROTOCOL_VIOLATION, "Coq ran other sentences than the screen's")), True
    check, report = ran[-3], ran[-2]
    axioms, unknown = read_assumptions(output[check.line_end : report.line_start])
    if unknown:
        return Outcome(fail(ErrorClass.PROTOCOL_VIOLATION, clip(f"assumptions report not accepted: {unknown}"))), False
    extra = sorted(axioms - criteria.axioms)
    if extra:
        detail = clip(f"proof rests on axioms the row does not allow: {', '.join(extra)}")
        return Outcome(fail(ErrorClass.WRONG_ANSWER, detail)), False
    detail = (
        f"proved using the allowed axioms {sorted(axioms)}" if axioms else "proved, closed under the global context"
    )
    return Outcome(VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, detail)), False


def _row_error(query: Query, detail: str) -> Outcome:
    return Outcome(verifier_error(f"query {query.id!r}: {clip(detail)}"), session_suspect=True)


class CoqVerifier(SandboxedVerifier):
    """Verifier for ``{"type": "coq", ...}`` rows (see the module docstring)."""

    name = "coq"
    self_check = (SELF_CHECK, SELF_CHECK_PROOF)
    limits = SandboxLimits(wall_s=CHECK_TIMEOUT_S)
    answer_noun = "proof"

    def __init__(
        self, *, check_timeout_s: float = CHECK_TIMEOUT_S, memory_mb: int = SESSION_LIMITS.memory_mb,
        recycle_at: float = RECYCLE_AT, recycle_after_checks: int = RECYCLE_AFTER_CHECKS,
    ) -> None:  # fmt: skip
        """``memory_mb``: the session's address-space cap; ``recycle_at``: the share of it above which
        a session is replaced after a check; ``recycle_after_checks``: the checks after which it is
        replaced whatever it holds, 0 = never (module docstring)."""
        self.check_timeout_s = check_timeout_s
        self.session_limits = replace(SESSION_LIMITS, memory_mb=memory_mb)
        self.recycle_at = recycle_at
        self.recycle_after_checks = recycle_after_checks
        self._session: CoqSession | None = None
        self.sessions_started = 0
        self.reruns = 0
        """Checks run again on a fresh session because the used one may have been to blame."""
        self._lock = threading.Lock()  # one coqtop: one check at a time

    def _answer(self, completion: str) -> str:
        return extract_proof(completion)

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[CoqCriteria, Screened]:
        """A result when the row or the screen decides, with or without Coq; else (criteria, screened)."""
        prepared = self._criteria_and_answer(query, completion, CoqCriteria.from_dict)
        if isinstance(prepared, VerifierResult):
            return prepared
        criteria, proof = prepared
        screened = screen(proof, defined_tactics(criteria.preamble))
        if isinstance(screened, str):
            return fail(ErrorClass.PROTOCOL_VIOLATION, clip(screened))
        return criteria, screened

    def _run_prepared(self, query: Query, prepared: tuple[CoqCriteria, Screened]) -> VerifierResult:
        with self._lock:
            try:
                return self._run_screened(query, *prepared)
            except SandboxUnavailable as error:
                return unavailable(str(error))

    def _run_screened(self, query: Query, criteria: CoqCriteria, screened: Screened) -> VerifierResult:
        """Run a screened proof; again on a fresh session if the first ran on a used one and the
        session may be to blame."""
        while True:
            session = self._ready_session()
            fresh = session.checks == 0
            outcome = self._check(session, query, criteria, screened)
            if not session.alive or self._spent(session):
                self._drop()
            if fresh or not outcome.session_suspect:
                return outcome.result
            self._drop()
            self.reruns += 1

    def _ready_session(self) -> CoqSession:
        if self._session is None:
            self._session = CoqSession(self.session_limits, self.check_timeout_s)
            self.sessions_started += 1
        return self._session

    def _spent(self, session: CoqSession) -> bool:
        if self.recycle_after_checks and session.checks >= self.recycle_after_checks:
            return True
        cpu_budget_s = self.session_limits.cpu_s - 3 * self.check_timeout_s
        return session.spent(self.session_limits.memory_mb, self.recycle_at, cpu_budget_s)

    def _drop(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def _check(self, session: CoqSession, query: Query, criteria: CoqCriteria, screened: Screened) -> Outcome:
        session.checks += 1
        try:
            if session.preamble != criteria.preamble:
                problem = session.load(criteria.preamble)
                if problem:
                    return _row_error(query, f"the coq preamble does not load: {problem}")
            mark, module = name("mark"), name("check")
            head, stated = session.ask(f"Definition {mark} := 0.\nModule {module}.\n{criteria.statement}\n")
        except SessionEnded as ended:
            return _row_error(query, f"coqtop failed on the preamble or statement: {ended.reason}")
        problems = errors(head, stated)
        if problems:
            if not session.reset(mark):
                session.close()
            return _row_error(query, f"the coq statement does not elaborate: {problems[0]}")
        outcome, stray = self._prove(session, criteria, screened, module)
        if not session.alive:  # killed on this proof (timeout, output cap) or died while proving
            return outcome
        if not session.reset(mark):
            session.close()
            return Outcome(
                fail(ErrorClass.PROTOCOL_VIOLATION, "the proof left coqtop in a state a reset does not undo"), True
            )
        if stray:
            session.close()  # Coq ran something the screen did not see: never reuse this coqtop
        return outcome

    def _prove(
        self, session: CoqSession, criteria: CoqCriteria, screened: Screened, module: str
    ) -> tuple[Outcome, bool]:
        done = name("done")
        tail = build_tail(screened, module, criteria.name, done)
        try:
            output = session.process.exchange(
                tail.text, f"Error: {done} not a defined object.".encode(), self.check_timeout_s
            )
        except SessionEnded as ended:
            if ended.reason.startswith("no answer"):
                return Outcome(fail(ErrorClass.TIMEOUT, f"coqtop killed: {ended.reason}")), False
            if ended.reason.startswith("output over"):
                return Outcome(fail(ErrorClass.OUTPUT_LIMIT, f"coqtop killed: {ended.reason}")), False
            return Outcome(fail(ErrorClass.RUNTIME_ERROR, f"coqtop ended on this proof: {ended.reason}"), True), False
        return judge(output.decode("utf-8", "replace"), tail, criteria, done, screened.tactics)

    def close(self) -> None:
        with self._lock:
            self._drop()
