"""LoRA adapters on a policy (model.lora_rank > 0), through peft (Hu et al. 2021, LoRA,
arXiv:2106.09685): W x + (α/r)·B A x on each targeted projection, with A [r, in] random and
B [out, r] zero, so a freshly wrapped policy computes exactly what its base does.

Only A and B train. The base weights never change, so the base with its adapters switched off is
the initial policy: the KL term's reference (engine/reference.py) needs no second copy.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import torch
from transformers import PreTrainedModel

from rlvr.config import ModelConfig

ADAPTER_DIR = "adapter"
"""final/adapter/: the adapter alone, beside the merged model in final/."""


def is_lora(model: PreTrainedModel) -> bool:
    """True for a policy wrapped by `add_lora` (peft marks every model it injects adapters into)."""
    return hasattr(model, "peft_config")


def add_lora(model: PreTrainedModel, cfg: ModelConfig, *, seed: int = 0) -> PreTrainedModel:
    """`model` wrapped with fresh LoRA adapters on cfg.lora_target_modules; only they require grad.

    A's random start is drawn from `seed` alone, on a forked RNG: every process of a multi-process
    run (each seeded differently for sampling) starts from the same adapters, as it starts from the
    same base weights, and the caller's random stream is left as it was."""
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_target_modules),
        task_type="CAUSAL_LM",
    )
    with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
        # peft reads `model.is_gradient_checkpointing`, which transformers 5 deprecates with a
        # FutureWarning on every wrap; it says nothing about rlvr's run, so it is not shown.
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        torch.random.default_generator.manual_seed(seed)  # peft initialises A on the CPU, then moves it
        return get_peft_model(model, lora)


def base_model(model: PreTrainedModel) -> PreTrainedModel:
    """The transformers model inside a LoRA policy (the one whose forward `generate` calls), or `model`."""
    return model.get_base_model() if is_lora(model) else model


def checkpoint_mismatch(path: Path, cfg: ModelConfig) -> str | None:
    """Why the policy saved in `path` cannot be loaded into a policy built from `cfg` ("holds ..."):
    adapters into a fully fine-tuned policy, full weights into a LoRA one, or adapters of another
    rank, scale or target modules. None when it can."""
    config_file = path / "adapter_config.json"
    if not config_file.is_file():
        return "holds a fully fine-tuned model, not LoRA adapters" if cfg.lora_rank else None
    if not cfg.lora_rank:
        return "holds LoRA adapters, and model.lora_rank is 0"
    saved = json.loads(config_file.read_text())
    settings = {  # field: (what the adapters were trained with, what this run asks for)
        "model.lora_rank": (saved.get("r"), cfg.lora_rank),
        "model.lora_alpha": (saved.get("lora_alpha"), cfg.lora_alpha),
        "model.lora_target_modules": (sorted(saved.get("target_modules") or []), sorted(cfg.lora_target_modules)),
    }
    differ = [
        f"{field}={saved_value} (this run: {value})"
        for field, (saved_value, value) in settings.items()
        if saved_value != value
    ]
    return f"holds LoRA adapters trained with {', '.join(differ)}" if differ else None


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
