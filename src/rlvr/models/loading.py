"""Load a saved causal LM and its tokenizer, set up for rlvr's samplers."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase


def load_pretrained(path: Path, device: str = "cpu") -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model (float32) and its tokenizer, padding on the left, with pad and bos tokens set."""
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.bos_token_id is None:
        tokenizer.bos_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).to(device)
    return model, tokenizer
