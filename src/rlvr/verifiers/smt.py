"""SMT answers checked by z3, in worker processes with a solver timeout AND a hard kill.

Two row modes (docs/verifiers.md, "smt"):

- ``{"type": "smt", "mode": "model", "declarations": "(declare-const x Int) ...",
  "constraints": "(assert ...) ..."}``: the completion's ``<answer>`` claims a satisfying
  assignment, ``x = 3, y = -2``. Every free constant of the constraints must get a literal of its
  sort; all assertions are decided together with the values substituted, and must hold whatever
  value SMT-LIB leaves to a division by zero. A claim is checked, never searched.
- ``{"type": "smt", "mode": "equivalent", "declarations": ..., "reference": "(+ x x)",
  "constraints": optional assumptions}``: the ``<answer>`` is an SMT-LIB term; it passes iff
  ``(distinct answer reference)`` is unsat (under the assumptions).

A completion's text reaches z3's parser, which is C++ and was never meant for hostile input, so
every z3 call runs in a ``WorkerPool`` (``_smt_worker.judge``) with an address-space cap and a
wall-clock kill, as math-verify does. z3's own ``timeout`` bounds each check first; the kill
catches what ignores it (the parser, ``simplify``). z3's ``unknown`` is ``Verdict.UNKNOWN``: not a
pass, not a fail, kept out of rewards and baselines (``VerifierResult.scorable``) and counted.

Whatever an answer does to z3 is that answer's ``fail``: out of memory (raised, or z3's exit with
status 101) is ``memory``, any other raise or death of the worker is ``runtime_error``, an overrun
is ``timeout``. ``error`` would keep the answer out of its reward and baseline, so it is left to
what does not follow the answer: a broken row, a worker that cannot start or was dead before the
job reached it, and a SIGKILL from outside (the host's OOM killer: z3's ``memory_max_size`` and
the pool's address-space cap bound what an answer can take, and the pool's own kills are timeouts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rlvr.types import ErrorClass, Query, TestOutcome, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import answer_or_fail, bad_criteria, fail, parse_criteria
from rlvr.verifiers.pooled import PooledVerifier, WorkerSettings
from rlvr.workers import JobOutcome

SMT_JOB = "rlvr.verifiers._smt_worker:judge"
"""By name, so that the trainer's process never imports z3."""

WARMUP = ("model", "(declare-const x Int)", "(assert (= x 1))", [("x", "1")], 100)

MAX_ANSWER_CHARS = 10_000
"""Longer answers are not parsed at all (``unparseable``); real assignments and terms are short."""
MAX_LITERAL_CHARS = 1_000

MODES = ("model", "equivalent")

Z3_MEMOUT_EXIT = 101
"""z3's exit status when it cannot allocate and cannot raise (ERR_MEMOUT, z3 src/util/error_codes.h)."""

_NAME = r"[A-Za-z_][A-Za-z0-9_.'$!?-]*"
_LITERAL = r"-?\d+/\d+|-?\d+(?:\.\d+)?|true|false|#x[0-9a-fA-F]+|#b[01]+"
_PAIR = re.compile(rf"\s*({_NAME})\s*=\s*({_LITERAL})\s*", re.ASCII)
_SEPARATOR = re.compile(r"[,;\n]")


@dataclass(frozen=True)
class SmtCriteria:
    """The ``verifier`` object of an smt row."""

    mode: str
    declarations: str
    constraints: str
    """Assertions to satisfy (model) or assumptions of the equivalence (equivalent; may be "")."""
    reference: str = ""
    """The term the answer must equal (equivalent mode only)."""

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> SmtCriteria:
        """Validated criteria; a ValueError says which key is wrong. z3 parses them in the worker."""
        mode = criteria.get("mode")
        if mode not in MODES:
            raise ValueError(f'"mode" must be one of {", ".join(MODES)}, got {mode!r}')
        declarations = criteria.get("declarations")
        if not isinstance(declarations, str) or not declarations.strip():
            raise ValueError('"declarations" must be a non-empty SMT-LIB string of (declare-const ...)')
        constraints = criteria.get("constraints", "" if mode == "equivalent" else None)
        if not isinstance(constraints, str) or (mode == "model" and not constraints.strip()):
            raise ValueError('"constraints" must be an SMT-LIB string of (assert ...)')
        reference = criteria.get("reference", "")
        if mode == "equivalent" and (not isinstance(reference, str) or check_term(reference)):
            raise ValueError(f'"reference" must be one SMT-LIB term, got {reference!r}')
        return cls(mode, declarations, constraints, reference if mode == "equivalent" else "")


def parse_assignment(answer: str) -> list[tuple[str, str]] | str:
    """``"x = 3, y = -2"`` as [("x", "3"), ("y", "-2")], or a one-line reason it is not one.

    Pairs are separated by commas, semicolons or newlines; values are literals only (integers,
    decimals, fractions ``1/2``, ``true``/``false``, ``#x..``/``#b..`` bit-vectors), never terms,
    so the claim is a model and not a formula for z3 to solve.
    """
    pairs: list[tuple[str, str]] = []
    for item in _SEPARATOR.split(answer):
        if not item.strip():
            continue
        match = _PAIR.fullmatch(item)
        if match is None:
            return f"not of the form name = literal: {clip(item.strip())!r}"
        name, value = match.groups()
        if len(value) > MAX_LITERAL_CHARS:
            return f"the value of {name} is over {MAX_LITERAL_CHARS} characters"
        if any(name == seen for seen, _ in pairs):
            return f"{name} is assigned twice"
        pairs.append((name, value))
    return pairs or "no assignment"


def check_term(term: str) -> str:
    """ "" if ``term`` is ONE balanced s-expression or atom, else why not.

    The term is pasted into ``(assert (distinct TERM REFERENCE))``; balance and a single item
    keep it from closing that command and adding its own (``0) (assert false``). Comments,
    quoted symbols and string literals (``;``, ``|``, ``"``) are refused: they would hide
    parentheses from this count.
    """
    if not term.strip():
        return "empty term"
    if any(char in term for char in ';|"'):
        return "comments, quoted symbols and strings are not allowed in a term"
    depth, items = 0, 0
    for token in re.findall(r"\(|\)|[^\s()]+", term):
        if token == "(":
            items += depth == 0
            depth += 1
        elif token == ")":
            depth -= 1
            if depth < 0:
                return "unbalanced ')'"
        else:
            items += depth == 0
    if depth:
        return "unbalanced '('"
    return "" if items == 1 else f"{items} terms, expected one"


class SmtVerifier(PooledVerifier):
    """Verifier for ``{"type": "smt", ...}`` rows; z3 runs only in the worker processes.

    ``solver_timeout_ms`` is z3's own limit per check; ``kill_after_s`` is the pool's hard
    wall-clock limit per completion. ``unknown_as_fail`` turns ``unknown`` into ``fail``/``timeout``
    for training runs that must not let a policy hide wrong answers behind unknowns.
    """

    name = "smt"
    job = SMT_JOB
    warmup = WARMUP
    default_workers = WorkerSettings(kill_after_s=5.0, memory_limit_mb=2048)
    outcome_words = ("z3 killed", "z3 worker failed", "z3 failed on this answer")

    def __init__(self, *, solver_timeout_ms: int = 1000, unknown_as_fail: bool = False, **workers: Any) -> None:
        """``workers``: kill_after_s (default 5), pool_size, start_method, memory_limit_mb (2048)."""
        super().__init__(**workers)
        self.solver_timeout_ms = solver_timeout_ms
        self.unknown_as_fail = unknown_as_fail

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[Any, ...]:
        """A result when z3 is not needed, else the worker job's arguments."""
        criteria = parse_criteria(query, SmtCriteria.from_dict, "smt")
        if isinstance(criteria, VerifierResult):
            return criteria
        answer = answer_or_fail(completion, max_chars=MAX_ANSWER_CHARS)
        if isinstance(answer, VerifierResult):
            return answer
        if criteria.mode == "model":
            assignment = parse_assignment(answer)
            if isinstance(assignment, str):
                return fail(ErrorClass.UNPARSEABLE, assignment)
            return ("model", criteria.declarations, criteria.constraints, assignment, self.solver_timeout_ms)
        problem = check_term(answer)
        if problem:
            return fail(ErrorClass.UNPARSEABLE, f"answer is not one SMT-LIB term: {problem}")
        return (
            "equivalent",
            criteria.declarations,
            criteria.constraints,
            criteria.reference,
            answer,
            self.solver_timeout_ms,
        )

    def _from_value(self, query: Query, value: Any) -> VerifierResult:
        """z3's verdict; ``unknown`` is neither pass nor fail, unless ``unknown_as_fail``."""
        verdict, error_class, detail, tests = value
        if verdict == "error":
            return bad_criteria(query, "smt", detail)
        outcomes = [TestOutcome(name, passed, test_detail) for name, passed, test_detail in tests]
        score = 1.0 if verdict == "pass" else 0.0
        result = VerifierResult(Verdict(verdict), score, ErrorClass(error_class), detail, outcomes)
        if result.verdict is Verdict.UNKNOWN and self.unknown_as_fail:
            result.verdict, result.error_class = Verdict.FAIL, ErrorClass.TIMEOUT
        return result

    def _broken_by_answer(self, outcome: JobOutcome) -> ErrorClass:
        """``memory`` when z3 ran out of it (the worker raises MemoryError for z3's own "out of
        memory"; z3 exits with 101 when it cannot raise), else ``runtime_error``."""
        out_of_memory = outcome.exception == "MemoryError" or outcome.exitcode == Z3_MEMOUT_EXIT
        return ErrorClass.MEMORY if out_of_memory else ErrorClass.RUNTIME_ERROR
