"""The flight recorder's batches (train.recorder_steps = K > 0).

Beside the checkpoints after the last K steps (engine/checkpoint.py: the weights, optimizer and RNG
state a step starts from), the run's recorder/ keeps each of those steps' batch as the trainer
trained on it: the queries, prompts and completions with the sampler's log-probs (old_logp), the
verdicts and rewards, the reference's log-probs, the RNG state the step started from and the
loss it logged. `rlvr inspect --run DIR --step N` trains on the recorded batch instead of sampling
again, so a step whose sampling cannot be repeated bit for bit (vLLM, an asynchronous sampler,
another machine) is still replayed exactly, and its capture replays under other settings with
`rlvr inspect --replay`.

When a micro-batch's log-probs or the gradient after its backward hold a NaN or an infinity, the
record names that micro-batch's rows (`nonfinite_rows`, the first such micro-batch); the first
non-finite alarm pins the step's batch beside its pinned checkpoint, where rotation never removes it
(whatever K is: the batch of every step is held until the next one).

Under several processes the recorder keeps rank 0's share of the step (its own groups).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rlvr.engine.checkpoint import rng_state
from rlvr.engine.context import Rollouts, StepObserver
from rlvr.engine.update import MicroBatch
from rlvr.models.sharded import local
from rlvr.rundir import RECORDER, recorder_dir

BATCH, PINNED_BATCH = "batch-step-", "pinned-batch-step-"
"""recorder/<BATCH><N>.pt is step N's batch; a pinned one (the first non-finite step) never rotates out."""


class FlightRecorder(StepObserver):
    """Keeps one step's batch as the step runs (`begin` before it), for `write` after it."""

    def __init__(self, policy: torch.nn.Module):
        self.policy = policy
        self.record: dict[str, Any] = {}

    def begin(self) -> None:
        self.record = {"rng": rng_state()}  # the state the step starts from, as the checkpoint before it holds

    def rollouts(self, rollouts: Rollouts) -> None:
        self.record["rollouts"] = rollouts

    def reference(self, ref_logp: torch.Tensor | None) -> None:
        self.record["ref_logp"] = ref_logp

    def micro_batch(self, mb: MicroBatch, logp: torch.Tensor) -> None:
        if "nonfinite_rows" in self.record:
            return
        grads = [local(p.grad) for p in self.policy.parameters() if p.grad is not None]
        norms = torch.stack(torch._foreach_norm(grads)) if grads else torch.zeros(1)  # one pass, a NaN or inf stays
        if not (torch.isfinite(logp[mb.completion_mask.bool()]).all() and torch.isfinite(norms).all()):
            self.record["nonfinite_rows"] = mb.rows.tolist()

    def write(self, out_dir: Path, step: int, loss: float | None, *, keep: int = 0, pinned: bool = False) -> Path:
        """recorder/<BATCH><step>.pt (written whole, then renamed) and all but the newest `keep`
        unpinned batches removed; or, `pinned`, recorder/<PINNED_BATCH><step>.pt, which stays."""
        folder = recorder_dir(out_dir)
        folder.mkdir(exist_ok=True)
        path = folder / f"{PINNED_BATCH if pinned else BATCH}{step}.pt"
        tmp = path.with_name(f".{path.name}.tmp")
        torch.save({**self.record, "step": step, "loss": loss}, tmp)
        tmp.rename(path)
        for _, old in sorted(recorded_batches(out_dir, pinned=False).items())[:-keep] if keep else ():
            old.unlink(missing_ok=True)
        return path


def recorded_batches(out_dir: Path, *, pinned: bool = True) -> dict[int, Path]:
    """The recorder's batches by step (pinned ones first where both exist, with `pinned`)."""
    found: dict[int, Path] = {}
    folder = recorder_dir(out_dir)
    for prefix in (PINNED_BATCH, BATCH) if pinned else (BATCH,):
        for path in sorted(folder.glob(f"{prefix}*.pt")) if folder.is_dir() else ():
            if (step := recorded_step(path)) is not None:
                found.setdefault(step, path)
    return found


def recorded_step(path: Path) -> int | None:
    """The step of a recorder batch file's name (recorder/batch-step-<N>.pt, pinned or not), else None."""
    for prefix in (PINNED_BATCH, BATCH):
        number = path.name.removeprefix(prefix).removesuffix(".pt")
        if number != path.name and path.suffix == ".pt" and number.isdigit() and path.parent.name == RECORDER:
            return int(number)
    return None


def load_batch(path: Path) -> dict[str, Any]:
    """A recorded batch: {"rollouts", "ref_logp", "rng", "step", "loss", and "nonfinite_rows" if any}."""
    return torch.load(path, weights_only=False)
