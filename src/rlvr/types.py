"""Data that crosses module boundaries, with shapes written down once.

Letters used in shape comments everywhere in rlvr:
    B  queries in a batch          G  completions sampled per query
    N  = B * G completions         T  completion tokens (padded)
    P  prompt tokens (left-padded) V  vocabulary size
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import torch


@dataclass(frozen=True)
class Query:
    """One dataset row: a prompt plus the deterministic criteria that judge an answer to it."""

    id: str
    prompt: str
    verifier: dict[str, Any]
    """Verification criteria, e.g. {"type": "math", "answer": "42"}; see DESIGN.md "Dataset rows"."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Task-specific extras that are not needed to verify (difficulty, the source expression, ...)."""


class Verdict(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    PARTIAL = "partial"
    ERROR = "error"
    """The verifier itself failed (infrastructure); never silently a reward of 0."""
    UNAVAILABLE = "unavailable"
    """The verifier cannot run on this machine (missing toolchain); never silently a reward of 0."""
    UNKNOWN = "unknown"
    """The checker ran but could not decide (an SMT solver's ``unknown``); counted, never a reward."""


class ErrorClass(str, Enum):
    NONE = "none"
    WRONG_ANSWER = "wrong_answer"
    NO_ANSWER = "no_answer"
    UNPARSEABLE = "unparseable"
    SYNTAX_ERROR = "syntax_error"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT_LIMIT = "output_limit"
    PROTOCOL_VIOLATION = "protocol_violation"
    BAD_FORMAT = "bad_format"
    INFRASTRUCTURE = "infrastructure"


@dataclass
class TestOutcome:
    """One test case of a verification (one expected answer, one unit test, one checklist item)."""

    name: str
    passed: bool
    detail: str = ""
    elapsed_s: float = 0.0


@dataclass
class VerifierResult:
    verdict: Verdict
    score: float
    """In [0, 1]; 1 for pass, 0 for fail, a fraction for partial credit. Meaningless for error/unavailable."""
    error_class: ErrorClass = ErrorClass.NONE
    detail: str = ""
    """One line for people: what was expected, what was found, what broke."""
    tests: list[TestOutcome] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def scorable(self) -> bool:
        """False when the verifier could not judge; such samples stay out of rewards and baselines."""
        return self.verdict not in (Verdict.ERROR, Verdict.UNAVAILABLE, Verdict.UNKNOWN)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "score": self.score,
            "error_class": self.error_class.value,
            "detail": self.detail,
            "tests": [t.__dict__ for t in self.tests],
            "elapsed_s": self.elapsed_s,
        }


@dataclass
class RolloutBatch:
    """G completions for each of B queries, in query-major order (rows g*0..G-1 belong to query 0)."""

    queries: list[Query]  # [B]
    group_size: int  # G
    prompt_ids: torch.Tensor  # [N, P] left-padded
    prompt_mask: torch.Tensor  # [N, P] 1 on real prompt tokens
    completion_ids: torch.Tensor  # [N, T] right-padded
    completion_mask: torch.Tensor  # [N, T] 1 on sampled tokens up to and including the first stop token
    old_logp: torch.Tensor  # [N, T] log-prob of each sampled token under the sampling policy
    texts: list[str]  # [N] decoded completions, special tokens and the stop token stripped
    finish_reasons: list[str]  # [N] "stop" (a stop token sampled: EOS, end of turn) or "length" (hit max_new_tokens)

    @property
    def num_completions(self) -> int:
        return self.completion_ids.shape[0]

    def query_of(self, row: int) -> Query:
        return self.queries[row // self.group_size]
