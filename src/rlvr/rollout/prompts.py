"""How a query's prompt becomes the policy's input: the prompt text itself (plain), or a user turn in
the tokenizer's chat template (chat), the layout an instruct model was trained on.

`prompt_token_ids` is the one place prompt text turns into token ids: every sampler (rollout/hf.py, the
lean sampler, rollout/vllm.py) encodes through it, and the trainer scores the ids the sampler hands
back (RolloutBatch.prompt_ids), so the policy is scored on exactly the input it was prompted with.
`stop_token_ids` is likewise the one place that says which sampled token ends a completion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rlvr.errors import UserError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from rlvr.config import TaskConfig

PromptStyle = Literal["auto", "chat", "plain"]


@dataclass(frozen=True)
class PromptFormat:
    """task.prompt_format and task.system_prompt, as the samplers take them."""

    style: PromptStyle = "auto"
    """chat: the tokenizer's chat template; plain: BOS + the prompt text; auto: chat when the tokenizer has a template."""
    system_prompt: str = ""
    """Text of a system turn before the user turn (chat only); empty = none (a template may write its own default)."""

    @classmethod
    def of(cls, task: TaskConfig) -> PromptFormat:
        return cls(task.prompt_format, task.system_prompt)


def has_chat_template(tokenizer: PreTrainedTokenizerBase) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def resolve_style(
    tokenizer: PreTrainedTokenizerBase, fmt: PromptFormat, model_name: str | None = None
) -> Literal["chat", "plain"]:
    """'chat' or 'plain' for this tokenizer; a UserError naming the model when `fmt` needs a chat
    template the tokenizer lacks (chat, or a system prompt)."""
    name = model_name or getattr(tokenizer, "name_or_path", "") or "this model"
    templated = has_chat_template(tokenizer)
    if fmt.style == "chat" and not templated:
        raise UserError(
            f"task.prompt_format=chat, but model {name} has no chat template (no chat_template in its "
            "tokenizer files); use task.prompt_format=plain, or a model with a template"
        )
    style = "chat" if fmt.style == "chat" or (fmt.style == "auto" and templated) else "plain"
    if style == "plain" and fmt.system_prompt:
        why = "task.prompt_format=plain" if fmt.style == "plain" else f"model {name} has no chat template"
        raise UserError(f"task.system_prompt needs chat prompts, but {why}; drop task.system_prompt")
    return style


def render_prompt(tokenizer: PreTrainedTokenizerBase, prompt: str, fmt: PromptFormat) -> str:
    """The policy's input text for one prompt: the prompt itself (plain), or the chat template over
    an optional system turn and the prompt as the user turn, opened for the assistant's reply."""
    if resolve_style(tokenizer, fmt) == "plain":
        return prompt
    return _chat_text(tokenizer, prompt, fmt.system_prompt)


def prompt_token_ids(tokenizer: PreTrainedTokenizerBase, prompt: str, fmt: PromptFormat) -> list[int]:
    """The token ids the policy is prompted with for one prompt. plain: BOS + the text's ids (the
    layout the built-in models were warmed up on). chat: the rendered template's ids with no special
    tokens added, because a template that wants a BOS writes it into the text itself (Llama 3's
    `{{ bos_token }}`) and adding another would double it; Qwen's template has none."""
    if resolve_style(tokenizer, fmt) == "plain":
        return [tokenizer.bos_token_id, *tokenizer(prompt, add_special_tokens=False).input_ids]
    return tokenizer(_chat_text(tokenizer, prompt, fmt.system_prompt), add_special_tokens=False).input_ids


def _chat_text(tokenizer: PreTrainedTokenizerBase, prompt: str, system_prompt: str) -> str:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": prompt})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


_PROBE = "rlvrturnprobe"
"""The assistant reply in the conversation `end_of_turn_id` renders: text no template alters."""


def stop_token_ids(
    tokenizer: PreTrainedTokenizerBase, fmt: PromptFormat, model: PreTrainedModel | None = None
) -> list[int]:
    """The token ids that end a completion, EOS first: the tokenizer's EOS; in chat style also the
    template's end-of-turn token (Qwen's <|im_end|>, Llama 3's <|eot_id|>, Gemma's <end_of_turn>),
    which a base model's tokenizer does not have as its EOS; and the ids in `model`'s
    generation_config.eos_token_id (Llama 3.1-Instruct lists <|eom_id|> there too), which
    transformers' `generate` and vLLM stop at by default. A completion is masked through the first
    of them (rollout/hf.py `completion_mask`), so every sampler, the trainer and the evaluation end
    a completion at the same token. The built-in models' generation config lists their EOS alone,
    so their plain prompts stop at EOS only."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    extra = [configured] if isinstance(configured, int) else list(configured or [])
    turn = [end_of_turn_id(tokenizer)] if resolve_style(tokenizer, fmt) == "chat" else []
    ids = [tokenizer.eos_token_id, *turn, *extra]
    return list(dict.fromkeys(i for i in ids if i is not None))  # in order, once each


def end_of_turn_id(tokenizer: PreTrainedTokenizerBase) -> int | None:
    """The token the chat template closes an assistant turn with, or None when it closes it with
    plain text (a newline) or nothing. Found by rendering a user turn and an assistant reply and
    tokenizing what follows the reply: its first token is the end of turn when it is a special or
    added token, which plain text never tokenizes to."""
    messages = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": _PROBE}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    at = text.rfind(_PROBE)
    if at < 0:  # a template that rewrites the assistant's content: nothing to read the end from
        return None
    tail = tokenizer(text[at + len(_PROBE) :], add_special_tokens=False).input_ids
    if not tail:
        return None
    marked = tail[0] in tokenizer.all_special_ids or tail[0] in tokenizer.added_tokens_decoder
    return tail[0] if marked else None
