"""The z3 job that runs inside ``WorkerPool`` processes (never in the trainer's process).

Imports z3 and the standard library only (no ``rlvr.types``: torch must stay out of workers).
A completion's values and terms reach z3's SMT-LIB parser here, behind the pool's memory cap and
hard kill. Results are plain strings equal to ``Verdict`` / ``ErrorClass`` values, converted back
to enums by ``rlvr.verifiers.smt``.

What an answer does to z3 is not caught here: z3 running out of memory is raised as
``MemoryError`` (z3's Python API raises ``Z3Exception("out of memory")`` for it), so that the pool
reports it as the job's and retires this process, whose z3 then refuses every later allocation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from rlvr.verifiers._text import clip

Judgement = tuple[str, str, str, list[tuple[str, bool, str]]]
"""(verdict value, error class value, one-line detail, [(test name, passed, detail)])."""

MEMORY_MAX_MB = 1024
"""z3's own allocation cap, below the pool's address-space limit: z3 then gives up cleanly
(it raises "out of memory", or exits with status 101 when it cannot raise), and it holds even
when the pool runs without an address-space limit."""

_TIMEOUT_REASONS = ("timeout", "canceled", "max. memory exceeded")

z3.set_param("memory_max_size", MEMORY_MAX_MB)


class RowError(Exception):
    """The row's own SMT-LIB is broken: the verifier cannot judge (an ``error`` result)."""


def message(error: z3.Z3Exception) -> str:
    """z3's error text as one line (it arrives as bytes, with newlines)."""
    value = error.value.decode("utf-8", "replace") if isinstance(error.value, bytes) else str(error.value)
    return " ".join(value.split())


def _raise_if_out_of_memory(error: z3.Z3Exception) -> None:
    if message(error) == "out of memory":
        raise MemoryError(f"z3 ran out of memory (memory_max_size {MEMORY_MAX_MB} MB)") from error


def _parse(text: str) -> list[z3.BoolRef]:
    try:
        return list(z3.parse_smt2_string(text))
    except z3.Z3Exception as error:
        _raise_if_out_of_memory(error)  # not a parse error: the answer's fault, and z3 is now spent
        raise


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


def _counterexample(closed: list[z3.BoolRef], timeout_ms: int) -> tuple[str, z3.ModelRef | None, str]:
    """Can the closed assertions be false together? ("holds" | "violated" | "unknown", witness, reason).

    ONE decision for all of them: unsat of ``(not (and A1 ... An))``. Every constant already has
    the claimed value, so the only freedom left is what SMT-LIB leaves unspecified: ``(div x 0)``,
    ``(mod x 0)`` and ``(/ x 0)`` are total functions of unspecified value (SMT-LIB 2.6, theories
    Ints and Reals). The claim therefore holds only if it holds whatever those values are: a zero
    divisor can neither take one value in one assertion and another in the next (the solver sees
    one function for all) nor make a constraint true by landing on a lucky value.
    """
    reduced = z3.simplify(z3.And(*closed))
    if z3.is_true(reduced):  # the common right answer: no solver needed
        return "holds", None, ""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(z3.Not(reduced))
    answer = solver.check()
    if answer == z3.unsat:
        return "holds", None, ""
    if answer == z3.sat:
        return "violated", solver.model(), ""
    return "unknown", None, solver.reason_unknown()


def _assertion_tests(closed: list[z3.BoolRef], witness: z3.ModelRef | None) -> list[tuple[str, bool, str]]:
    """One outcome per assertion, for people: those false in the decision's witness are violated."""
    tests = []
    for index, assertion in enumerate(closed):
        held = witness is None or not z3.is_false(witness.eval(assertion, model_completion=True))
        tests.append((f"assert[{index}]", held, "" if held else "false"))
    return tests


def _unknown(reason: str, tests: list[tuple[str, bool, str]]) -> Judgement:
    error_class = "timeout" if reason in _TIMEOUT_REASONS else "none"
    return "unknown", error_class, clip(f"z3 returned unknown ({reason})"), tests


def judge_model(declarations: str, constraints: str, assignment: list[tuple[str, str]], timeout_ms: int) -> Judgement:
    """Does the claimed assignment make every assertion true, whatever a zero divisor yields?

    The values are substituted, then all assertions are decided at once (``_counterexample``).
    """
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
    closed = [z3.substitute(assertion, *pairs) for assertion in assertions]
    outcome, witness, reason = _counterexample(closed, timeout_ms)
    if outcome == "unknown":
        return _unknown(reason, [(f"assert[{i}]", False, "unknown") for i in range(len(closed))])
    tests = _assertion_tests(closed, witness)
    if outcome == "holds":
        return "pass", "none", f"all {len(tests)} assertions hold", tests
    violated = [name for name, passed, _ in tests if not passed]
    if not violated:  # e.g. two assertions that need different values of the same (div 1 0)
        return "fail", "wrong_answer", "the assertions do not hold together for these values", tests
    return "fail", "wrong_answer", f"{len(violated)}/{len(tests)} assertions violated, first {violated[0]}", tests


def judge_equivalent(declarations: str, constraints: str, reference: str, answer: str, timeout_ms: int) -> Judgement:
    """Is ``(distinct answer reference)`` unsat (under the row's constraints, if any)?

    Already one decision, and unsat means "equal for every value a zero divisor may take": z3
    searches those values too, so ``(div x 0)`` equals a reference only if it must.
    """
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
    """Entry point of a pool job: ``JUDGES[mode](*args)``; a broken row is an ``error`` judgement.

    Any other exception propagates: the pool reports it as this answer's and retires the worker.
    """
    try:
        return JUDGES[mode](*args)
    except RowError as error:
        return "error", "infrastructure", str(error), []
    except z3.Z3Exception as error:
        _raise_if_out_of_memory(error)
        raise
