"""Task `arith`: multi-step integer arithmetic whose every reasoning step is a checkable claim.

A query is a left-nested expression such as `(7*8)-5`; the reference completion evaluates it one
operation at a time:

    <think>7*8=56;56-5=51</think><answer>51</answer>

Difficulty is set by the number of operands, the digits per operand and the largest value an
intermediate result may take. Train and held-out queries are disjoint by construction: a query's
split is decided by a hash of its expression, so no expression can land in both.

For the supervised warm-up, `worked_solution(..., error_rate=p)` writes solutions in which each
step is wrong with probability p and later steps chain from the wrong value, the way a pretraining
corpus holds right and wrong worked solutions alike. A model warmed up on them can already produce
the right answer (high pass@k) but often does not (lower pass@1): the realistic start where RLVR
sharpens what the model can already do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.types import Query

OPERATORS = "+-*"


@dataclass(frozen=True)
class ArithSpec:
    """Difficulty of generated queries."""

    operands: int = 3
    digits: int = 1
    max_value: int = 99
    operators: str = OPERATORS
    min_operand: int = 0
    """Smallest operand; 2 leaves out 0 and 1, whose steps (x*0, x*1, x+0) make many chains share an answer."""


def spec_of(task: Any) -> ArithSpec:
    """The spec a task section sets (task.operands, digits, max_value, min_operand)."""
    return ArithSpec(operands=task.operands, digits=task.digits, max_value=task.max_value, min_operand=task.min_operand)


@dataclass(frozen=True)
class Step:
    left: int
    op: str
    right: int
    result: int

    def claim(self) -> str:
        return f"{self.left}{self.op}{self.right}={self.result}"


def apply(left: int, op: str, right: int) -> int:
    return {"+": left + right, "-": left - right, "*": left * right}[op]


def expression(operands: list[int], ops: list[str]) -> str:
    """Left-nested expression text: operands [a, b, c], ops [+, *] -> "(a+b)*c"."""
    text = str(operands[0])
    for i, (op, value) in enumerate(zip(ops, operands[1:])):
        text = f"{text}{op}{value}"
        if i < len(ops) - 1:
            text = f"({text})"
    return text


def solve(operands: list[int], ops: list[str]) -> list[Step]:
    steps, acc = [], operands[0]
    for op, value in zip(ops, operands[1:]):
        result = apply(acc, op, value)
        steps.append(Step(acc, op, value, result))
        acc = result
    return steps


def split_of(expr: str, heldout_fraction: float) -> str:
    """'train' or 'heldout', fixed by the expression's hash so the splits can never overlap."""
    bucket = int(hashlib.sha256(expr.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "heldout" if bucket < heldout_fraction else "train"


def _sample(rng: random.Random, spec: ArithSpec) -> tuple[list[int], list[str]] | None:
    high = 10**spec.digits - 1
    operands = [rng.randint(spec.min_operand, high) for _ in range(spec.operands)]
    ops = [rng.choice(spec.operators) for _ in range(spec.operands - 1)]
    steps = solve(operands, ops)
    if any(not 0 <= s.result <= spec.max_value for s in steps):
        return None  # keep every intermediate in range so the difficulty stays what the spec says
    return operands, ops


def make_queries(
    n: int, *, split: str, seed: int, spec: ArithSpec = ArithSpec(), heldout_fraction: float = 0.2
) -> list[Query]:
    """`n` distinct queries of one split, deterministic in `seed`."""
    rng = random.Random(f"arith-{split}-{seed}")
    seen: dict[str, Query] = {}
    misses = 0  # draws in a row that found nothing new: many means the split is exhausted
    while len(seen) < n and misses < 20_000:
        misses += 1
        sample = _sample(rng, spec)
        if sample is None:
            continue
        operands, ops = sample
        expr = expression(operands, ops)
        if expr in seen or split_of(expr, heldout_fraction) != split:
            continue
        misses = 0
        answer = solve(operands, ops)[-1].result
        seen[expr] = Query(
            id=f"arith-{split}-{hashlib.sha256(expr.encode()).hexdigest()[:10]}",
            prompt=expr,
            verifier={"type": "math", "answer": str(answer)},
            meta={"task": "arith", "operands": operands, "ops": ops},
        )
    if len(seen) < n:
        raise ValueError(
            f"arith: only {len(seen)} distinct {split} queries exist for {spec}; "
            f"ask for fewer, or allow more operands/digits"
        )
    return list(seen.values())


def parse_mix(text: str) -> dict[int, int]:
    """'4:300,5:300' -> {4: 300, 5: 300}: how many queries of each chain length."""
    mix: dict[int, int] = {}
    for part in text.split(","):
        operands, sep, count = part.strip().partition(":")
        if not sep or not operands.strip().isdigit() or not count.strip().isdigit():
            raise ValueError(f"expected 'OPERANDS:COUNT,...' such as '4:300,5:300' (got {text!r})")
        k, n = int(operands), int(count)
        if k < 2 or n < 1 or k in mix:
            raise ValueError(f"{part.strip()!r}: operands must be >= 2, counts >= 1, each length once (got {text!r})")
        mix[k] = n
    return mix


def make_mixed_queries(mix: dict[int, int], *, split: str, seed: int, spec: ArithSpec = ArithSpec()) -> list[Query]:
    """The queries of `make_queries` for each chain length of `mix` (operands: count), in order."""
    return [
        query
        for operands, count in mix.items()
        for query in make_queries(count, split=split, seed=seed, spec=dataclasses.replace(spec, operands=operands))
    ]


def _wrong_value(rng: random.Random, right: int) -> int:
    """A plausible slip: off by a little, or a digit off by ten."""
    delta = rng.choice([-10, -2, -1, 1, 2, 10])
    return right + delta if right + delta >= 0 else right + abs(delta)


CHECK, REDO = "!", "#"
"""Self-verification marks in a step: `step!check` re-derives the step another way (b op a for
+ and *, c + b for -), and `#step` after a check that disagreed writes the step again."""


def check_claim(step: Step) -> Step:
    """The check of a step, computed correctly: commuted for + and * (it must equal the step's
    result), the inverse for - (c + b must give back the left operand)."""
    if step.op == "-":
        return Step(step.result, "+", step.right, step.result + step.right)
    return Step(step.right, step.op, step.left, apply(step.right, step.op, step.left))


def check_agrees(step: Step, check: Step) -> bool:
    return check.result == (step.left if step.op == "-" else step.result)


def worked_solution(query: Query, *, rng: random.Random, error_rate: float = 0.0, check_rate: float = 0.0) -> str:
    """A completion in the task format; each step is wrong with probability `error_rate`.

    With `check_rate` > 0 each step is followed, with that probability, by a check (CHECK, computed
    correctly); a check that disagrees with the step is followed by the step written again (REDO),
    itself wrong with probability `error_rate`. So a checked step is wrong with probability
    error_rate², an unchecked one with error_rate: checking pays, which a reward can find.
    """
    operands, ops = query.meta["operands"], query.meta["ops"]
    acc, parts = operands[0], []
    for op, value in zip(ops, operands[1:]):
        right = apply(acc, op, value)
        result = _wrong_value(rng, right) if rng.random() < error_rate else right
        step = Step(acc, op, value, result)
        text = step.claim()
        if check_rate > 0 and rng.random() < check_rate:
            check = check_claim(step)
            text += CHECK + check.claim()
            if not check_agrees(step, check):
                result = _wrong_value(rng, right) if rng.random() < error_rate else right
                text += REDO + Step(acc, op, value, result).claim()
        parts.append(text)
        acc = result
    return f"<think>{';'.join(parts)}</think><answer>{acc}</answer>"


def self_checks(completion: str) -> tuple[int, int]:
    """(checks, redos) written in a completion's reasoning: the self-verification it shows."""
    think = completion.split("<think>", 1)[-1].split("</think>", 1)[0]
    return think.count(CHECK), think.count(REDO)


def self_check_metrics(texts: Sequence[str], scored: Sequence[Any]) -> dict[str, float]:
    """Self-verification in a step's completions: the share that check a step (CHECK) and that redo
    one (REDO), and the accuracy (`scored[i].correct`) of those with and without a check; NaN where
    a group is empty; {} for no completions."""
    if not texts:
        return {}
    marks = [self_checks(text) for text in texts]
    checked = [s.correct for s, (checks, _) in zip(scored, marks) if checks > 0]
    unchecked = [s.correct for s, (checks, _) in zip(scored, marks) if checks == 0]

    def share(values: list[bool]) -> float:
        return sum(values) / len(values) if values else float("nan")

    return {
        "selfcheck/rate": len(checked) / len(texts),
        "selfcheck/redo_rate": sum(redos > 0 for _, redos in marks) / len(texts),
        "selfcheck/accuracy_checked": share(checked),
        "selfcheck/accuracy_unchecked": share(unchecked),
    }
