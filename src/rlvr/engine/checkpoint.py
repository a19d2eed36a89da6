"""Resumable checkpoints: the policy in Hugging Face format plus optimizer, step and RNG state.

One `checkpoint/` directory per run (rlvr/rundir.py names it and finds it), replaced atomically
(write beside it, then rename), so a run killed at any moment leaves either the previous checkpoint
or the new one, never half of one.
"""

from __future__ import annotations

import pickle
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.errors import RunFailure
from rlvr.rundir import CHECKPOINT, STATE_FILE, checkpoint_dir


class CheckpointError(RunFailure):
    """A checkpoint could not be written; the one before it is kept."""


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    out_dir: Path,
    step: int,
    policy: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    optimizer: torch.optim.Optimizer,
    extra: dict[str, Any],
) -> Path:
    final = checkpoint_dir(out_dir)
    tmp = out_dir / f".{CHECKPOINT}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        policy.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        torch.save({"step": step, "optimizer": optimizer.state_dict(), "rng": rng_state(), **extra}, tmp / STATE_FILE)
    except OSError as err:  # a full disk, a quota, a vanished mount: the previous checkpoint stays whole
        shutil.rmtree(tmp, ignore_errors=True)
        kept = "the previous checkpoint is intact" if final.exists() else "no earlier checkpoint exists"
        raise CheckpointError(
            f"could not write the checkpoint of step {step} in {out_dir} ({err.strerror or err}); {kept}. "
            f"Free space (or point --out elsewhere) and continue with `rlvr train --resume {out_dir}`"
        ) from err
    old = out_dir / f".{CHECKPOINT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


MOVED = {"rlvr.train.evaluate": "rlvr.rollout.heldout", "rlvr.engine.evaluate": "rlvr.rollout.heldout"}
"""Modules whose classes a checkpoint may hold (the base model's HeldoutResult), under the names
they had when the checkpoint was written: a run saved before a move still resumes."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED.get(module, module), name)


class _MovedModules:
    """The pickle module torch.load is given: the standard one, reading old module names as new."""

    Unpickler = _Unpickler
    load = staticmethod(pickle.load)


def load_state(path: Path) -> dict[str, Any]:
    return torch.load(path / STATE_FILE, weights_only=False, pickle_module=_MovedModules)


def saved_step(path: Path) -> int:
    """The step the checkpoint at `path` was saved after; its tensors (the optimizer's moments) are
    mapped from the file, not read into memory."""
    return int(torch.load(path / STATE_FILE, weights_only=False, pickle_module=_MovedModules, mmap=True)["step"])
