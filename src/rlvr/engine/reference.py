"""π_ref, the policy the KL term (and DPO's loss) compares π_θ against: the initial policy.

Full fine-tuning changes every weight, so the reference is a frozen copy made before the first
update. With LoRA (models/lora.py) the base weights never change, so the policy with its adapters
switched off *is* the initial policy, and no copy is held; TRL's GRPOTrainer given a peft_config
computes its reference the same way (`disable_adapter()`).
"""

from __future__ import annotations

import copy
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

from rlvr.engine.update import reference_logprobs
from rlvr.models.forward import Forward, forward_for
from rlvr.models.lora import is_lora
from rlvr.types import RolloutBatch


@dataclass
class ReferencePolicy:
    """log π_ref of sampled tokens, by either route; build it with `reference_for`."""

    forward: Forward
    """The frozen copy, or (adapters_off) the policy itself, with the forward pass it runs."""
    adapters_off: bool = False
    """Run `model` with its LoRA adapters disabled: the base weights, which never train."""

    @property
    def model(self) -> PreTrainedModel:
        return self.forward.model

    @property
    def held_copy(self) -> PreTrainedModel | None:
        """The second model this reference keeps in memory; None when it borrows the policy's base."""
        return None if self.adapters_off else self.model

    def logprobs(self, batch: RolloutBatch, *, temperature: float, micro_batch_size: int = 0) -> torch.Tensor:
        """log π_ref of every sampled token, [N, T] (0 on padding), without gradients."""
        with self.model.disable_adapter() if self.adapters_off else nullcontext():
            return reference_logprobs(
                self.forward, batch, temperature=temperature, micro_batch_size=micro_batch_size
            )  # [N, T]


def reference_for(policy: PreTrainedModel, forward: str = "auto") -> ReferencePolicy:
    """The reference of a run starting from `policy` (call it before the first update), run with
    the forward pass model.forward=`forward` chooses for it (models/forward.py)."""
    if is_lora(policy):
        return ReferencePolicy(forward_for(policy, forward), adapters_off=True)
    frozen = copy.deepcopy(policy).eval()
    frozen.requires_grad_(False)
    return ReferencePolicy(forward_for(frozen, forward))
