"""LoRA adapters on a policy (model.lora_rank > 0), through peft (Hu et al. 2021, LoRA,
arXiv:2106.09685): W x + (α/r)·B A x on each targeted projection, with A [r, in] random and
B [out, r] zero, so a freshly wrapped policy computes exactly what its base does.

Only A and B train. The base weights never change, so the base with its adapters switched off is
the initial policy: the KL term's reference (train/reference.py) needs no second copy.
"""

from __future__ import annotations

import copy
from pathlib import Path

from transformers import PreTrainedModel

from rlvr.config import ModelConfig

ADAPTER_DIR = "adapter"
"""final/adapter/: the adapter alone, beside the merged model in final/."""


def is_lora(model: PreTrainedModel) -> bool:
    """True for a policy wrapped by `add_lora` (peft marks every model it injects adapters into)."""
    return hasattr(model, "peft_config")


def add_lora(model: PreTrainedModel, cfg: ModelConfig) -> PreTrainedModel:
    """`model` wrapped with fresh LoRA adapters on cfg.lora_target_modules; only they require grad."""
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_target_modules),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def load_adapter(model: PreTrainedModel, path: Path) -> None:
    """Set `model`'s adapter weights to those saved in `path` (peft's save_pretrained layout)."""
    from peft import set_peft_model_state_dict
    from peft.utils import load_peft_weights

    result = set_peft_model_state_dict(model, load_peft_weights(str(path), device=str(model.device)))
    if result.unexpected_keys:
        raise ValueError(f"{path} holds adapter weights this policy lacks: {result.unexpected_keys[:3]}")


def save_merged(model: PreTrainedModel, path: Path) -> None:
    """A plain model in `path` (the adapters folded into the base weights, on a copy: the policy
    keeps its adapters) and the adapter alone in `path`/adapter/."""
    merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(path)
    model.save_pretrained(path / ADAPTER_DIR)
