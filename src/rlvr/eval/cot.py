"""CoT-pass@k's reasoning checkers (Wen et al. 2025, "Reinforcement Learning with Verifiable Rewards
Implicitly Incentivizes Correct Reasoning in Base LLMs"): a sample counts for CoT-pass@k only when
its final answer *and* its reasoning are correct.

Checkers are pure `(query, completion) -> bool` functions; a task names its own in its record in
tasks/registry.py. A task without a checker has no CoT-pass@k: the number is reported as
unavailable, never guessed from the answer alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rlvr.types imports torch; the checkers only read .prompt and .meta
    from rlvr.types import Query

ReasoningChecker = Callable[["Query", str], bool]

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
# One step claim "a op b = c"; operands and result may be negative ("5-9=-4", "-4*3=-12").
_CLAIM = re.compile(r"^\s*(-?\d+)\s*([+\-*])\s*(-?\d+)\s*=\s*(-?\d+)\s*$")
_APPLY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def parse_arith_expression(text: str) -> tuple[list[int], list[str]]:
    """Operands and operators of a left-nested expression: "(7*8)-5" -> ([7, 8, 5], ["*", "-"])."""
    tokens = re.findall(r"\d+|[+\-*]", text.replace("(", " ").replace(")", " "))
    numbers, ops = tokens[0::2], tokens[1::2]
    if (
        not tokens
        or not all(t.isdigit() for t in numbers)
        or not all(o in _APPLY for o in ops)
        or len(numbers) != len(ops) + 1
        or re.sub(r"[\s()]", "", text) != "".join(tokens)
    ):
        raise ValueError(f"not a left-nested arith expression: {text!r}")
    return [int(t) for t in numbers], ops


def _query_operands(query: Query) -> tuple[list[int], list[str]]:
    if "operands" in query.meta and "ops" in query.meta:
        return list(query.meta["operands"]), list(query.meta["ops"])
    return parse_arith_expression(query.prompt)


def _numbers(claim: re.Match) -> tuple[int, str, int, int]:
    left, op, right, result = claim.groups()
    return int(left), op, int(right), int(result)


def check_arith_reasoning(query: Query, completion: str) -> bool:
    """True when the <think> steps are true claims that chain through the query to the <answer>.

    Step i must read `left op right = result` with `op` the query's i-th operator, `right` its
    (i+1)-th operand, `left` the query's first operand for step 1 and the previous step's result
    after that, `result` arithmetically equal to `left op right`; there is one step per operator,
    and the last result equals the integer in <answer>.

    A step may carry a self-check (tasks/arith.py): `step!check#redo`. The check must be a true
    claim re-deriving the step (b op a for + and *, c + b for -); the redo, written after a check
    that disagreed, must restate the step, and its result is the one that counts. A mistake caught
    and corrected this way is right reasoning; a false check is not.
    """
    operands, ops = _query_operands(query)
    think, answer = _THINK.search(completion), _ANSWER.search(completion)
    if think is None or answer is None:
        return False
    steps = think.group(1).split(";")
    if len(steps) != len(ops):
        return False
    acc = operands[0]
    for step, op, right in zip(steps, ops, operands[1:]):
        first, _, rest = step.partition("!")
        check, _, redo = rest.partition("#")
        claims = [
            _CLAIM.match(first),
            *([_CLAIM.match(check)] if rest else []),
            *([_CLAIM.match(redo)] if redo else []),
        ]
        if any(claim is None for claim in claims) or (redo and not rest):
            return False
        left, claimed_op, claimed_right, result = _numbers(claims[0])
        if (left, claimed_op, claimed_right) != (acc, op, right):
            return False  # the chain is broken: wrong operand, operator or carried value
        if rest:
            c_left, c_op, c_right, c_result = _numbers(claims[1])
            expected = (result, "+", right) if op == "-" else (right, op, left)
            if (c_left, c_op, c_right) != expected or c_result != _APPLY[c_op](c_left, c_right):
                return False  # a check that re-derives nothing, or a false one
        if redo:
            r_left, r_op, r_right, result = _numbers(claims[2])
            if (r_left, r_op, r_right) != (acc, op, right):
                return False  # a redo of another step
        if result != _APPLY[op](acc, right):
            return False  # a false claim stands as the step's result
        acc = result
    return answer.group(1).strip() == str(acc)
