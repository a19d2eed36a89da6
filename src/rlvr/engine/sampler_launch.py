"""The start of the sampler process of rollout.max_staleness (engine/async_rollouts.py runs in it).

Kept apart from async_rollouts.py, and free of torch, so that `rlvr train` can start the process as
soon as it has the run's config, before it imports torch itself: the process's own imports and
model load (about 2.5 s on 2 cores) then run beside the trainer's, instead of before the first
batch. `start_early` starts one and holds it until `take` hands it to the run's `RolloutProcess`
(same config, same rank); one nobody takes is ended when the command exits. Building a run
(engine/build.py) starts one first thing too, where no command did, so that the process's start
overlaps the loading of the task and models.
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from rlvr.config import RunConfig

SERVE = ("rlvr.engine.async_rollouts", "serve")
"""The process's main function, named rather than imported: importing it here would import torch."""


def start_sampler_process(target: Callable, args: tuple) -> multiprocessing.Process:
    """The process the sampler runs in, started: by "spawn" (safe with CUDA and vLLM, and with
    the trainer's threads), and not daemonic, because its verifiers start worker processes of their
    own (workers.py), which a daemonic process may not. `RolloutProcess` ends it when the trainer
    closes it or exits."""
    process = multiprocessing.get_context("spawn").Process(target=target, args=args, name="rlvr-sampler")
    process.start()
    return process


def _serve(*args: object) -> None:
    module, name = SERVE
    getattr(importlib.import_module(module), name)(*args)


@dataclass
class Launched:
    """A started sampler process and the trainer's end of its pipe."""

    process: multiprocessing.Process
    conn: Connection
    cfg: RunConfig
    rank: int
    finalizer: multiprocessing.util.Finalize | None = field(default=None, repr=False)


def launch(cfg: RunConfig, rank: int) -> Launched:
    """A sampler process for `cfg`'s run on process `rank`, started; it serves what the pipe asks."""
    conn, child = multiprocessing.get_context("spawn").Pipe()
    process = start_sampler_process(_serve, (child, cfg, rank, cfg.rollout.sampler_threads))
    child.close()
    return Launched(process, conn, cfg, rank)


_EARLY: list[Launched] = []
"""The process `start_early` started, until `take` hands it over."""


def _end(process: multiprocessing.Process, conn: Connection) -> None:
    """End a process nobody took (it has only imported and loaded: nothing is lost)."""
    conn.close()
    if process.is_alive():
        process.terminate()
    process.join(timeout=5)


def start_early(cfg: RunConfig) -> None:
    """Start the sampler process of `cfg`'s run now (rollout.max_staleness >= 1), for this process's
    rank (the RANK that torchrun and accelerate set, else 0), unless one was started for it already."""
    rank = int(os.environ.get("RANK", "0") or 0)
    if not cfg.rollout.max_staleness or any(e.cfg == cfg and e.rank == rank for e in _EARLY):
        return
    launched = launch(cfg, rank)
    launched.finalizer = multiprocessing.util.Finalize(
        launched, _end, args=(launched.process, launched.conn), exitpriority=10
    )
    _EARLY.append(launched)


def take(cfg: RunConfig, rank: int) -> Launched | None:
    """The early process for this run and rank, if one was started (and is still alive), else None."""
    while _EARLY:
        launched = _EARLY.pop()
        launched.finalizer.cancel()  # the taker ends it from now on
        if launched.cfg == cfg and launched.rank == rank and launched.process.is_alive():
            return launched
        _end(launched.process, launched.conn)
    return None
