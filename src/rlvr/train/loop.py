"""The GRPO training loop, read top to bottom like the diagram in DESIGN.md:

    queries → sample G completions (rollout/) → verify (verifiers/) → group advantages (algos/)
    → clipped policy gradient + β·KL to the frozen reference (algos/, via train/update.py) → AdamW

It orchestrates; every formula lives in algos/.
"""

from __future__ import annotations

import copy
import json
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import torch
import yaml
from tqdm import tqdm

from rlvr.algos import ALGORITHMS, KL_ESTIMATORS, PreferenceAlgorithm, kl_in_reward_advantages
from rlvr.config import RunConfig
from rlvr.diagnostics.grad_noise import MicroBatchNoise
from rlvr.diagnostics.hacking import HackingMonitor, training_verifier_for
from rlvr.diagnostics.memory import MemoryMeter
from rlvr.errors import UserError
from rlvr.train.evaluate import HeldoutResult, evaluate_heldout
from rlvr.models import load_policy
from rlvr.models.lean import use_forward
from rlvr.rollout.backends import make_sampler
from rlvr.tasks import load_task
from rlvr.train.checkpoint import find_checkpoint, load_state, save_checkpoint, set_rng_state
from rlvr.train.distributed import NullLog, world
from rlvr.train.dpo import dpo_step
from rlvr.train.exploration import ExplorationTracker
from rlvr.train.metrics import MetricsLog
from rlvr.train.ppo import Critic, ppo_step
from rlvr.train.rollouts import collect_rollouts, loss_mask
from rlvr.train.tis import tis_correction
from rlvr.train.update import accumulate_policy_gradient, optimizer_step, reference_logprobs
from rlvr.types import Query, RolloutBatch
from rlvr.verifiers import RewardFunction, ScoredCompletion


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


def reward_tensor(scored: list[ScoredCompletion], num_queries: int, group_size: int) -> torch.Tensor:
    """[B, G] rewards; NaN where the verifier could not judge (kept out of the group baseline)."""
    values = [float("nan") if s.reward is None else s.reward for s in scored]
    return torch.tensor(values, dtype=torch.float32).view(num_queries, group_size)  # [B, G]


def rollout_metrics(batch: RolloutBatch, scored: list[ScoredCompletion], rewards: torch.Tensor) -> dict[str, float]:
    lengths = batch.completion_mask.sum(dim=1).float()  # [N]
    valid = ~torch.isnan(rewards)  # [B, G]
    return {
        "reward": float(rewards[valid].mean()) if valid.any() else float("nan"),
        "accuracy": sum(s.correct for s in scored) / len(scored),
        "format_rate": sum(s.results["format"].score for s in scored) / len(scored),
        "completions/mean_length": float(lengths.mean()),
        "completions/clipped_ratio": batch.finish_reasons.count("length") / len(batch.finish_reasons),
        "verifier/unscorable": int((~valid).sum()),
    }


OWN_STEPS = {"dpo": dpo_step}
"""Algorithms whose step is not the policy-gradient step below (a preference loss needs pairs)."""


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
        self.dist = world()  # one process, or this one's place under accelerate/torchrun (train/distributed.py)
        if self.dist.enabled and (ALGORITHMS[cfg.algo.algorithm].critic or cfg.algo.algorithm in OWN_STEPS):
            raise UserError(f"algo.algorithm={cfg.algo.algorithm} trains on one process only; "
                            "launch it without accelerate/torchrun, or use a policy-gradient algorithm")
        self.device = self.dist.place(self.device)
        torch.manual_seed(cfg.train.seed + self.dist.rank)  # rank 0 keeps the single-process stream
        self.train_queries, self.eval_queries = load_task(cfg.task)
        weights = {"correctness": cfg.reward.correctness_weight, "format": cfg.reward.format_weight}
        gold_for = None  # the local registry: this machine's sandbox pool and worker pools
        if cfg.reward.backend == "ray":
            from rlvr.integrations.ray_verify import ray_verifiers_for_run

            gold_for = ray_verifiers_for_run(cfg.reward.ray_address)
        verifier_for = training_verifier_for(cfg.reward, gold_for)  # gold, or weakened per reward.fidelity
        self.reward_fn = RewardFunction(weights, verifier_for=verifier_for)
        # A weakened training verifier is watched against its gold counterpart (docs/hacking.md).
        self.hacking = HackingMonitor.for_run(cfg.reward, weights, verifier_for, cfg.train.seed)
        checkpoint = find_checkpoint(out_dir) if resume else None
        self.policy, self.tokenizer = load_policy(cfg.model.name, self.device)
        # No reference model is held when β = 0 (DESIGN.md): it would only cost memory. DPO always needs one.
        needs_reference = cfg.algo.beta > 0 or isinstance(ALGORITHMS[cfg.algo.algorithm], PreferenceAlgorithm)
        self.reference = self._frozen_copy(self.policy) if needs_reference else None
        self.exploration = ExplorationTracker()
        self.critic = Critic(self.policy, cfg.ppo) if ALGORITHMS[cfg.algo.algorithm].critic else None
        if checkpoint is not None:
            self.policy, _ = load_policy(str(checkpoint), self.device)
        for model in (self.policy, self.reference):
            use_forward(model, cfg.model.forward)
        self.sampler = make_sampler(cfg.rollout, self.policy, self.tokenizer, seed=cfg.train.seed)  # rollout.backend
        self.optimizer = torch.optim.AdamW(
            self.policy.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay
        )
        self.start_step, self.base_eval = 0, None
        if checkpoint is not None:
            state = load_state(checkpoint)
            self.optimizer.load_state_dict(state["optimizer"])
            set_rng_state(state["rng"])
            self.start_step, self.base_eval = state["step"], state["base_eval"]
        models, optimizers = {"policy": self.policy, "reference": self.reference}, {"policy": self.optimizer}
        if self.critic is not None:
            models["critic"], optimizers["critic"] = self.critic.model, self.critic.optimizer
        self.memory = MemoryMeter(enabled=cfg.train.memory_metrics, policy=self.policy, models=models,
                                  optimizers=optimizers)

    @staticmethod
    def _frozen_copy(model: torch.nn.Module) -> torch.nn.Module:
        reference = copy.deepcopy(model).eval()
        for p in reference.parameters():
            p.requires_grad_(False)
        return reference

    def evaluate(self) -> HeldoutResult:
        r = self.cfg.rollout
        return evaluate_heldout(
            self.policy, self.tokenizer, self.eval_queries, self.reward_fn, n=self.cfg.train.eval_samples,
            temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens,
            gold_fn=self.hacking.gold_fn if self.hacking else None,
        )

    def _learning_rate(self, step: int) -> float:
        warmup = self.cfg.optim.warmup_steps
        return self.cfg.optim.lr * min(1.0, (step + 1) / warmup) if warmup else self.cfg.optim.lr

    def step(self, step: int) -> dict[str, float]:
        """One step of the configured algorithm (GRPO by default); returns its metrics. Afterwards
        the sampler holds the updated weights, for the next step's rollouts."""
        metrics = self._step(step)
        start = time.perf_counter()
        self.sampler.sync_weights(self.policy)
        return metrics | {"time/weight_sync": time.perf_counter() - start}

    def _step(self, step: int) -> dict[str, float]:
        if self.critic is not None:
            return ppo_step(self, step)  # actor-critic: GAE advantages and a value update (train/ppo.py)
        if self.cfg.algo.algorithm in OWN_STEPS:
            return OWN_STEPS[self.cfg.algo.algorithm](self, step)
        cfg, timer = self.cfg, Timer()
        self.memory.start_step()
        queries = batch_queries(self.train_queries, step, cfg.train.batch_queries, cfg.train.seed)  # [B]
        queries = self.dist.shard(queries)  # [B/N] this process's whole groups
        rollouts = collect_rollouts(self, step, queries, timer)
        batch, scored, rewards = rollouts.batch, rollouts.scored, rollouts.rewards  # rewards [B, G]
        hacking = self.measure_hacking(step, batch, scored, timer)
        advantages, adv_stats = ALGORITHMS[cfg.algo.algorithm].advantages(
            rewards, eps=cfg.algo.advantage_eps, scale_by_std=cfg.algo.scale_rewards
        )  # [B, G]
        advantages = advantages.flatten()  # [N] one per completion
        ref_logp = self.reference_logp(batch, timer)  # [N, T] or None
        if ref_logp is not None and cfg.algo.kl_placement == "reward":
            kl = KL_ESTIMATORS[cfg.algo.kl_estimator](batch.old_logp, ref_logp)  # [N, T] at sampling time
            advantages = kl_in_reward_advantages(advantages, kl, batch.completion_mask, beta=cfg.algo.beta)  # [N, T]
        batch, advantages, tis = tis_correction(self, batch, advantages, timer)  # algo.tis_cap (train/tis.py)
        for group in self.optimizer.param_groups:
            group["lr"] = self._learning_rate(step)
        for _ in range(cfg.algo.num_iterations):
            with timer.phase("forward_backward"), self.memory.activations():
                noise = MicroBatchNoise(self.policy)  # grad/variance, grad/noise_scale from the micro-batches
                update = accumulate_policy_gradient(
                    self.policy, batch, advantages, ref_logp, cfg.algo,
                    temperature=cfg.rollout.temperature, max_new_tokens=cfg.rollout.max_new_tokens,
                    micro_batch_size=cfg.optim.micro_batch_size, on_micro_batch=noise,
                    loss_mask=loss_mask(batch, cfg.algo.overlong_filter),
                    global_counts=self.dist.global_counts,
                )
            with timer.phase("optimizer"):
                self.dist.sum_gradients(self.policy)  # each shard's share → the step's gradient
                grad_norm, update_norm = optimizer_step(self.policy, self.optimizer, cfg.optim.max_grad_norm)
        return self.dist.reduce_metrics({
            **rollout_metrics(batch, scored, rewards),
            **rollouts.metrics,
            **tis,
            **hacking,
            "reward_std": float(adv_stats["group_std"].mean()),  # mean within-group std, as TRL
            "frac_reward_zero_std": float(adv_stats["frac_zero_std"]),
            **self.exploration.update(batch, scored),
            "loss": update.loss,
            **update.stats,
            "grad_norm": grad_norm,
            "update_norm": update_norm,
            **noise.metrics(),
            "learning_rate": self._learning_rate(step),
            **timer.seconds,
            **self.memory.step_metrics(),
        }, summed={"loss", *update.stats})  # shares of the step's loss and token means

    def measure_hacking(self, step: int, batch: RolloutBatch, scored: list[ScoredCompletion],
                        timer: Timer) -> dict[str, float]:
        """hacking/* metrics: a sample of the rollouts re-scored by the gold verifier, when the
        training verifier is a weakened one (diagnostics/hacking.py); {} otherwise."""
        if self.hacking is None:
            return {}
        with timer.phase("hacking"):
            items = [(batch.query_of(i), text) for i, text in enumerate(batch.texts)]
            return self.hacking.measure(step, items, scored)

    def reference_logp(self, batch: RolloutBatch, timer: Timer) -> torch.Tensor | None:
        """log π_ref of the sampled tokens [N, T], or None when no reference is held (β = 0)."""
        if self.reference is None:
            return None
        with timer.phase("reference"):
            return reference_logprobs(
                self.reference, batch, temperature=self.cfg.rollout.temperature,
                micro_batch_size=self.cfg.optim.micro_batch_size,
            )  # [N, T]


def _write_summary(out_dir: Path, base: HeldoutResult, final: HeldoutResult, steps: int, wall_s: float) -> dict:
    summary = {"base": base.to_dict(), "final": final.to_dict(), "steps": steps, "wall_s": round(wall_s, 2)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def train(cfg: RunConfig, out_dir: str | Path, *, resume: bool = False, progress: bool = True) -> dict:
    """Run training as configured; write the run directory; return the summary."""
    start = time.perf_counter()
    out_dir = Path(out_dir)
    main = world().is_main  # under accelerate/torchrun only rank 0 evaluates and writes (train/distributed.py)
    out_dir.mkdir(parents=True, exist_ok=True)
    if main:
        (out_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    progress = progress and main
    say = print if progress else (lambda *_: None)
    trainer = Trainer(cfg, out_dir, resume=resume)
    log = MetricsLog(out_dir, tensorboard=cfg.train.tensorboard,
                     keep_until_step=trainer.start_step if resume else 0,
                     trackers=cfg.train.trackers, run_config=cfg.to_dict()) if main else NullLog()
    if trainer.base_eval is None and main:
        say(f"evaluating the base model: {len(trainer.eval_queries)} held-out queries x {cfg.train.eval_samples} samples")
        trainer.base_eval = trainer.evaluate()
        say(f"base held-out pass@1 {trainer.base_eval.pass_at_1:.3f}, greedy {trainer.base_eval.greedy:.3f}")
    bar = tqdm(range(trainer.start_step, cfg.train.steps), initial=trainer.start_step,
               total=cfg.train.steps, desc=cfg.algo.algorithm, unit="step", disable=not progress)
    for step in bar:
        step_start = time.perf_counter()
        metrics = trainer.step(step)
        done = step + 1
        if main and cfg.train.eval_every and done % cfg.train.eval_every == 0 and done < cfg.train.steps:
            metrics |= {f"eval/{k}": v for k, v in trainer.evaluate().to_dict().items()}
        metrics["time/step"] = time.perf_counter() - step_start
        log.log(done, metrics)
        if main and (done == cfg.train.steps or (cfg.train.save_every and done % cfg.train.save_every == 0)):
            save_checkpoint(out_dir, done, trainer.policy, trainer.tokenizer, trainer.optimizer,
                            {"base_eval": trainer.base_eval})
        bar.set_postfix(reward=f"{metrics['reward']:.2f}", acc=f"{metrics['accuracy']:.2f}",
                        kl=f"{metrics.get('kl', 0.0):.3f}")
        if main and trainer.hacking is not None and (warning := trainer.hacking.warning(metrics)):
            bar.write(warning)
    bar.close()
    if not main:
        trainer.dist.close()
        return {}  # rank 0 evaluates the trained model and returns the summary
    say("evaluating the trained model on the held-out queries")
    final_eval = trainer.evaluate()
    log.log(cfg.train.steps, {f"eval/{k}": v for k, v in final_eval.to_dict().items()})
    log.close()
    trainer.policy.save_pretrained(out_dir / "final")
    trainer.tokenizer.save_pretrained(out_dir / "final")
    trainer.dist.close()
    return _write_summary(out_dir, trainer.base_eval, final_eval, cfg.train.steps, time.perf_counter() - start)
