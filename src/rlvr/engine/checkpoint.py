"""Resumable checkpoints: the policy in Hugging Face format plus optimizer, step and RNG state.

One `checkpoint/` directory per run (rlvr/rundir.py names it and finds it), replaced atomically
(write beside it, then rename), so a run killed at any moment leaves either the previous checkpoint
or the new one, never half of one.
"""

from __future__ import annotations

import pickle
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.engine.distributed import World
from rlvr.errors import RunFailure
from rlvr.rundir import (
    CHECKPOINT,
    OPTIMIZER_SHARDS,
    PINNED,
    RECORDED,
    STATE_FILE,
    checkpoint_dir,
    find_checkpoint,
    recorded_checkpoints,
    recorder_dir,
)


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
    *,
    record: int = 0,
    previous_step: int | None = None,
    shards: Callable[[Path], None] | None = None,
    world: World = World(),
) -> Path:
    """Write the checkpoint after `step`. `record` > 0 (train.recorder_steps): the checkpoint it
    replaces, after `previous_step`, moves to the flight recorder (rundir.recorder_dir) instead of
    being deleted, and the recorder keeps the newest `record` of them.

    `shards` (train.sharding=fsdp2): every process of `world` calls this, and `shards(path)` writes
    its shards of the optimizer state to `path` (engine/sharding.py); the state file then holds no
    optimizer. `policy` holds the whole weights either way; rank 0 alone writes them and the rest."""
    final = checkpoint_dir(out_dir)
    tmp = out_dir / f".{CHECKPOINT}.tmp"
    if world.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
    world.barrier()

    def write() -> str | None:
        try:
            if shards is not None:
                shards(tmp / OPTIMIZER_SHARDS)  # collective: every process writes its own shards
            if world.is_main:
                policy.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
                optimizer_state = None if shards is not None else optimizer.state_dict()
                torch.save({"step": step, "optimizer": optimizer_state, "rng": rng_state(), **extra}, tmp / STATE_FILE)
        except OSError as err:  # a full disk, a quota, a vanished mount: the previous checkpoint stays whole
            return str(err.strerror or err)
        except Exception as err:  # DCP reports a rank's failure to all of them as a CheckpointException
            if shards is None:
                raise
            return str(err).splitlines()[0]
        return None

    failed = write()
    failed = world.on_main(lambda: failed) or failed  # rank 0's failure ends every rank's save
    if failed:
        if world.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
        kept = "the previous checkpoint is intact" if final.exists() else "no earlier checkpoint exists"
        raise CheckpointError(
            f"could not write the checkpoint of step {step} in {out_dir} ({failed}); {kept}. "
            f"Free space (or point --out elsewhere) and continue with `rlvr train --resume {out_dir}`"
        )
    if world.is_main:
        _replace(out_dir, final, tmp, record=record, previous_step=previous_step)
    return final


def _replace(out_dir: Path, final: Path, tmp: Path, *, record: int, previous_step: int | None) -> None:
    """The written checkpoint `tmp` becomes `final` by renames, the one it replaces kept by the recorder or deleted."""
    old = out_dir / f".{CHECKPOINT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    if record and previous_step is not None and old.exists():
        keep_in_recorder(out_dir, old, previous_step, record)
    shutil.rmtree(old, ignore_errors=True)


def keep_in_recorder(out_dir: Path, checkpoint: Path, step: int, keep: int) -> None:
    """Move a replaced checkpoint into the recorder as the one after `step`; drop all but the newest
    `keep` (a pinned one, ``pin_in_recorder``, stays)."""
    target = recorder_dir(out_dir) / f"{RECORDED}{step}"
    target.parent.mkdir(exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    checkpoint.rename(target)
    kept = sorted(recorded_checkpoints(out_dir, pinned=False).items())
    for _, path in kept[:-keep]:
        shutil.rmtree(path, ignore_errors=True)


def pin_in_recorder(out_dir: Path, step: int) -> Path | None:
    """Copy the checkpoint after `step` (the recorder's, or the run's own) to a pinned entry that
    rotation never removes: the state an exact replay of step + 1 needs. None when none holds it."""
    held = {**recorded_checkpoints(out_dir, pinned=False)}
    current = find_checkpoint(out_dir)
    if current is not None and saved_step(current) == step:
        held[step] = current
    if step not in held:
        return None
    target = recorder_dir(out_dir) / f"{PINNED}{step}"
    if not target.exists():
        target.parent.mkdir(exist_ok=True)
        shutil.copytree(held[step], target)
    return target


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
