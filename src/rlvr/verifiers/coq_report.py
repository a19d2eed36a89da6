"""Reading what ``coqtop -q -time`` prints: which sentences it ran, its errors, its assumptions
report, and a fingerprint of its state. Pure text functions (the coq verifier's host side).

With ``-time`` coqtop prints, after each sentence it ran, ``Chars START - END [PRINTED] T secs
(...)``: the sentence's byte offsets in everything the session has read, and the sentence as Coq
parsed it, printed back from its syntax tree. A proof's own output (``idtac``, a goal) can imitate
such a line, but only before the real line of the sentence that printed it, so a forged line
breaks the exact, increasing chain the verifier requires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CHARS = re.compile(r"^(?:\S+ < )*Chars (\d+) - (\d+) \[(.*)\] [\d.]+ secs \([\d.]+u,[\d.]+s\)$", re.MULTILINE)
_PROMPT = re.compile(r"^(?:[^\s<]+ < )+", re.MULTILINE)
_FETCHING = re.compile(r"Fetching opaque proofs from disk for [\w'.]+")
_ENTRY = re.compile(r"([^\s:]+)( : .*)?")
_TYPE_LINE = re.compile(r"\s+: ")
EXHAUSTION = ("Out of memory", "Stack overflow")
"""Errors coqtop reports when the session, not the proof, may have run out (the session's address
space is capped; a long-lived one has less of it left): the check is run again on a fresh one."""


@dataclass(frozen=True)
class Ran:
    """One ``Chars`` line: a sentence coqtop ran."""

    start: int
    end: int
    printed: str
    line_start: int
    """Where the line starts and ends in the output (to cut out what a command printed)."""
    line_end: int


def sentences_ran(output: str) -> list[Ran]:
    return [Ran(int(m.group(1)), int(m.group(2)), m.group(3), m.start(), m.end()) for m in _CHARS.finditer(output)]


def errors(output: str, marker: str) -> list[str]:
    """Coq's error messages in ``output`` but the marker's own, each as its first non-empty line
    (a message may start on the line after ``Error:``)."""
    lines = output.splitlines()
    found = []
    for index, line in enumerate(lines):
        if "Error:" in line and marker not in line:
            rest = [line.split("Error:", 1)[1].strip(), *(later.strip() for later in lines[index + 1 : index + 4])]
            found.append(next((text for text in rest if text), "error"))
    return found


def exhausted(output: str) -> bool:
    return any(f"Error: {sign}" in output or f"Error:\n{sign}" in output for sign in EXHAUSTION)


def fingerprint(output: str, names: dict[str, str]) -> str:
    """``output`` without ``Chars`` lines (their offsets grow), prompts and blank lines, with each
    random name replaced by its role: equal fingerprints mean the same answers to the same probes."""
    text = _PROMPT.sub("", _CHARS.sub("", output))
    for name, role in names.items():
        text = text.replace(name, role)
    return "\n".join(line for line in text.splitlines() if line.strip())


def read_assumptions(report: str) -> tuple[set[str], str]:
    """The axiom names a ``Print Assumptions`` report lists, and the first line it does not
    understand ("" when none). Understood: "Fetching opaque proofs ..." notes, then exactly
    "Closed under the global context", or "Axioms:" and entries ``NAME : TYPE`` (Coq may break the
    line before ``:``, and the next line then starts with blanks and ``: ``; a type continues on
    indented lines). Anything else (a fixpoint "assumed to
    be guarded", an inductive "assumed to be positive", "relies on an unsafe hierarchy", "relies
    on definitional UIP", "Type hierarchy is collapsed", "Set is impredicative", an axiom "used in"
    a functor, another section) is not understood."""
    lines = [line for line in _PROMPT.sub("", report).splitlines() if line.strip() and not _FETCHING.fullmatch(line)]
    if lines == ["Closed under the global context"]:
        return set(), ""
    if not lines or lines[0] != "Axioms:" or len(lines) < 2:
        return set(), lines[0] if lines else "no assumptions report"
    names: set[str] = set()
    typed = True
    for line in lines[1:]:
        entry = _ENTRY.fullmatch(line)
        if entry and typed:  # a new entry: NAME : TYPE, or NAME alone with `` : TYPE`` next
            names.add(entry.group(1))
            typed = entry.group(2) is not None
        elif not typed and _TYPE_LINE.match(line):
            typed = True
        elif not (typed and line[:1].isspace()):
            return names, line
    return names, "" if typed else lines[-1]
