"""Progress lines while a base warms up (`rlvr build-base`): the held-out evaluation of the model
being built, every few hundred warm-up steps. Each is a `ReportFor` (bases/store.py)."""

from __future__ import annotations

from collections.abc import Callable

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.rollout.heldout import evaluate_heldout
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.tools import ToolUse
from rlvr.sandbox.tool import FORMATS
from rlvr.tasks.registry import get_task
from rlvr.types import Query
from rlvr.verifiers import RewardFunction


def arith_warmup_report(
    tokenizer: PreTrainedTokenizerBase, heldout: list[Query], *, max_new_tokens: int = 40
) -> Callable[[int, PreTrainedModel], str]:
    """The progress line while tiny-arith warms up (`rlvr build-base`): held-out pass@1 and greedy."""
    reward_fn = RewardFunction()

    def report(step: int, model: PreTrainedModel) -> str:
        result = evaluate_heldout(
            model, tokenizer, heldout, reward_fn, n=4, temperature=1.0, top_p=1.0, max_new_tokens=max_new_tokens
        )
        return f"held-out pass@1 {result.pass_at_1:.3f} (n=4, T=1), greedy {result.greedy:.3f}"

    return report


def tool_warmup_report(
    tokenizer: PreTrainedTokenizerBase, heldout: list[Query], *, max_new_tokens: int = 48
) -> Callable[[int, PreTrainedModel], str]:
    """The progress line while tiny-arith-tool warms up: held-out pass@1 and tool-use rate of tool rollouts."""
    reward_fn = RewardFunction()

    def report(step: int, model: PreTrainedModel) -> str:
        tools = ToolUse(FORMATS["tags"], max_turns=2)
        try:
            result = evaluate_heldout(
                model, tokenizer, heldout, reward_fn, n=4, temperature=1.0, top_p=1.0, max_new_tokens=max_new_tokens,
                tools=tools,
            )  # fmt: skip
        finally:
            tools.close()
        return f"held-out pass@1 {result.pass_at_1:.3f} (n=4, T=1, tools), tool use {result.tool_use_rate:.3f}"

    return report


def funcsynth_warmup_report(
    tokenizer: PreTrainedTokenizerBase, heldout: list[Query]
) -> Callable[[int, PreTrainedModel], str]:
    """The progress line while tiny-funcsynth warms up: held-out gold pass@1 and the share of each
    kind of answer (formula, lookup table, other)."""
    reward_fn = RewardFunction()
    task = get_task(heldout[0].meta["task"])  # its answer kinds

    def report(step: int, model: PreTrainedModel) -> str:
        result = evaluate_heldout(
            model, tokenizer, heldout, reward_fn, n=2, temperature=1.0, top_p=1.0, max_new_tokens=48
        )
        batch = sample_completions(model, tokenizer, heldout, group_size=2, max_new_tokens=48)
        kinds = [task.answer_kind(t) for t in batch.texts]
        share = {k: round(kinds.count(k) / len(kinds), 2) for k in task.answer_kinds}
        return f"held-out gold pass@1 {result.pass_at_1:.3f} (n=2, T=1), answer kinds {share}"

    return report
