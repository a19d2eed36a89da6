"""The format reward: is the completion exactly ``<think>…</think><answer>…</answer>``?

The R1-style format reward (DeepSeek-R1, Sec. 2.2.2 "Reward Modeling": a format reward that
"enforces the model to put its thinking process between '<think>' and '</think>' tags"). It is a
reward component of its own, applied to every row whatever its type; ``query.verifier`` is ignored.
Whitespace is allowed around and between the two blocks; nothing else is.
"""

from __future__ import annotations

import time

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.base import BaseVerifier

TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def format_problem(completion: str) -> str | None:
    """What is wrong with the completion's layout, in a few words; None if nothing is."""
    for tag in TAGS:
        count = completion.count(tag)
        if count != 1:
            return f"expected exactly one {tag}, found {count}"
    think_open, think_close, answer_open, answer_close = (completion.index(tag) for tag in TAGS)
    if not think_open < think_close < answer_open < answer_close:
        return "tags out of order; expected <think>...</think><answer>...</answer>"
    if completion[:think_open].strip():
        return "text before <think>"
    if completion[think_close + len("</think>") : answer_open].strip():
        return "text between </think> and <answer>"
    if completion[answer_close + len("</answer>") :].strip():
        return "text after </answer>"
    if not completion[answer_open + len("<answer>") : answer_close].strip():
        return "empty <answer>"
    return None


class FormatVerifier(BaseVerifier):
    """PASS iff the completion is one think block then one non-empty answer block."""

    name = "format"

    def verify(self, query: Query, completion: str) -> VerifierResult:
        started = time.perf_counter()
        problem = format_problem(completion)
        if problem is None:
            result = VerifierResult(Verdict.PASS, 1.0)
        else:
            result = VerifierResult(Verdict.FAIL, 0.0, ErrorClass.BAD_FORMAT, problem)
        result.elapsed_s = time.perf_counter() - started
        return result
