"""Numerical helpers shared by the forward passes and the samplers."""

from __future__ import annotations

import torch


def upcast(logits: torch.Tensor) -> torch.Tensor:
    """Half-precision logits go to float32 before log_softmax; float32/float64 stay as they are."""
    return logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
