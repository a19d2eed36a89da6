"""Coq proofs, checked by a persistent ``coqtop`` in the bubblewrap sandbox.

Rows look like ``{"type": "coq", "statement": "Theorem add_comm' : forall n m : nat, n + m = m +
n.", "preamble": "Require Import Lia."}`` (``preamble`` optional; ``axioms`` optional, the names
of axioms a proof may rest on, e.g. ``["classic"]`` with ``Require Import Classical.``; default
none). The completion's proof is the last ```` ```coq ```` block, else its ``<answer>``: the tactic
script, optionally wrapped in ``Proof.`` ... ``Qed.`` (the wrapping is dropped). The host sends

    {preamble}
    Module Rlvr_{nonce}.
    {statement}
    Proof.
    Print Rlvr_stated_{nonce}.        (an error naming the nonce: the statement elaborated)
    {proof}
    Qed.
    End Rlvr_{nonce}.
    Check Rlvr_{nonce}.{name}.
    Print Assumptions Rlvr_{nonce}.{name}.
    Print Rlvr_done_{nonce}.          (the end of this check's output)

then ``Abort All. Reset Initial.`` before the next check, and passes the proof only if no sentence
after the statement errs and the one assumptions report
after the nonce-named ``Check`` is "Closed under the global context" or lists only the row's
``axioms``. The nonce is drawn after the proof is written, so nothing the proof prints can pose as
the report or a marker.

The proof text is screened first, on every path and with or without a Coq install: each sentence
(split at a period followed by a space or the end, after bullets ``-``/``+``/``*`` and braces) must
start with a tactic, never a command. Coq's commands are capitalised (``Qed``, ``Admitted``,
``Abort``, ``Axiom``, ``Definition``, ``Notation``, ``Set``, ``Drop``, ``Load``, ``Require``,
``Declare``, ``Universe``, ...) or start with an attribute (``#[local]``), and its tactics start
with a lowercase letter, so a sentence must start with one (or a goal selector ``2:``, or ``(``); so are the words in ``BANNED_WORDS`` anywhere (``admit``, ``give_up``, the
``*_no_check`` and ``native_*`` tactics), comments and strings (which would hide a period from the
split). A refused proof is ``fail``/``protocol_violation``.

One ``coqtop`` serves many checks: ``Reset Initial`` returns it to its state after start-up before
each one, and a proof cannot run a command to change that. A check that overruns kills the session
(the kernel ends its pid namespace); the next check starts a fresh one.
"""

from __future__ import annotations

import re
import secrets
import shutil
import threading
from dataclasses import dataclass
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxUnavailable
from rlvr.sandbox.session import SandboxSession, SessionEnded
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import extract_answer
from rlvr.verifiers.sandboxed import SandboxedVerifier, fail

SESSION_LIMITS = SandboxLimits(wall_s=0, cpu_s=900, memory_mb=4096, processes=8, output_bytes=4 << 20)
"""For the whole session: coqtop with Lia loaded holds about 420 MB; the CPU budget covers
``CHECKS_PER_SESSION`` checks, after which the session is replaced."""

CHECK_TIMEOUT_S = 20.0
"""Wall clock per check; beyond it the session is killed and the proof fails with ``timeout``."""
START_TIMEOUT_S = 60.0
CHECKS_PER_SESSION = 200
MARK = "Rlvr_after_preamble"
"""Defined right after a row's preamble: ``Reset`` to it undoes a check and keeps the libraries the
preamble loaded (``Require Import Lia`` takes 1.5-2 s even when reloaded in one process)."""

BANNED_WORDS = (
    "admit", "give_up", "Admitted", "Abort",
    # tactics that skip a check or trust compiled code
    "exact_no_check", "vm_cast_no_check", "native_cast_no_check", "change_no_check", "native_compute",
    "vm_compute_no_check",
)  # fmt: skip
"""Refused as whole words anywhere in the proof (commands are refused by the capital rule too)."""

_BANNED = re.compile(rf"(?<![\w'])({'|'.join(map(re.escape, BANNED_WORDS))})(?![\w'])")
_SENTENCE_END = re.compile(r"\.(?=\s|$)")
_LEADING = re.compile(r"^[\s\-+*{}]*")
_TACTIC_START = re.compile(r"[a-z0-9(\[]")
"""What a tactic sentence starts with: a lowercase ASCII letter (every tactic), a goal selector
(``2:``, ``[x]:``) or a parenthesis. Commands start with a capital (``Qed``), attributes with ``#[``."""
_STATEMENT = re.compile(
    r"\s*(Theorem|Lemma|Fact|Remark|Corollary|Proposition|Example)\s+([A-Za-z_][\w']*)[\s(:{]", re.ASCII
)
_FENCE = re.compile(r"```[ \t]*(?:coq|Coq)[ \t]*\r?\n(.*?)```", re.DOTALL)
_WRAPPED = re.compile(r"^\s*Proof\s*\.\s*(.*?)\s*(?:Qed|Defined)\s*\.\s*$", re.DOTALL)

SELF_CHECK = Query("coq-self-check", "", {"type": "coq", "statement": "Theorem rlvr_self_check : 2 + 2 = 4."})
SELF_CHECK_PROOF = "<answer>reflexivity.</answer>"


@dataclass(frozen=True)
class CoqCriteria:
    """The ``verifier`` object of a coq row."""

    statement: str
    name: str
    preamble: str = ""
    axioms: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> CoqCriteria:
        statement = criteria.get("statement")
        match = _STATEMENT.match(statement) if isinstance(statement, str) else None
        if match is None or not statement.rstrip().endswith(".") or ":=" in statement:
            raise ValueError(f'"statement" must be "Theorem NAME : TYPE." without ":=", got {statement!r}')
        preamble = criteria.get("preamble", "")
        if not isinstance(preamble, str):
            raise ValueError(f'"preamble" must be a string of Coq commands, got {preamble!r}')
        axioms = criteria.get("axioms", [])
        if not isinstance(axioms, list) or not all(isinstance(a, str) for a in axioms):
            raise ValueError(f'"axioms" must be a list of axiom names, got {axioms!r}')
        return cls(statement.strip(), match.group(2), preamble, frozenset(axioms))


def extract_proof(completion: str) -> str:
    """The last ```` ```coq ```` block, else the ``<answer>`` content, else ""; a ``Proof.`` ...
    ``Qed.`` wrapping is dropped."""
    blocks = _FENCE.findall(completion)
    proof = blocks[-1].strip() if blocks else (extract_answer(completion) or "")
    wrapped = _WRAPPED.match(proof)
    return wrapped.group(1) if wrapped else proof


def screen(proof: str) -> str:
    """Why ``proof`` is refused before Coq sees it, or "" (module docstring)."""
    if "(*" in proof or '"' in proof:
        return "comments and strings are not allowed in a proof"
    banned = [match.group(0) for match in _BANNED.finditer(proof)]
    if banned:
        return f"proof uses banned {', '.join(dict.fromkeys(banned))}"
    for sentence in _SENTENCE_END.split(proof):
        body = _LEADING.sub("", sentence)
        if body and not _TACTIC_START.match(body):
            return f"proof sentences must be tactics; {clip(body.split()[0])!r} starts a command"
    if not _SENTENCE_END.search(proof):
        return "proof has no sentence (tactics end with a period)"
    return ""


FINDLIB_CONF = "/sandbox/ocamlfind.conf"
"""coqtop loads its tactic plugins (lia's micromega, ring) through findlib, which reads its
configuration from /etc, and the sandbox has no /etc: the host's file is copied in."""


def findlib_conf() -> bytes:
    try:
        with open("/etc/ocamlfind.conf", "rb") as handle:
            return handle.read()
    except OSError:
        return b'destdir="/usr/lib/ocaml"\npath="/usr/lib/ocaml"\n'


def find_coqtop() -> str:
    found = shutil.which("coqtop", path="/usr/local/bin:/usr/bin:/bin")
    if found is None:
        raise SandboxUnavailable("no Coq: `coqtop` is not on PATH (Debian/Ubuntu: `apt-get install coq`)")
    return found


class CoqVerifier(SandboxedVerifier):
    """Verifier for ``{"type": "coq", ...}`` rows (see the module docstring)."""

    name = "coq"
    self_check = (SELF_CHECK, SELF_CHECK_PROOF)
    limits = SandboxLimits(wall_s=CHECK_TIMEOUT_S)

    def __init__(self, *, check_timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.check_timeout_s = check_timeout_s
        self._session: SandboxSession | None = None
        self._preamble: str | None = None
        """The preamble loaded in the session, up to MARK; None: none (after start-up or a failed load)."""
        self._checks = 0
        self._lock = threading.Lock()  # one coqtop: one check at a time

    def _screen(self, query: Query, completion: str) -> VerifierResult | None:
        prepared = _prepare(query, completion)
        return prepared if isinstance(prepared, VerifierResult) else None

    def _verify(self, query: Query, completion: str) -> VerifierResult:
        prepared = _prepare(query, completion)
        if isinstance(prepared, VerifierResult):
            return prepared
        criteria, proof = prepared
        with self._lock:
            try:
                session = self._ready_session()
                return self._check(session, query, criteria, proof)
            except SandboxUnavailable as error:
                return VerifierResult(Verdict.UNAVAILABLE, 0.0, ErrorClass.INFRASTRUCTURE, str(error))

    def _ready_session(self) -> SandboxSession:
        if self._session is not None and (not self._session.alive or self._checks >= CHECKS_PER_SESSION):
            self._session.close()
            self._session = None
        if self._session is None:
            session = SandboxSession(
                [find_coqtop(), "-q"],
                limits=SESSION_LIMITS,
                files={FINDLIB_CONF: findlib_conf()},
                env={"OCAMLFIND_CONF": FINDLIB_CONF},
            )
            marker = f"Rlvr_started_{secrets.token_hex(8)}"
            try:
                session.exchange(
                    f"Print {marker}.\n", f"Error: {marker} not a defined object.".encode(), START_TIMEOUT_S
                )
            except SessionEnded as ended:
                raise SandboxUnavailable(f"coqtop did not start in the sandbox: {ended.reason}") from None
            self._session, self._checks, self._preamble = session, 0, None
        return self._session

    def _check(self, session: SandboxSession, query: Query, criteria: CoqCriteria, proof: str) -> VerifierResult:
        self._checks += 1
        nonce = secrets.token_hex(8)
        module = f"Rlvr_{nonce}"
        stated, done = f"Rlvr_stated_{nonce}", f"Rlvr_done_{nonce}"
        if self._preamble != criteria.preamble:  # load it once; checks with the same one reset to MARK
            self._preamble = None
            head = f"Abort All.\nReset Initial.\n{criteria.preamble}\nDefinition {MARK} := 0.\n"
        else:
            head = ""
        head += f"Module {module}.\n{criteria.statement}\nProof.\nPrint {stated}.\n"
        tail = (
            f"{proof}\nQed.\nEnd {module}.\nCheck {module}.{criteria.name}.\n"
            f"Print Assumptions {module}.{criteria.name}.\nPrint {done}.\n"
        )
        try:
            before = session.exchange(head, f"Error: {stated} not a defined object.".encode(), self.check_timeout_s)
        except SessionEnded as ended:
            return VerifierResult(
                Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, f"coqtop failed on the statement: {ended.reason}"
            )
        errors = _errors(before, stated)
        if errors:
            self._reset(session, nonce)
            detail = f"query {query.id!r} has a bad coq statement or preamble: {clip(errors[0])}"
            return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
        self._preamble = criteria.preamble
        try:
            output = session.exchange(tail, f"Error: {done} not a defined object.".encode(), self.check_timeout_s)
        except SessionEnded as ended:
            if ended.reason.startswith("no answer"):
                return fail(ErrorClass.TIMEOUT, f"coqtop killed: {ended.reason}")
            return fail(ErrorClass.RUNTIME_ERROR, f"coqtop ended on this proof: {ended.reason}")
        finally:
            self._reset(session, nonce)
        return _judge(output.decode("utf-8", "replace"), module, criteria, done)

    def _reset(self, session: SandboxSession, nonce: str) -> None:
        """Back to the state right after the preamble (open proofs dropped, the check's module and
        everything after MARK undone), or after start-up if the preamble did not load; a session
        that does not confirm it is killed, and the next check starts afresh."""
        if not session.alive:
            return
        clean = f"Rlvr_clean_{nonce}"
        back = f"Reset {MARK}.\nDefinition {MARK} := 0." if self._preamble is not None else "Reset Initial."
        try:
            reply = session.exchange(
                f"Abort All.\n{back}\nPrint {clean}.\n",
                f"Error: {clean} not a defined object.".encode(),
                self.check_timeout_s,
            )
        except SessionEnded:
            return  # dead: _ready_session replaces it
        if _errors(reply.split(b"Abort All", 1)[-1].split(b"\n", 2)[-1], clean):
            session.close()  # a reset that erred leaves state behind: never reuse it

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None


def _errors(output: bytes | str, marker: str) -> list[str]:
    """Coq's error messages in ``output`` but the marker's own, each as its first non-empty line
    (a message may start on the line after ``Error:``)."""
    lines = (output.decode("utf-8", "replace") if isinstance(output, bytes) else output).splitlines()
    errors = []
    for index, line in enumerate(lines):
        if "Error:" in line and marker not in line:
            rest = [line.split("Error:", 1)[1].strip(), *(later.strip() for later in lines[index + 1 : index + 4])]
            errors.append(next((text for text in rest if text), "error"))
    return errors


def _judge(output: str, module: str, criteria: CoqCriteria, done: str) -> VerifierResult:
    errors = _errors(output, done)
    if errors:
        return fail(ErrorClass.COMPILE_ERROR, clip(errors[0]))
    checked = f"{module}.{criteria.name}\n"
    if output.count(checked) != 1:
        return fail(ErrorClass.PROTOCOL_VIOLATION, "the checked theorem was not reported exactly once")
    report = output.split(checked, 1)[1]
    if "Closed under the global context" in report.split("Axioms:", 1)[0]:
        return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, "proved, closed under the global context")
    if "Axioms:" not in report:
        return fail(ErrorClass.PROTOCOL_VIOLATION, "no assumptions report after the checked theorem")
    listed = report.split("Axioms:", 1)[1]
    axioms = {match.group(1) for match in re.finditer(r"^(?:\S+ < )*([A-Za-z_][\w'.]*) :", listed, re.MULTILINE)}
    extra = sorted(axioms - criteria.axioms)
    if extra:
        return fail(ErrorClass.WRONG_ANSWER, clip(f"proof rests on axioms the row does not allow: {', '.join(extra)}"))
    return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, f"proved using the allowed axioms {sorted(axioms)}")


def _prepare(query: Query, completion: str) -> VerifierResult | tuple[CoqCriteria, str]:
    try:
        criteria = CoqCriteria.from_dict(query.verifier)
    except ValueError as error:
        detail = f"query {query.id!r} has bad coq criteria: {error}"
        return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.INFRASTRUCTURE, detail)
    proof = extract_proof(completion)
    if not proof.strip():
        return fail(ErrorClass.NO_ANSWER, "no proof in completion")
    refused = screen(proof)
    if refused:
        return fail(ErrorClass.PROTOCOL_VIOLATION, clip(refused))
    return criteria, proof
