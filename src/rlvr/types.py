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
    BAD_CRITERIA = "bad_criteria"
    """The row's own criteria are malformed (an error of the dataset, found before any check ran)."""


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
    texts: list[
        str
    ]  # [N] decoded completions, special tokens and the stop token stripped; tool rollouts: the policy's own tokens only
    finish_reasons: list[
        str
    ]  # [N] "stop" (a stop token sampled: EOS, end of turn) or "length" (hit max_new_tokens or rollout.max_turns)
    tool_mask: torch.Tensor | None = None
    """[N, T] tool rollouts (rollout.tools): 1 on tokens the policy sampled, 0 on tool observations
    (TRL's `tool_mask`). The model attends to every token of completion_mask; the loss, the KL term
    and the entropy see only `policy_mask`. None: no tools, every completion token is the policy's."""
    turns: list[list[dict]] | None = None
    """[N] tool rollouts: each completion's turns in order, {"start", "end"} token columns of the
    policy's segment, and for a tool call also {"code", "output", "error", "obs_start", "obs_end"}."""
    versions: torch.Tensor | None = None
    """[N, T] rollout.max_staleness >= 1: the policy version (updates made before its weights were
    sampled from) of each token; None: synchronous sampling, every token the step's own version."""

    @property
    def num_completions(self) -> int:
        return self.completion_ids.shape[0]

    @property
    def policy_mask(self) -> torch.Tensor:
        """[N, T] the tokens the policy sampled: completion_mask, less tool observations."""
        return self.completion_mask if self.tool_mask is None else self.completion_mask * self.tool_mask

    def query_of(self, row: int) -> Query:
        return self.queries[row // self.group_size]

    def select(self, rows: list[int], *, group_size: int | None = None) -> RolloutBatch:
        """The completions `rows`, in that order, as a batch of their own; tensors keep their padded
        width. `group_size` (default: this batch's) says how the picked rows form groups: whole
        groups keep G, single completions take 1."""
        g = self.group_size if group_size is None else group_size
        index = torch.tensor(rows, dtype=torch.long)  # [n]
        return RolloutBatch(
            queries=[self.query_of(r) for r in rows[::g]],
            group_size=g,
            prompt_ids=self.prompt_ids[index],
            prompt_mask=self.prompt_mask[index],
            completion_ids=self.completion_ids[index],
            completion_mask=self.completion_mask[index],
            old_logp=self.old_logp[index],
            texts=[self.texts[r] for r in rows],
            finish_reasons=[self.finish_reasons[r] for r in rows],
            tool_mask=None if self.tool_mask is None else self.tool_mask[index],
            turns=None if self.turns is None else [self.turns[r] for r in rows],
            versions=None if self.versions is None else self.versions[index],
        )
