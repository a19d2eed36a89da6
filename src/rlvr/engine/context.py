"""What one update reads and changes (``StepContext``), the hooks through which tools watch it
(``StepObserver``), and the small helpers every part of a step shares.

The context is the contract between whoever drives a step (the trainer, ``rlvr inspect``, ``rlvr
grad-variance``) and the step itself (engine/step.py): a step reads the config, the queries and the
frozen parts, and changes only the policy, its optimizer (and the critic's), the sampler's copy of
the weights and the exploration counts. Nothing else of the trainer is visible to it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.config import OptimConfig, RunConfig
from rlvr.engine.sync_probe import SyncProbe
from rlvr.models.forward import Forward
from rlvr.models.sharded import is_sharded
from rlvr.types import Query, RolloutBatch

if TYPE_CHECKING:  # for annotations only: none of these modules is imported at run time from here
    from rlvr.engine.critic import Critic
    from rlvr.engine.distributed import World
    from rlvr.engine.exploration import ExplorationTracker
    from rlvr.engine.reference import ReferencePolicy
    from rlvr.engine.update import MicroBatch
    from rlvr.meters.hacking import HackingMonitor
    from rlvr.meters.memory import MemoryMeter
    from rlvr.rollout.sampler import Sampler
    from rlvr.verifiers import RewardFunction, ScoredCompletion


@dataclass
class StepContext:
    """Everything a step touches. Built once by the trainer; a tool builds one the same way."""

    cfg: RunConfig
    forward: Forward
    """π_θ and the forward pass it runs (model.forward, chosen once in engine/build.py): what scoring,
    sampling and the memory meter are handed."""
    tokenizer: PreTrainedTokenizerBase
    optimizer: torch.optim.Optimizer
    reference: ReferencePolicy | None
    """π_ref (engine/reference.py); None when no KL term or preference loss needs it."""
    critic: Critic | None
    """PPO's value model and its optimizer; None for critic-free algorithms."""
    sampler: Sampler
    """The rollout backend (rollout/backends.py); with rollout.max_staleness >= 1 the sampler process
    that samples ahead in its place (engine/async_rollouts.py `RolloutProcess`, which the step asks
    for its batch). The step calls `sync_weights` on either."""
    reward_fn: RewardFunction
    train_queries: list[Query]
    hacking: HackingMonitor | None
    exploration: ExplorationTracker
    memory: MemoryMeter
    dist: World
    sync_probe: SyncProbe = field(default_factory=SyncProbe)
    """The sampler_sync health check's probe batch (engine/sync_probe.py)."""

    @property
    def policy(self) -> PreTrainedModel:
        """π_θ itself: what the optimizer steps and the sampler syncs from."""
        return self.forward.model

    @property
    def sharded(self) -> bool:
        """Whether π_θ is sharded over the processes (train.sharding=fsdp2, engine/sharding.py)."""
        return is_sharded(self.policy)

    @property
    def whole(self) -> Forward:
        """π_θ with its whole weights on this process, for what one process does alone (held-out
        evaluation, checkpoints, exports): the policy, or when it is sharded the sampler's copy,
        gathered after every update in the policy's precision."""
        return self.sampler.forward if self.sharded else self.forward


@dataclass
class Rollouts:
    """One step's sampled, verified and shaped batch (engine/rollouts.py makes it)."""

    batch: RolloutBatch
    scored: list[ScoredCompletion]  # [N]
    rewards: torch.Tensor  # [B, G] shaped rewards, NaN where unscorable
    metrics: dict[str, float] = field(default_factory=dict)
    ref_logp: torch.Tensor | None = None
    """log π_ref of the sampled tokens [N, T], where the sampler process computed it (async mode)."""


class StepObserver:
    """Hooks a step calls as it goes; each does nothing here. A tool subclasses what it needs
    (diagnostics/capture.py records every tensor of the update this way). Tensors passed are the
    step's own: an observer must not change them."""

    def rollouts(self, rollouts: Rollouts) -> None:
        """The step's sampled, verified and shaped batch (after dynamic sampling)."""

    def reference(self, ref_logp: torch.Tensor | None) -> None:
        """log π_ref of the sampled tokens [N, T], or None."""

    def advantages(
        self, batch: RolloutBatch, advantages: torch.Tensor, mask: torch.Tensor, stats: dict[str, Any]
    ) -> None:
        """What the loss is fed: the batch (its old_logp is π_θ_old's under TIS), the advantages [N]
        or [N, T] (KL in the reward, TIS weights, GAE), the loss mask [N, T] (overlong filter,
        unscorable rows under PPO), and the estimator's stats (group mean and std ...)."""

    def iteration(self, index: int, last: bool) -> None:
        """Before pass ``index`` of ``algo.num_iterations`` over the batch."""

    def micro_batch(self, mb: MicroBatch, logp: torch.Tensor) -> None:
        """After a micro-batch's backward: the log-probs [n, t] its loss saw."""

    def critic(self, values: torch.Tensor, returns: torch.Tensor, advantages: torch.Tensor) -> None:
        """PPO: V(s_t) at sampling time, the GAE returns and advantages, each [N, T]."""

    def pairs(self, record: dict[str, torch.Tensor]) -> None:
        """DPO: chosen and rejected rows [M], their sequence log-probs under π_θ and π_ref, margins."""


@dataclass
class Timer:
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.seconds[f"time/{name}"] = self.seconds.get(f"time/{name}", 0.0) + time.perf_counter() - start


def batch_queries(queries: list[Query], step: int, batch_size: int, seed: int) -> list[Query]:
    """The B queries of a step: a fresh shuffle per epoch, a pure function of (seed, step) so that a
    resumed run sees exactly the queries the uninterrupted run would have seen."""
    order: list[Query] = []
    start = step * batch_size
    epoch = start // len(queries)
    while len(order) < (start % len(queries)) + batch_size:
        shuffled = list(queries)
        random.Random(f"{seed}-{epoch}").shuffle(shuffled)
        order.extend(shuffled)
        epoch += 1
    offset = start % len(queries)
    return order[offset : offset + batch_size]


def learning_rate(optim: OptimConfig, step: int) -> float:
    """Linear warm-up over ``optim.warmup_steps``, then constant."""
    warmup = optim.warmup_steps
    return optim.lr * min(1.0, (step + 1) / warmup) if warmup else optim.lr
