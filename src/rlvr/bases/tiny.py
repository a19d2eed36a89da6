"""The embedded default policy: a tiny, standard Llama that `AutoModelForCausalLM` loads."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerBase


@dataclass(frozen=True)
class TinyArch:
    """Architecture of the embedded model (about 0.9M parameters with the default sizes)."""

    hidden_size: int = 128
    intermediate_size: int = 384
    num_layers: int = 4
    num_heads: int = 4
    max_positions: int = 128


def build_tiny_llama(tokenizer: PreTrainedTokenizerBase, arch: TinyArch, seed: int) -> LlamaForCausalLM:
    """A freshly initialised Llama, deterministic in `seed`."""
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_heads,
        max_position_embeddings=arch.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)
