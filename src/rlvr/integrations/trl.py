"""rlvr verifiers as a reward function for Hugging Face TRL's ``GRPOTrainer`` (TRL 1.16).

TRL calls each custom reward function as ``f(prompts=..., completions=..., completion_ids=...,
**columns)``, where ``columns`` holds every other dataset column (one value per completion, the
prompt's row repeated ``num_generations`` times) plus ``trainer_state``, ``log_extra`` and
``log_metric``; it expects one ``float | None`` per completion
(trl/trainer/grpo_trainer.py, ``GRPOTrainer._calculate_rewards``). TRL turns a ``None`` into NaN:
a completion for which every reward function returned ``None`` is left out of its group's mean and
std and gets advantage 0, and the logged ``reward`` averages only the others. That is exactly how
rlvr treats an unscorable completion (verdict ``error`` or ``unavailable``), so the adapter returns
``None`` for those and never 0.

The verification criteria travel in a dataset column, ``verifier`` by default: per row either the
criteria object (``{"type": "math", "answer": "42"}``) or the same object as a JSON string. Use the
JSON string when rows of several verifier types share a dataset (see ``rlvr.tasks.criteria``).

Prompts and completions may be plain text or conversational (lists of ``{"role", "content"}``
messages); a conversational completion is judged on the text of its assistant messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rlvr.errors import UserError
from rlvr.tasks.criteria import parse_criteria
from rlvr.types import Query, VerifierResult
from rlvr.verifiers.base import Verifier
from rlvr.verifiers.reward import CORRECTNESS, RewardFunction

VERIFIER_COLUMN = "verifier"
"""Default dataset column with each row's verification criteria."""
UNSCORABLE_METRIC = "verifier/unscorable"
"""Logged through TRL's ``log_metric``: completions per call the verifiers could not judge."""


class TrlRewardError(UserError):
    """The dataset TRL hands over lacks usable verification criteria; the message names the row."""


class TrlReward:
    """A TRL ``GRPOTrainer`` reward function that judges completions with rlvr.

    ``scorer`` is a ``RewardFunction`` (weighted components; the default is rlvr's binary
    correctness reward) or any single ``Verifier`` (reward = its score). TRL names the function's
    metrics ``rewards/<name>/mean`` and its completions-table column ``<name>``.
    """

    def __init__(
        self,
        scorer: RewardFunction | Verifier | None = None,
        *,
        name: str = "rlvr",
        column: str = VERIFIER_COLUMN,
        id_column: str = "id",
    ) -> None:
        self.scorer = RewardFunction() if scorer is None else scorer
        self.__name__ = name  # TRL reads it (trl.trainer.utils.get_callable_name)
        self.column, self.id_column = column, id_column

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float | None]:
        items = self.items(prompts, completions, columns)
        rewards, results = self.score(items)
        log_metric: Callable[[str, float], None] | None = columns.get("log_metric")
        if log_metric is not None:
            log_metric(UNSCORABLE_METRIC, float(sum(reward is None for reward in rewards)))
        log_extra: Callable[[str, list], None] | None = columns.get("log_extra")
        if log_extra is not None:  # shown in TRL's completions table next to the reward
            log_extra(f"{self.__name__}/verdict", [result.verdict.value for result in results])
            log_extra(f"{self.__name__}/error_class", [result.error_class.value for result in results])
        return rewards

    def items(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: dict[str, Any]
    ) -> list[tuple[Query, str]]:
        """(query, completion text) per completion, from TRL's arguments."""
        if self.column not in columns:
            known = ", ".join(
                sorted(k for k in columns if k not in ("trainer_state", "log_extra", "log_metric", "completion_ids"))
            )
            raise TrlRewardError(
                f"the dataset has no '{self.column}' column with verification criteria (columns: {known or 'none'}); "
                f'add one, e.g. {{"type": "math", "answer": "42"}}, or pass column= to TrlReward'
            )
        criteria_column = columns[self.column]
        ids = columns.get(self.id_column) or [None] * len(completions)
        items = []
        for row, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            criteria = parse_criteria(criteria_column[row], f"completion {row}, column '{self.column}'")
            query_id = str(row) if ids[row] is None else str(ids[row])
            items.append(
                (
                    Query(query_id, message_text(prompt, roles=None), criteria),
                    message_text(completion, roles=("assistant",)),
                )
            )
        return items

    def score(self, items: list[tuple[Query, str]]) -> tuple[list[float | None], list[VerifierResult]]:
        """Rewards (None = unscorable) and the correctness results behind them."""
        if isinstance(self.scorer, RewardFunction):
            scored = self.scorer.score_batch(items)
            return [s.reward for s in scored], [s.results[CORRECTNESS] for s in scored]
        results = self.scorer.verify_batch(items)
        return [result.score if result.scorable else None for result in results], results


def message_text(value: Any, *, roles: tuple[str, ...] | None) -> str:
    """Plain text as is; for a conversation, the text of its messages with one of ``roles``
    (None: the last message only, i.e. the user's turn of a prompt)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(m, dict) for m in value):
        raise TrlRewardError(f"expected text or a list of {{'role', 'content'}} messages, got {type(value).__name__}")
    messages = value[-1:] if roles is None else [m for m in value if m.get("role") in roles]
    return "\n".join(_content_text(m.get("content")) for m in messages)


def _content_text(content: Any) -> str:
    """A message's content: a string, or content blocks of which the text blocks count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        block.get("text", "") for block in content if isinstance(block, dict) and block.get("type") == "text"
    )
