"""Asynchronous rollouts (rollout.max_staleness = N >= 1): sampling runs in its own process beside
the trainer, on a copy of the policy at most N updates old.

    trainer:  step s: take batch s ─ update ─ push weights v=s+1 ─ step s+1 ...
    sampler:      batch s+1 (weights v ≤ s) ─ batch s+2 (v ≤ s+1) ─ ...   (generate + verify + reference)

The versions: the policy after v updates is version v; batch s is trained on at step s, when the
trainer holds version s. The trainer asks for batch b only once it has pushed version b − N, and
the sampler, before each batch, applies the newest weights it has been sent, so every batch is
sampled from a version in [s − N, s]: its staleness s − v is at most N. That is admission control
(AReaL's max_head_offpolicyness, prime-rl's max_off_policy_steps, tinker-cookbook's bounded
sampling ahead): the sampler is held back, and no group is ever thrown away for being stale.
Discarding stale groups would bias training toward whatever finishes fast (short, easy rollouts).

Every token of a batch carries the version that sampled it (RolloutBatch.versions); the batch's
old_logp are the sampler's, so the clipped ratio π_θ / π_sampler corrects for the staleness, and
with algo.tis_cap the ratio is taken against the trainer's weights at the update and each token
weighted (or masked) by π_θ_old / π_sampler (algos/tis.py: AReaL's decoupled objective).

The sampler process builds its own policy copy (model.name, with LoRA adapters if set), sampler
(rollout.backend) and reward (reward.*), so it verifies what it samples, and, where the loss has a
KL term, its own frozen reference (the weights of model.name, or the copy's adapters switched off
under LoRA), so that log π_ref of each batch is computed there too: π_ref never changes, so it is
the same number the trainer would compute, and the trainer's step is left with the update alone
(on 2 cores the reference forward is 18% of a synchronous default step). It is started with
"spawn", which works with CUDA and vLLM, before `rlvr train` imports torch (engine/sampler_launch.py),
and asked for its first batches as soon as the run is built (`begin`), so that it loads its model
and samples while the trainer loads and evaluates the base model. Weights are
sent over a pipe as one flat byte buffer (engine/weight_sync.py): only the parameters that train (the
adapters alone under LoRA), copied once by the trainer and written by a thread. The process
samples with rollout.sampler_threads torch threads.

No partial rollouts: a batch is sampled from one version from its first token to its last. The
samplers here generate a whole batch in one call; continuing a generation across a weight update
would need the decode loop to take weights between tokens, and with a bound of N updates a
batch already finishes within a step or two of the trainer's.

Not bit-reproducible: which version samples a batch depends on timing. max_staleness = 0 is the
synchronous loop of engine/step.py and is exactly reproducible; this class run with max_staleness
= 0 (lockstep) gives the synchronous loop's metrics (tests/engine/test_async_rollouts.py).
"""

from __future__ import annotations

import faulthandler
import io
import multiprocessing
import multiprocessing.util
import queue
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from transformers.utils import logging as hf_logging

from rlvr.algos import ALGORITHMS
from rlvr.engine.context import Rollouts, Timer
from rlvr.engine.reference import reference_for
from rlvr.engine.rollout_parts import build_reward, build_sampler
from rlvr.engine.rollouts import sample_round
from rlvr.engine.sampler_launch import launch, take
from rlvr.engine.sync_probe import probe_error, probe_logp, probe_of
from rlvr.engine.weight_sync import pack_state, unpack_state
from rlvr.errors import RunFailure

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    import numpy as np

    from rlvr.config import RunConfig
    from rlvr.types import Query, RolloutBatch

WAIT_POLL_S = 0.5
"""How often a waiting trainer checks that the sampler process is still alive."""


class SamplerProcessError(RunFailure):
    """The sampler process died or failed; the message says how and what to do."""


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _loads(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), weights_only=False)


def trainable_state(policy: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that train (all of them, or the adapters alone under LoRA): what a sync sends."""
    return {name: p.detach() for name, p in policy.named_parameters() if p.requires_grad}


def _write(conn: Connection, outbox: queue.SimpleQueue, errors: list[BaseException]) -> None:
    """The writer thread: send each item's buffers in turn, until None. It holds the pipe, the
    queue and plain bytes (numpy arrays, engine/weight_sync.py), nothing of the trainer's. An object
    whose last reference goes on this thread is freed on it, and a tensor's dealloc lets go of the
    GIL: when that happened while the interpreter shut down (the thread once ran a bound method of
    the trainer's side, and the trainer was dropped as the command ended), the thread could not
    take the GIL back and the process aborted ("terminate called without an active exception")."""
    while (buffers := outbox.get()) is not None:
        try:
            for data in buffers:
                conn.send_bytes(data)
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as error:
            errors.append(error)
            return


class RolloutProcess:
    """The trainer's side: starts the sampler process, asks it for batches ahead within the bound,
    sends it the weights after every update, and hands the step its batch (``rollouts``). It takes
    the place of the sampler in the step's context (``sync_weights`` as every sampler has)."""

    def __init__(
        self,
        cfg: RunConfig,
        policy: torch.nn.Module,
        schedule: Callable[[int], list[Query]],
        *,
        max_staleness: int,
        rank: int = 0,
    ):
        """`policy` is the trainer's (whose weights are sent), `schedule(step)` the queries of a step's
        batch (this process's shard)."""
        self.cfg, self.policy, self.schedule, self.max_staleness = cfg, policy, schedule, max_staleness
        self.version = self.requested = 0
        """The trainer's policy version (updates made so far), and the next batch not yet asked for:
        both the first step's when it asks (a resumed run starts at its checkpoint's step)."""
        self.started = False
        self.sync_bytes = 0
        self.asked: dict[int, list[str]] = {}
        """The query ids of each batch asked for and not yet received."""
        self.probe: RolloutBatch | None = None
        self.expected: dict[int, torch.Tensor] = {}
        """The policy's log-probs of the probe batch at each version sent (engine/sync_probe.py)."""
        launched = take(cfg, rank) or launch(cfg, rank)  # one `rlvr train` started already, or a new one
        self.process, self.conn = launched.process, launched.conn
        self.outbox: queue.SimpleQueue[tuple | None] = queue.SimpleQueue()
        """What the writer thread sends: each item's buffers in turn, as one message each."""
        self.send_errors: list[BaseException] = []
        """The writer thread's error, once it met one (the pipe broke: the process is gone)."""
        self.writer = threading.Thread(
            target=_write, args=(self.conn, self.outbox, self.send_errors), name="rlvr-sampler-writer", daemon=True
        )
        self.writer.start()
        self._finalizer = multiprocessing.util.Finalize(
            self, _stop, args=(self.process, self.conn, self.outbox, self.writer), exitpriority=10
        )

    def _send(self, message: tuple, *buffers: np.ndarray) -> None:
        """Queue a message, and the raw buffers that follow it as messages of their own (a weight
        sync's bytes); a thread writes them back to back, so the trainer never waits for the sampler
        to read."""
        if self.send_errors:
            what = "weights" if message[0] == "weights" else "work"
            raise self._died(f"while the trainer sent it {what}") from self.send_errors[0]
        self.outbox.put((_dumps(message), *buffers))

    def _died(self, when: str) -> SamplerProcessError:
        self.process.join(timeout=5)
        code = self.process.exitcode
        how = "is still running but closed its pipe" if code is None else f"exited with code {code}"
        return SamplerProcessError(
            f"the sampler process (rollout.max_staleness={self.max_staleness}) {how} {when}; the run stops here. "
            "Its last checkpoint resumes with `rlvr train --resume` (batches in flight are sampled again), "
            "or set rollout.max_staleness=0 to sample in the trainer"
        )

    def _push_weights(self, policy: torch.nn.Module) -> None:
        """The weights of this version: a header, then their bytes (`pack_state`)."""
        spec, flat = pack_state(trainable_state(policy))
        self.sync_bytes = flat.size
        self._send(("weights", self.version, spec, flat.size), flat)

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """After an update: the policy is one version newer; send it (the sampler applies the
        newest weights it has before its next batch)."""
        if self.started:
            self.version += 1
            if self.probe is not None:
                self.expected[self.version] = probe_logp(policy, self.probe)
            self._push_weights(policy)

    def begin(self, step: int) -> None:
        """Start sampling at `step` (the run's first): hand the sampler the trainer's weights and
        torch RNG state (sampling continues the stream the synchronous loop would have drawn from)
        and ask for the batches up to step + max_staleness. The trainer calls it once the run is
        built, so the sampler loads and samples while the base model is evaluated; a first
        ``rollouts`` call does it if nothing did."""
        self.version = self.requested = step
        self._send(("rng", torch.get_rng_state()))
        self._push_weights(self.policy)
        self.started = True
        self._ask_ahead(step)

    def _ask_ahead(self, step: int) -> None:
        """Ask for every batch up to step + max_staleness not asked for yet (the bound's pacing)."""
        last = self.cfg.train.steps - 1
        while self.requested <= min(step + self.max_staleness, last):
            batch_queries = self.schedule(self.requested)
            self._send(("sample", self.requested, batch_queries))
            self.asked[self.requested] = [q.id for q in batch_queries]
            self.requested += 1

    def rollouts(self, step: int, queries: list[Query], timer: Timer) -> Rollouts:
        """Batch `step`, sampled and verified by the sampler process, with its staleness metrics.
        Asks for every batch up to step + max_staleness first, so the sampler works ahead."""
        waited = time.perf_counter()
        if not self.started:
            self.begin(step)
        if step != self.version:
            raise RuntimeError(f"step {step} asked for rollouts while the policy is at version {self.version}")
        self._ask_ahead(step)
        if [q.id for q in queries] != self.asked.pop(step):
            raise RuntimeError(f"step {step}: the step's queries are not the ones the sampler was asked for")
        message = self._receive(step)
        idle = time.perf_counter() - waited
        _, sampled_step, result = message
        if sampled_step != step:
            raise RuntimeError(f"step {step} received the sampler's batch {sampled_step}")
        for name, seconds in result["seconds"].items():
            timer.seconds[name] = timer.seconds.get(name, 0.0) + seconds
        timer.seconds["time/trainer_idle"] = timer.seconds.get("time/trainer_idle", 0.0) + idle
        rollouts: Rollouts = result["rollouts"]
        rollouts.metrics = {
            **rollouts.metrics,
            **staleness_metrics(rollouts, step, self.max_staleness),
            **result["metrics"],
            **self._probe_error(result.pop("probe", None)),
            "sync/bytes": self.sync_bytes,
        }
        if self.probe is None:  # the first batch gives the probe; the sampler scores it after each sync
            self.probe = probe_of(rollouts.batch)
            self._send(("probe", self.probe))
        return rollouts

    def _probe_error(self, scored: tuple[int, torch.Tensor] | None) -> dict[str, float]:
        """sync/probe_error of the newest version the sampler applied and scored the probe with."""
        if scored is None or scored[0] not in self.expected:
            return {}
        version, logp = scored
        error = probe_error(logp, self.expected[version], self.probe)
        for old in [v for v in self.expected if v <= version]:
            del self.expected[old]
        return {"sync/probe_error": error}

    def _receive(self, step: int) -> tuple:
        while True:
            try:
                if self.conn.poll(WAIT_POLL_S):
                    message = _loads(self.conn.recv_bytes())
                    break
            except (EOFError, ConnectionResetError, OSError) as error:
                raise self._died(f"while step {step} waited for its rollouts") from error
            if not self.process.is_alive():
                raise self._died(f"while step {step} waited for its rollouts")
        if message[0] == "error":
            self.close()
            last = message[1].strip().splitlines()[-1]
            raise SamplerProcessError(
                f"the sampler process failed while sampling for step {step}: {last}\n"
                f"its traceback:\n{message[1].rstrip()}"
            )
        return message

    def close(self) -> None:
        """Stop the process (it finishes nothing in flight)."""
        self._finalizer()


def _stop(
    process: multiprocessing.Process, conn: Connection, outbox: queue.SimpleQueue, writer: threading.Thread
) -> None:
    """Ask the sampler process to stop, then end it if it does not; let the writer thread finish;
    close the pipe. Run by `RolloutProcess.close`, or at the trainer's exit if nothing closed it (a
    finalizer). The writer is joined so that no thread of the run is left running into the
    interpreter's shutdown."""
    if process.is_alive():
        outbox.put((_dumps(("stop",)),))
        process.join(timeout=5)
    outbox.put(None)
    if process.is_alive():
        process.terminate()
        process.join(timeout=5)
    writer.join(timeout=5)  # it ends at the None, or at the broken pipe of a process that is gone
    conn.close()


def staleness_metrics(rollouts: Rollouts, step: int, max_staleness: int) -> dict[str, float]:
    """rollout/staleness_mean and _max over the batch's sampled tokens (step − the version that
    sampled each), and rollout/staleness/<k>, the share of tokens k versions old (k = 0 .. N)."""
    batch = rollouts.batch
    mask = batch.completion_mask.bool()  # [N, T]
    staleness = (step - batch.versions)[mask].double()  # [M]
    if staleness.numel() == 0:
        return {"rollout/staleness_mean": 0.0, "rollout/staleness_max": 0.0}
    shares = {f"rollout/staleness/{k}": float((staleness == k).double().mean()) for k in range(max_staleness + 1)}
    return {
        "rollout/staleness_mean": float(staleness.mean()),
        "rollout/staleness_max": float(staleness.max()),
        **shares,
    }


class _SamplerSide:
    """The sampler process's parts: its policy copy, sampler and reward, built from the run's config."""

    def __init__(self, cfg: RunConfig, rank: int):
        from rlvr.bases import resolve_model_path
        from rlvr.models import load_policy
        from rlvr.models.forward import forward_for
        from rlvr.models.lora import add_lora

        self.cfg, self.rank = cfg, rank
        device = "cuda" if cfg.model.device != "cpu" and torch.cuda.is_available() else "cpu"
        policy, tokenizer = load_policy(resolve_model_path(cfg.model.name), device, dtype=cfg.model.dtype)
        if cfg.model.lora_rank:
            policy = add_lora(policy, cfg.model, seed=cfg.train.seed)
        self.policy = policy
        self.params = dict(policy.named_parameters())
        algorithm = ALGORITHMS[cfg.algo.algorithm]
        held = algorithm.update == "policy_gradient" and algorithm.holds_reference(cfg.algo.beta)
        self.reference = reference_for(policy, cfg.model.forward) if held else None  # the weights before any update
        self.sampler, _, self.tools = build_sampler(cfg, forward_for(policy, cfg.model.forward), tokenizer)
        self.reward_fn, _ = build_reward(cfg)
        self.version: int | None = None
        self.sync: dict[str, float] = {}
        self.probe: RolloutBatch | None = None
        self.scored: tuple[int, torch.Tensor] | None = None
        """The probe's log-probs under the newest weights applied, with their version."""

    def apply(self, version: int, state: dict[str, torch.Tensor]) -> None:
        """Load weights of `version`; record the share of their elements that changed at the
        sampler's precision (rollout.dtype): what a sync that sent only changes would send."""
        dtype = getattr(torch, self.cfg.rollout.dtype)
        changed = total = 0
        with torch.no_grad():
            for name, value in state.items():
                param = self.params[name]
                changed += int((param.to(dtype) != value.to(param.device, dtype)).sum())
                total += value.numel()
                param.copy_(value)
        self.sampler.sync_weights(self.policy)
        first = self.version is None
        self.version = version
        if self.probe is not None:
            self.scored = (version, self.sampler.score(self.probe).float())
        self.sync = {} if first else {"sync/changed_frac": changed / max(total, 1), "sync/params": total}

    def sample(self, step: int, queries: list[Query], idle: float) -> dict:
        timer = Timer()
        rollouts = sample_round(self.cfg, self.sampler, self.reward_fn, queries, timer, f"{step}-0", rank=self.rank)
        batch = rollouts.batch
        batch.versions = torch.where(batch.completion_mask.bool(), self.version, -1)  # [N, T]
        if self.reference is not None:  # π_ref never changes: computed here, it leaves the trainer's step
            with timer.phase("reference"):
                rollouts.ref_logp = self.reference.logprobs(
                    batch, temperature=self.cfg.rollout.temperature, micro_batch_size=self.cfg.optim.micro_batch_size
                )  # [N, T]
        busy = sum(timer.seconds.values())
        metrics = {
            "rollout/policy_version": self.version,
            "rollout/samples_per_s": batch.num_completions / busy if busy > 0 else float("nan"),
            **self.sync,
        }
        self.sync, scored, self.scored = {}, self.scored, None
        return {"rollouts": rollouts, "seconds": timer.seconds | {"time/sampler_idle": idle}, "metrics": metrics,
                "probe": scored}  # fmt: skip

    def close(self) -> None:
        if self.tools is not None:
            self.tools.close()


def serve(conn: Connection, cfg: RunConfig, rank: int, threads: int) -> None:
    """The sampler process: apply weights as they come, and sample the batches asked for, in
    order, each with the newest weights received before it starts."""
    faulthandler.enable()  # a fatal signal prints every thread's stack to the run's output
    torch.set_num_threads(threads)
    hf_logging.disable_progress_bar()  # the trainer shows the run's progress; no bar for this copy's load
    side = None
    try:
        side = _SamplerSide(cfg, rank)
        pending: deque[tuple[int, list]] = deque()
        idle_from = time.perf_counter()
        while True:
            while not pending or conn.poll(0):  # block only when there is nothing to sample
                message = _loads(conn.recv_bytes())
                kind = message[0]
                if kind == "stop":
                    return
                if kind == "rng":
                    torch.set_rng_state(message[1])
                elif kind == "weights":  # its bytes follow as the next message (`pack_state`)
                    buffer = bytearray(message[3])
                    conn.recv_bytes_into(buffer)
                    side.apply(message[1], unpack_state(message[2], buffer))
                elif kind == "probe":
                    side.probe = message[1]
                elif kind == "sample":
                    pending.append((message[1], message[2]))
            step, queries = pending.popleft()
            result = side.sample(step, queries, time.perf_counter() - idle_from)
            conn.send_bytes(_dumps(("rollouts", step, result)))
            idle_from = time.perf_counter()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the trainer is gone
    except BaseException:
        try:
            conn.send_bytes(_dumps(("error", traceback.format_exc())))
        except OSError:
            pass
        raise SystemExit(1) from None
    finally:
        if side is not None:
            side.close()
