"""Load a saved causal LM and its tokenizer, set up for rlvr's samplers."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.modeling_layers import GradientCheckpointingLayer


def load_pretrained(
    path: Path, device: str = "cpu", dtype: str = "float32"
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model, its weights in `dtype` (model.dtype), and its tokenizer, padding on the left, with
    pad and bos tokens set."""
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.bos_token_id is None:
        tokenizer.bos_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype)).to(device)
    return model, tokenizer


def load_policy(
    path: Path | str, device: str = "cpu", *, dtype: str = "float32", gradient_checkpointing: bool = False
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model saved at `path` (a built-in base's: rlvr.bases.resolve_model_path), with its
    weights in `dtype` (model.dtype), its decoder layers checkpointed if asked
    (model.gradient_checkpointing), and its tokenizer."""
    model, tokenizer = load_pretrained(Path(path), device, dtype)
    if gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model, tokenizer


def enable_gradient_checkpointing(model: PreTrainedModel) -> None:
    """Checkpoint every decoder layer (model.gradient_checkpointing): the backward recomputes each
    layer's activations from its input instead of keeping them (Chen et al. 2016, arXiv:1604.06174),
    through transformers' own checkpointing, non-reentrant (torch.utils.checkpoint).

    transformers checkpoints a layer only while that layer is in training mode, and rlvr keeps the
    policy in eval mode (sampling and scoring must compute one function). So before every forward a
    hook sets the training flag of the decoder layers alone: their children (attention, dropout)
    stay in eval mode, and without gradients (sampling, the reference) nothing is checkpointed."""
    # transformers 5.24 renamed gradient_checkpointing_enable; older versions have only that name
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.register_forward_pre_hook(_mark_layers_for_checkpointing)


def _mark_layers_for_checkpointing(model: torch.nn.Module, _args) -> None:
    for layer in checkpointed_layers(model):
        layer.training = True  # read only by the layer's checkpoint wrapper; children keep their mode


def checkpointed_layers(model: torch.nn.Module) -> list[GradientCheckpointingLayer]:
    """The decoder layers of `model` that recompute their activations in the backward."""
    return [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer) and m.gradient_checkpointing]
