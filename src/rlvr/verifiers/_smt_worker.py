"""The z3 job that runs inside ``WorkerPool`` processes (never in the trainer's process).

Imports z3 and the standard library only (no ``rlvr.types``: torch must stay out of workers).
A completion's values and terms reach z3's SMT-LIB parser here, behind the pool's memory cap and
hard kill. Results are plain strings equal to ``Verdict`` / ``ErrorClass`` values, converted back
to enums by ``rlvr.verifiers.smt``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from rlvr.verifiers._text import clip

Judgement = tuple[str, str, str, list[tuple[str, bool, str]]]
"""(verdict value, error class value, one-line detail, [(test name, passed, detail)])."""

MEMORY_MAX_MB = 1024
"""z3's own allocation cap, below the pool's address-space limit: z3 then gives up cleanly."""

_TIMEOUT_REASONS = ("timeout", "canceled", "max. memory exceeded")

z3.set_param("memory_max_size", MEMORY_MAX_MB)


class RowError(Exception):
    """The row's own SMT-LIB is broken: the verifier cannot judge (an ``error`` result)."""


def message(error: z3.Z3Exception) -> str:
    """z3's error text as one line (it arrives as bytes, with newlines)."""
    value = error.value.decode("utf-8", "replace") if isinstance(error.value, bytes) else str(error.value)
    return " ".join(value.split())


def _parse(text: str) -> list[z3.BoolRef]:
    return list(z3.parse_smt2_string(text))


def _parse_row(text: str) -> list[z3.BoolRef]:
    try:
        return _parse(text)
    except z3.Z3Exception as error:
        raise RowError(clip(f"row's SMT-LIB does not parse: {message(error)}", 160)) from error


def free_constants(assertions: list[z3.ExprRef]) -> dict[str, z3.ExprRef]:
    """Uninterpreted 0-ary symbols in ``assertions`` by name (bound variables excluded).

    Walks the expression DAG once per node (by AST id), so shared subterms cost nothing extra.
    """
    found: dict[str, z3.ExprRef] = {}
    seen: set[int] = set()
    stack: list[z3.ExprRef] = list(assertions)
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if z3.is_quantifier(node):
            stack.append(node.body())
        elif z3.is_app(node):
            decl = node.decl()
            if decl.kind() == z3.Z3_OP_UNINTERPRETED:
                if decl.arity() > 0:
                    raise RowError(f"model mode supports constants only, not the function {decl.name()}")
                found[decl.name()] = node
            stack.extend(node.children())
    return found


def value_of(constant: z3.ExprRef, text: str) -> z3.ExprRef:
    """``text`` (a literal) as a z3 value of ``constant``'s sort; ValueError if it is not one."""
    sort = constant.sort()
    if z3.is_int(constant):
        return z3.IntVal(int(text))  # int() accepts "-3" and rejects "1.5"; the host capped the length
    if z3.is_real(constant):
        return z3.RealVal(text)
    if z3.is_bool(constant):
        if text not in ("true", "false"):
            raise ValueError("not true/false")
        return z3.BoolVal(text == "true")
    if z3.is_bv(constant):
        size = sort.size()
        if text.startswith(("#x", "#b")):
            digits, base = text[2:], 16 if text[1] == "x" else 2
            if len(digits) * (4 if base == 16 else 1) != size:
                raise ValueError(f"literal width is not {size} bits")
            return z3.BitVecVal(int(digits, base), size)
        number = int(text)
        if not -(2 ** (size - 1)) <= number < 2**size:
            raise ValueError(f"out of range for {size} bits")
        return z3.BitVecVal(number, size)
    raise ValueError(f"values of sort {sort} are not supported")


def _decide(formula: z3.BoolRef, timeout_ms: int) -> tuple[str, str]:
    """("true" | "false" | "unknown", reason) for a closed formula; simplify first, the solver if needed."""
    reduced = z3.simplify(formula)
    if z3.is_true(reduced):
        return "true", ""
    if z3.is_false(reduced):
        return "false", ""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(reduced)
    answer = solver.check()
    if answer == z3.sat:
        return "true", ""
    if answer == z3.unsat:
        return "false", ""
    return "unknown", solver.reason_unknown()


def _unknown(reason: str, tests: list[tuple[str, bool, str]]) -> Judgement:
    error_class = "timeout" if reason in _TIMEOUT_REASONS else "none"
    return "unknown", error_class, clip(f"z3 returned unknown ({reason})"), tests


def judge_model(declarations: str, constraints: str, assignment: list[tuple[str, str]],
                timeout_ms: int) -> Judgement:
    """Does the claimed assignment make every assertion true? Substitution, then evaluation."""
    assertions = _parse_row(declarations + "\n" + constraints)
    if not assertions:
        raise RowError("constraints contain no (assert ...)")
    constants = free_constants(assertions)
    claimed = dict(assignment)
    unknown_names = sorted(set(claimed) - set(constants))
    if unknown_names:
        return "fail", "unparseable", clip(f"no variable named {unknown_names[0]!r}"), []
    missing = sorted(set(constants) - set(claimed))
    if missing:
        return "fail", "wrong_answer", clip(f"partial assignment: no value for {', '.join(missing)}"), []
    pairs = []
    for name, text in assignment:
        try:
            pairs.append((constants[name], value_of(constants[name], text)))
        except (ValueError, z3.Z3Exception) as error:
            why = message(error) if isinstance(error, z3.Z3Exception) else str(error)
            sort = constants[name].sort()
            return "fail", "unparseable", clip(f"{name} = {text} is not a {sort} value ({why})", 160), []
    tests, reasons = [], []
    for index, assertion in enumerate(assertions):
        truth, reason = _decide(z3.substitute(assertion, *pairs), timeout_ms)
        tests.append((f"assert[{index}]", truth == "true", "" if truth == "true" else truth))
        if truth == "unknown":
            reasons.append(reason)
    violated = [name for name, passed, detail in tests if detail == "false"]
    if violated:
        return "fail", "wrong_answer", f"{len(violated)}/{len(tests)} assertions violated, first {violated[0]}", tests
    if reasons:
        return _unknown(reasons[0], tests)
    return "pass", "none", f"all {len(tests)} assertions hold", tests


def judge_equivalent(declarations: str, constraints: str, reference: str, answer: str,
                     timeout_ms: int) -> Judgement:
    """Is ``(distinct answer reference)`` unsat (under the row's constraints, if any)?"""
    row = declarations + "\n" + constraints + "\n"
    reference_sort = _parse_row(row + f"(assert (= {reference} {reference}))")[-1].arg(0).sort()
    try:
        # z3's parser coerces mixed sorts ((distinct b 1) becomes (ite b 1 0) != 1), so the answer's
        # own sort is read from a comparison with itself and must be the reference's exactly.
        answer_sort = _parse(row + f"(assert (= {answer} {answer}))")[-1].arg(0).sort()
        assertions = _parse(row + f"(assert (distinct {answer} {reference}))")
    except z3.Z3Exception as error:
        return "fail", "unparseable", clip(f"answer is not a term: {message(error)}", 160), []
    if answer_sort != reference_sort:
        return "fail", "unparseable", f"answer is of sort {answer_sort}, the reference of sort {reference_sort}", []
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*assertions)
    outcome = solver.check()
    if outcome == z3.unsat:
        return "pass", "none", "equivalent to the reference (distinct is unsat)", []
    if outcome == z3.sat:
        witness = clip(str(solver.model()).replace("\n", " "))
        return "fail", "wrong_answer", f"differs from the reference at {witness}", []
    return _unknown(solver.reason_unknown(), [])


JUDGES: dict[str, Callable[..., Judgement]] = {"model": judge_model, "equivalent": judge_equivalent}


def judge(mode: str, *args: Any) -> Judgement:
    """Entry point of a pool job: ``JUDGES[mode](*args)``; a broken row is an ``error`` judgement."""
    try:
        return JUDGES[mode](*args)
    except RowError as error:
        return "error", "infrastructure", str(error), []
