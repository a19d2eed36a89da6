"""The training loop: build a run's parts once, then run the one step function (engine/step.py)
step after step, logging, checkpointing and evaluating between steps.

    queries → sample G completions (rollout/) → verify (verifiers/) → advantages (algos/)
    → clipped policy gradient + β·KL to the frozen reference (algos/, via engine/update.py) → AdamW

It orchestrates; every formula lives in algos/, and every step, whoever runs it, is ``run_step``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch
import yaml
from tqdm import tqdm

from rlvr.algos import ALGORITHMS
from rlvr.config import RunConfig
from rlvr.engine.checkpoint import find_checkpoint, load_state, save_checkpoint, set_rng_state
from rlvr.engine.context import StepContext, StepObserver
from rlvr.engine.critic import Critic
from rlvr.engine.distributed import NullLog, World, world
from rlvr.engine.evaluate import HeldoutResult, evaluate_heldout
from rlvr.engine.exploration import ExplorationTracker
from rlvr.engine.metrics import MetricsLog
from rlvr.engine.reference import reference_for
from rlvr.engine.step import run_step
from rlvr.errors import UserError
from rlvr.meters.hacking import HackingMonitor
from rlvr.meters.memory import MemoryMeter
from rlvr.models import load_policy
from rlvr.models.lean import use_forward
from rlvr.models.lora import add_lora, checkpoint_mismatch, is_lora, load_adapter, save_merged
from rlvr.rollout.backends import make_sampler
from rlvr.rollout.prompts import PromptFormat, resolve_style
from rlvr.rollout.tools import ToolUse
from rlvr.tasks import load_task
from rlvr.verifiers import RewardFunction
from rlvr.verifiers.fidelity import training_verifier_for


def require_world_support(name: str, dist: World) -> None:
    """A UserError if `name` cannot train on `dist`'s processes: its update needs the whole batch in
    one place (a critic, pairs, or advantages normalised over the whole batch: REINFORCE++)."""
    if dist.enabled and not ALGORITHMS[name].multi_process:
        usable = ", ".join(n for n, a in ALGORITHMS.items() if a.multi_process)
        raise UserError(
            f"algo.algorithm={name} trains on one process only (its update needs the whole batch in "
            f"one place); launch it without accelerate/torchrun, or use one of: {usable}"
        )


class Trainer:
    """Holds the policy, the frozen reference, the optimizer and the data of one run."""

    def __init__(self, cfg: RunConfig, out_dir: Path, *, resume: bool = False):
        self.cfg, self.out_dir = cfg, out_dir
        if cfg.train.threads:
            torch.set_num_threads(cfg.train.threads)
        device = cfg.model.device
        if device == "cuda" and not torch.cuda.is_available():
            raise UserError("model.device=cuda but no CUDA device is visible; use model.device=cpu or auto")
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.dist = world()  # one process, or this one's place under accelerate/torchrun (engine/distributed.py)
        algorithm = ALGORITHMS[cfg.algo.algorithm]
        require_world_support(cfg.algo.algorithm, self.dist)
        self.device = self.dist.place(self.device)
        torch.manual_seed(cfg.train.seed + self.dist.rank)  # rank 0 keeps the single-process stream
        self.train_queries, self.eval_queries = load_task(cfg.task)
        weights = {"correctness": cfg.reward.correctness_weight, "format": cfg.reward.format_weight}
        if cfg.reward.reasoning_weight:  # computed only when it counts
            weights["reasoning"] = cfg.reward.reasoning_weight
        gold_for = None  # the local registry: this machine's sandbox pool and worker pools
        if cfg.reward.backend == "ray":
            from rlvr.integrations.ray_verify import ray_verifiers_for_run

            gold_for = ray_verifiers_for_run(cfg.reward.ray_address)
        verifier_for = training_verifier_for(cfg.reward, gold_for)  # gold, or weakened per reward.fidelity
        self.reward_fn = RewardFunction(weights, verifier_for=verifier_for)
        # A weakened training verifier is watched against its gold counterpart (docs/hacking.md).
        self.hacking = HackingMonitor.for_run(cfg.reward, weights, verifier_for, cfg.train.seed)
        checkpoint = find_checkpoint(out_dir) if resume else None
        if checkpoint is not None and (mismatch := checkpoint_mismatch(checkpoint, cfg.model)):
            raise UserError(f"cannot resume from {checkpoint}: it {mismatch}; keep the run's model.lora_* settings")
        precision = {"dtype": cfg.model.dtype, "gradient_checkpointing": cfg.model.gradient_checkpointing}
        self.policy, self.tokenizer = load_policy(cfg.model.name, self.device, **precision)
        if cfg.model.lora_rank:  # only the adapters train; every process draws the same ones (models/lora.py)
            self.policy = add_lora(self.policy, cfg.model, seed=cfg.train.seed)
        self.prompt_format = PromptFormat.of(cfg.task)
        resolve_style(self.tokenizer, self.prompt_format, cfg.model.name)  # a UserError before any sampling
        # No reference is kept when β = 0 (DESIGN.md): it would only cost memory. DPO always needs one.
        reference = reference_for(self.policy) if algorithm.holds_reference(cfg.algo.beta) else None
        # the frozen copy of the initial policy; None when none is held (β = 0, or LoRA's disabled adapters)
        self.reference = reference.held_copy if reference else None
        self.exploration = ExplorationTracker()
        self.critic = Critic(self.policy, cfg.ppo) if algorithm.critic else None
        if checkpoint is not None and cfg.model.lora_rank:
            load_adapter(self.policy, checkpoint)  # the checkpoint holds the adapters; the base is model.name
        elif checkpoint is not None:
            self.policy, _ = load_policy(str(checkpoint), self.device, **precision)
        for model in (self.policy, self.reference):
            use_forward(model, cfg.model.forward)
        self.tools = ToolUse.of(cfg.rollout)  # rollout.tools: a sandbox pool for the calls, or None
        self.sampler = make_sampler(  # rollout.backend
            cfg.rollout,
            self.policy,
            self.tokenizer,
            seed=cfg.train.seed,
            prompt_format=self.prompt_format,
            tools=self.tools,
        )
        self.optimizer = torch.optim.AdamW(
            [p for p in self.policy.parameters() if p.requires_grad],
            lr=cfg.optim.lr,
            weight_decay=cfg.optim.weight_decay,
        )
        self.start_step, self.base_eval = 0, None
        if checkpoint is not None:
            state = load_state(checkpoint)
            self.optimizer.load_state_dict(state["optimizer"])
            set_rng_state(state["rng"])
            self.start_step, self.base_eval = state["step"], state["base_eval"]
            if self.critic is not None:
                self.critic.load_state_dict(state["critic"])
        models, optimizers = {"policy": self.policy, "reference": self.reference}, {"policy": self.optimizer}
        if self.critic is not None:
            models["critic"], optimizers["critic"] = self.critic.model, self.critic.optimizer
        self.memory = MemoryMeter(
            enabled=cfg.train.memory_metrics, policy=self.policy, models=models, optimizers=optimizers
        )
        self.context = StepContext(
            cfg=cfg,
            policy=self.policy,
            tokenizer=self.tokenizer,
            optimizer=self.optimizer,
            reference=reference,
            critic=self.critic,
            sampler=self.sampler,
            reward_fn=self.reward_fn,
            train_queries=self.train_queries,
            hacking=self.hacking,
            exploration=self.exploration,
            memory=self.memory,
            dist=self.dist,
        )

    def evaluate(self) -> HeldoutResult:
        r = self.cfg.rollout
        return evaluate_heldout(
            self.policy,
            self.tokenizer,
            self.eval_queries,
            self.reward_fn,
            n=self.cfg.train.eval_samples,
            temperature=r.temperature,
            top_p=r.top_p,
            max_new_tokens=r.max_new_tokens,
            gold_fn=self.hacking.gold_fn if self.hacking else None,
            prompt_format=self.prompt_format,
            tools=self.tools,
        )

    def close(self) -> None:
        """End the processes the run holds: the tool's sandbox pool and the process group."""
        if self.tools is not None:
            self.tools.close()
        self.dist.close()

    def step(self, step: int, observer: StepObserver | None = None) -> dict[str, float]:
        """One step of the configured algorithm (engine/step.py); returns its metrics."""
        return run_step(self.context, step, observer)

    def save(self, step: int) -> None:
        """The run's checkpoint after `step` steps: policy (its adapters alone with LoRA), optimizer,
        RNG, the critic if any."""
        extra = {"base_eval": self.base_eval}
        if self.critic is not None:
            extra["critic"] = self.critic.state_dict()
        save_checkpoint(self.out_dir, step, self.policy, self.tokenizer, self.optimizer, extra)


def _write_summary(out_dir: Path, base: HeldoutResult, final: HeldoutResult, steps: int, wall_s: float) -> dict:
    summary = {"base": base.to_dict(), "final": final.to_dict(), "steps": steps, "wall_s": round(wall_s, 2)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def train(cfg: RunConfig, out_dir: str | Path, *, resume: bool = False, progress: bool = True) -> dict:
    """Run training as configured; write the run directory; return the summary."""
    start = time.perf_counter()
    out_dir = Path(out_dir)
    main = world().is_main  # under accelerate/torchrun only rank 0 evaluates and writes (engine/distributed.py)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = progress and main
    say = print if progress else (lambda *_: None)
    try:
        trainer = Trainer(cfg, out_dir, resume=resume)  # loads task and model first: a bad one leaves no run behind
    except BaseException:
        if created and main and not any(out_dir.iterdir()):
            out_dir.rmdir()  # nor an empty directory
        raise
    if main:
        (out_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    log = (
        MetricsLog(
            out_dir,
            tensorboard=cfg.train.tensorboard,
            keep_until_step=trainer.start_step if resume else 0,
            trackers=cfg.train.trackers,
            run_config=cfg.to_dict(),
        )
        if main
        else NullLog()
    )
    if trainer.base_eval is None and main:
        say(
            f"evaluating the base model: {len(trainer.eval_queries)} held-out queries x {cfg.train.eval_samples} samples"
        )
        trainer.base_eval = trainer.evaluate()
        say(f"base held-out pass@1 {trainer.base_eval.pass_at_1:.3f}, greedy {trainer.base_eval.greedy:.3f}")
    bar = tqdm(
        range(trainer.start_step, cfg.train.steps),
        initial=trainer.start_step,
        total=cfg.train.steps,
        desc=cfg.algo.algorithm,
        unit="step",
        disable=not progress,
    )
    for step in bar:
        step_start = time.perf_counter()
        metrics = trainer.step(step)
        done = step + 1
        if main and cfg.train.eval_every and done % cfg.train.eval_every == 0 and done < cfg.train.steps:
            metrics |= {f"eval/{k}": v for k, v in trainer.evaluate().to_dict().items()}
        metrics["time/step"] = time.perf_counter() - step_start
        log.log(done, metrics)
        if main and (done == cfg.train.steps or (cfg.train.save_every and done % cfg.train.save_every == 0)):
            trainer.save(done)
        bar.set_postfix(
            reward=f"{metrics['reward']:.2f}", acc=f"{metrics['accuracy']:.2f}", kl=f"{metrics.get('kl', 0.0):.3f}"
        )
        if main and trainer.hacking is not None and (warning := trainer.hacking.warning(metrics)):
            bar.write(warning)
    bar.close()
    if not main:
        trainer.close()
        return {}  # rank 0 evaluates the trained model and returns the summary
    say("evaluating the trained model on the held-out queries")
    final_eval = trainer.evaluate()
    log.log(cfg.train.steps, {f"eval/{k}": v for k, v in final_eval.to_dict().items()})
    log.close()
    if is_lora(trainer.policy):
        save_merged(trainer.policy, out_dir / "final")  # a plain model, loadable as any other; final/adapter/
    else:
        trainer.policy.save_pretrained(out_dir / "final")
    trainer.tokenizer.save_pretrained(out_dir / "final")
    trainer.close()
    return _write_summary(out_dir, trainer.base_eval, final_eval, cfg.train.steps, time.perf_counter() - start)
