"""The training loop: build a run's parts once, then run the one step function (engine/step.py)
step after step, logging, checkpointing and evaluating between steps.

    queries → sample G completions (rollout/) → verify (verifiers/) → advantages (algos/)
    → clipped policy gradient + β·KL to the frozen reference (algos/, via engine/update.py) → AdamW

It orchestrates; every formula lives in algos/, and every step, whoever runs it, is ``run_step``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from rlvr import rundir
from rlvr.config import RunConfig
from rlvr.engine.build import Restored, build_run, restore
from rlvr.engine.checkpoint import pin_in_recorder, save_checkpoint
from rlvr.engine.context import StepObserver
from rlvr.engine.distributed import NullLog, World, world
from rlvr.engine.flight import FlightRecorder
from rlvr.engine.health import Health, HealthAlarm, Reading, checks_for
from rlvr.engine.metrics import MetricsLog
from rlvr.engine.sharding import save_optimizer_shards
from rlvr.engine.step import run_step
from rlvr.models.lora import is_lora, save_merged
from rlvr.models.sharded import local, sum_over_shards
from rlvr.rollout.heldout import HeldoutResult, evaluate_heldout


class Trainer:
    """One run: its parts (engine/build.py), the step, held-out evaluation and checkpoints."""

    def __init__(self, cfg: RunConfig, out_dir: Path, *, resume: bool = False):
        self.started = time.perf_counter()  # this command's segment of the run
        self.cfg, self.out_dir = cfg, out_dir
        checkpoint = rundir.find_checkpoint(out_dir) if resume else None
        self.parts = build_run(cfg, checkpoint)
        self.context = self.parts.context
        restored = restore(self.context, checkpoint) if checkpoint else Restored(0, None)
        self.start_step, self.base_eval, self.best = restored.step, restored.base_eval, restored.best
        self.segments = restored.segments  # the earlier commands' runs of it
        self.saved_step: int | None = self.start_step if checkpoint else None
        main = world().is_main
        self.health = Health(
            checks_for(cfg, hacking=self.context.hacking is not None),
            out_dir if main else None,
            keep_until_step=self.start_step,
        )
        if self.start_step and main:  # a resumed run's checks continue from the steps it logged
            self.health.replay([row for row in rundir.read_metrics(out_dir) if row.get("step", 0) <= self.start_step])
        self.parts.begin(self.start_step)

    def __getattr__(self, name: str):
        """The run's parts by name (policy, tokenizer, optimizer, sampler, reward_fn, hacking,
        critic, memory, dist, train_queries: the step context's; eval_queries, prompt_format,
        tools, device: the loop's)."""
        parts = self.__dict__.get("parts")
        for holder in (parts and parts.context, parts):
            if holder is not None and hasattr(holder, name):
                return getattr(holder, name)
        raise AttributeError(name)

    @property
    def reference(self) -> PreTrainedModel | None:
        """The frozen copy of the initial policy; None when none is held (β = 0, or LoRA's disabled adapters)."""
        return self.context.reference.held_copy if self.context.reference else None

    def evaluate(self) -> HeldoutResult:
        r, parts = self.cfg.rollout, self.parts
        return evaluate_heldout(
            self.context.whole,
            self.context.tokenizer,
            parts.eval_queries,
            self.context.reward_fn,
            n=self.cfg.train.eval_samples,
            temperature=r.temperature,
            top_p=r.top_p,
            max_new_tokens=r.max_new_tokens,
            gold_fn=self.context.hacking.gold_fn if self.context.hacking else None,
            prompt_format=parts.prompt_format,
            tools=parts.tools,
            ks=tuple(self.cfg.train.eval_ks),
            draw_seed=self.cfg.train.seed,  # the same draws at every evaluation of the run: paired
        )

    def close(self) -> None:
        """End the processes the run holds: the tool's sandbox pool and the process group."""
        self.parts.close()

    def step(self, step: int, observer: StepObserver | None = None) -> dict[str, float]:
        """One step of the configured algorithm (engine/step.py); returns its metrics."""
        return run_step(self.context, step, observer)

    def keep_if_best(self, step: int, result: HeldoutResult) -> None:
        """train.keep_best: the policy goes to best/ when `result` beats the best so far (ties keep
        the earlier; a score that is NaN never counts)."""
        name = self.cfg.train.keep_best
        value = result.to_dict()[name] if name != "none" else float("nan")
        if value != value or (self.best is not None and not value > self.best[name]):
            return
        best, tmp = rundir.best_dir(self.out_dir), self.out_dir / f".{rundir.BEST}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        _save_final(self, tmp)
        shutil.rmtree(best, ignore_errors=True)
        tmp.rename(best)
        self.best = {"step": step, name: value}

    def segments_until(self, step: int) -> list[dict]:
        """The run's segments, this command's up to `step` last."""
        now = {"from_step": self.start_step, "to_step": step, "wall_s": round(time.perf_counter() - self.started, 2)}
        return [*self.segments, now]

    def save(self, step: int) -> None:
        """The run's checkpoint after `step` steps: policy (its adapters alone with LoRA), optimizer,
        RNG, the critic if any. Rank 0's call writes it; a sharded run's is every rank's (each
        writes its optimizer shards)."""
        ctx = self.context
        extra = {"base_eval": self.base_eval, "best": self.best, "segments": self.segments_until(step),
                 "exploration": ctx.exploration.state()}  # fmt: skip
        if ctx.critic is not None:
            extra["critic"] = ctx.critic.state_dict()
        shards = (lambda path: save_optimizer_shards(ctx.policy, ctx.optimizer, path)) if ctx.sharded else None
        save_checkpoint(self.out_dir, step, ctx.whole.model, ctx.tokenizer, ctx.optimizer, extra,
                        record=self.cfg.train.recorder_steps, previous_step=self.saved_step,
                        shards=shards, world=ctx.dist if ctx.sharded else World())  # fmt: skip
        self.saved_step = step


def _write_summary(trainer: Trainer, final: HeldoutResult) -> dict:
    """summary.json; a resumed run's wall_s is the sum over its segments, listed under "segments"."""
    steps = trainer.cfg.train.steps
    segments = trainer.segments_until(steps)
    summary = {
        "base": trainer.base_eval.to_dict(),
        "final": final.to_dict(),
        "steps": steps,
        "wall_s": round(sum(s["wall_s"] or 0.0 for s in segments), 2),
    }
    if len(segments) > 1:
        summary["segments"] = segments
    if trainer.best is not None:
        summary["best"] = trainer.best
    if trainer.health.alarms:
        summary["alarms"] = trainer.health.alarms
    rundir.write_summary(trainer.out_dir, summary)
    return summary


def train(
    cfg: RunConfig,
    out_dir: str | Path,
    *,
    resume: bool = False,
    progress: bool = True,
    base_eval: HeldoutResult | None = None,
) -> dict:
    """Run training as configured; write the run directory; return the summary. `base_eval` is the
    base model's held-out evaluation when one was made already, to use instead of making it again:
    the same base, held-out split, sampling settings and train.seed draw the same samples
    (rollout/draws.py), so `rlvr compare` evaluates a base once for all the runs that share it."""
    out_dir = Path(out_dir)
    main = world().is_main  # under accelerate/torchrun only rank 0 evaluates and writes (engine/distributed.py)
    trainer = _start(cfg, out_dir, resume=resume, main=main)
    say = print if progress and main else (lambda *_: None)
    log = _metrics_log(cfg, out_dir, trainer.start_step if resume else 0) if main else NullLog()
    if trainer.base_eval is None and main:
        if base_eval is None:
            say(
                f"evaluating the base model: {len(trainer.eval_queries)} held-out queries x "
                f"{cfg.train.eval_samples} samples"
            )
            base_eval = trainer.evaluate()
        trainer.base_eval = base_eval
        trainer.keep_if_best(0, trainer.base_eval)
        say(f"base held-out pass@1 {trainer.base_eval.pass_at_1:.3f}, greedy {trainer.base_eval.greedy:.3f}")
    _run_steps(trainer, log, main=main, progress=progress and main)
    if not main:
        trainer.close()
        return {}  # rank 0 evaluates the trained model and returns the summary
    say("evaluating the trained model on the held-out queries")
    final_eval = trainer.evaluate()
    trainer.keep_if_best(cfg.train.steps, final_eval)
    log.log(cfg.train.steps, {f"eval/{k}": v for k, v in final_eval.to_dict().items()})
    log.close()
    _save_final(trainer, rundir.final_dir(out_dir))
    trainer.close()
    return _write_summary(trainer, final_eval)


def _start(cfg: RunConfig, out_dir: Path, *, resume: bool, main: bool) -> Trainer:
    """The run's trainer; its config written to the run directory. The task and model load first, so
    a bad one leaves no run directory behind (nor an empty one)."""
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        trainer = Trainer(cfg, out_dir, resume=resume)
    except BaseException:
        if created and main and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise
    if main:
        rundir.write_config(out_dir, cfg.to_dict())
    return trainer


def _metrics_log(cfg: RunConfig, out_dir: Path, keep_until_step: int) -> MetricsLog:
    return MetricsLog(
        out_dir,
        tensorboard=cfg.train.tensorboard,
        keep_until_step=keep_until_step,
        trackers=cfg.train.trackers,
        run_config=cfg.to_dict(),
    )


def _run_steps(trainer: Trainer, log: MetricsLog | NullLog, *, main: bool, progress: bool) -> None:
    """Steps start_step .. train.steps: each logged, evaluated every train.eval_every steps and
    checkpointed every train.save_every steps and after the last (rank 0 alone evaluates and saves)."""
    cfg = trainer.cfg
    bar = tqdm(
        range(trainer.start_step, cfg.train.steps),
        initial=trainer.start_step,
        total=cfg.train.steps,
        desc=cfg.algo.algorithm,
        unit="step",
        disable=not progress,
    )
    flight = FlightRecorder(trainer.policy) if main else None  # the step's batch, kept for the recorder
    for step in bar:
        step_start = time.perf_counter()
        if flight is not None:
            flight.begin()
        metrics = trainer.step(step, flight)
        done = step + 1
        if flight is not None and cfg.train.recorder_steps:
            flight.write(trainer.out_dir, done, metrics["loss"], keep=cfg.train.recorder_steps)
        if main and cfg.train.eval_every and done % cfg.train.eval_every == 0 and done < cfg.train.steps:
            result = trainer.evaluate()
            trainer.keep_if_best(done, result)
            metrics |= {f"eval/{k}": v for k, v in result.to_dict().items()}
        metrics["time/step"] = time.perf_counter() - step_start
        metrics["weights/nonfinite"] = nonfinite_weights(trainer.policy)  # a collective when sharded
        alarms = trainer.dist.on_main(lambda: _health(trainer, done, metrics, flight))  # every rank stops together
        log.log(done, metrics)
        saves = main or trainer.context.sharded  # a sharded checkpoint is written by every rank
        if alarms and cfg.train.on_alarm == "stop":
            if saves:
                trainer.save(done)
            bar.close()
            raise HealthAlarm(alarms, done, trainer.out_dir)
        if saves and (done == cfg.train.steps or (cfg.train.save_every and done % cfg.train.save_every == 0)):
            trainer.save(done)
        if main and cfg.train.keep_every and done % cfg.train.keep_every == 0:
            rundir.keep_step(trainer.out_dir, done, lambda path: _save_final(trainer, path))
        bar.set_postfix(
            reward=f"{metrics['reward']:.2f}", acc=f"{metrics['accuracy']:.2f}", kl=f"{metrics.get('kl', 0.0):.3f}"
        )
        for alarm in alarms if cfg.train.on_alarm != "ignore" and main else []:  # rank 0 reports
            bar.write(alarm.alarm(done))
    bar.close()


def nonfinite_weights(policy: PreTrainedModel) -> int:
    """How many of the policy's parameter tensors hold a NaN or an infinity (of a sharded policy:
    how many shards, summed over the processes)."""
    finite = [torch.isfinite(local(p)).all() for p in policy.parameters()]
    count = int(len(finite) - int(torch.stack(finite).sum())) if finite else 0
    return int(sum_over_shards(count, policy))


def _health(
    trainer: Trainer, step: int, metrics: dict[str, float], flight: FlightRecorder | None = None
) -> list[Reading]:
    """The step's health readings (engine/health.py), rank 0's. The first non-finite alarm pins the
    flight recorder's state before its step (engine/checkpoint.py) and the step's batch (engine/flight.py)."""
    alarms = trainer.health.observe(step, metrics)
    if any(a.check == "nonfinite" for a in alarms) and (pinned := pin_in_recorder(trainer.out_dir, step - 1)):
        replay = f"rlvr inspect --run {trainer.out_dir} --step {step}"
        batch = flight.write(trainer.out_dir, step, metrics.get("loss"), pinned=True) if flight else None
        note = (f"the state before it is pinned in {pinned}" + (f" and its batch in {batch}" if batch else "")
                + f": `{replay}` repeats the step with every intermediate")  # fmt: skip
        alarms = trainer.health.annotate("nonfinite", note, replay=replay)
    return alarms


def _save_final(trainer: Trainer, final: Path) -> None:
    """The trained model, loadable as any other: merged with its adapters under LoRA (final/adapter/)."""
    whole = trainer.context.whole.model  # a sharded policy's whole copy
    if is_lora(whole):
        save_merged(whole, final)
    else:
        whole.save_pretrained(final)
    trainer.tokenizer.save_pretrained(final)
