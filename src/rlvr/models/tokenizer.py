"""A character-level tokenizer built locally with `tokenizers`, loadable by `AutoTokenizer`.

Every printable ASCII character is one token, and the completion-format tags (`<think>`,
`</think>`, `<answer>`, `</answer>`) are single tokens too, so the tiny policy spends its capacity
on the task rather than on spelling tags. The tags are ordinary (non-special) added tokens: they
survive `decode(..., skip_special_tokens=True)`, which verifiers need to see.
"""

from __future__ import annotations

import string
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
FORMAT_TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
CHARACTERS = [c for c in string.printable if c not in "\t\r\x0b\x0c"]  # digits, letters, punctuation, space, \n


def build_char_tokenizer(extra_tags: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    """Return a fast tokenizer whose ids are stable: specials 0-3, then characters, then tags, then
    `extra_tags` (the tool base's call tags, sandbox/tool.py TOOL_TAGS), single tokens like the rest."""
    tags = [*FORMAT_TAGS, *extra_tags]
    vocab = {tok: i for i, tok in enumerate([PAD, BOS, EOS, UNK, *CHARACTERS, *tags])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # "." would skip newlines
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, bos_token=BOS, eos_token=EOS, unk_token=UNK)
    # Added tokens are matched before pre-tokenisation, so "<think>" never splits into characters.
    tok.add_tokens(tags)
    tok.padding_side = "left"  # prompts are left-padded so that generation continues every row
    tok.model_max_length = 1024
    return tok


# Qwen2.5-Instruct's template without its tool-calling branches (and without the default system
# prompt it adds when none is given): ChatML turns, opened for the assistant's reply.
CHATML = (
    "{%- for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)
CHAT_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>"]

# CHATML with the tool-calling branches of Qwen2.5-Instruct's template, reduced: an assistant turn's
# calls as <tool_call> JSON lines, and each tool message as a user turn in <tool_response> tags.
CHATML_TOOLS = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' and message.get('tool_calls') %}"
    "{{ '<|im_start|>assistant\\n' + (message['content'] or '') }}"
    "{%- for call in message['tool_calls'] %}"
    "{{ '<tool_call>\\n' + (call['function'] | tojson) + '\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{ '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{{ '<|im_start|>user\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)


def build_chat_tokenizer(
    template: str = CHATML, bos: str | None = None, eos: str = "<|im_end|>"
) -> PreTrainedTokenizerFast:
    """A stand-in for Qwen2.5-Instruct's tokenizer, built locally: one token per character plus
    ChatML's specials, eos <|im_end|> (the end of a turn) and pad <|endoftext|>, and a chat template.
    `bos` gives it a BOS token (Qwen's has none); `eos="<|endoftext|>"` makes it a base Qwen2.5's,
    whose EOS is not the end of a turn."""
    vocab = {tok: i for i, tok in enumerate([*CHAT_SPECIALS, *CHARACTERS])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|endoftext|>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # "." would skip newlines
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<|endoftext|>", eos_token=eos, bos_token=bos)
    markers = [t for t in ("<|im_start|>", "<|im_end|>", "<|begin_of_text|>") if t != eos]
    tok.add_special_tokens({"additional_special_tokens": markers})
    tok.chat_template = template
    tok.padding_side = "left"
    return tok


def save_tokenizer(tok: PreTrainedTokenizerFast, path: Path) -> None:
    tok.save_pretrained(str(path))
