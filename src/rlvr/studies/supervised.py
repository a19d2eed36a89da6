"""The supervised controls of a study: does RL add anything that fine-tuning on the same chains
would not?

    run_supervised(SupervisedSpec(out="runs/sft-seed0", config="configs/expansion.yaml", source="gold"))

Each control fine-tunes the RL arm's base on the RL arm's training queries with the RL arm's
optimizer (AdamW at optim.lr, its warm-up, weight decay and gradient clip) and sees as many
completions: train.steps steps of train.batch_queries queries x rollout.group_size completions.

- ``gold`` (SFT): each query's right worked solution (the task's ``reference_solution``), standing
  for all G completions of its query.
- ``rft`` (rejection-sampling fine-tuning, Yuan et al. 2023, arXiv:2308.01825): the base's own
  samples of every training query (``rft_samples`` each, at the rollout temperature), those with a
  right answer (the gold verifier; the steps are not checked, as the answer-only reward does not
  check them) kept; a step takes batch_queries of the queries with one kept at least, and G kept
  samples of each, drawn with replacement.

The loss is the next-token loss averaged over the step's completion tokens, as bases/warmup.py
trains a base. A completion standing several times in a step is computed once, weighted by its
count: the same loss and gradient as the repeated rows. The result is an ordinary run directory
(config.yaml, metrics.jsonl with one row per step, summary.json with the held-out evaluation
before and after as the trainer makes it, final/), so studies evaluate it as they do a trained run.
A control is short (about a minute on one core) and not checkpointed: an interrupted one restarts.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F

from rlvr import rundir
from rlvr.bases import resolve_model_path
from rlvr.bases.warmup import sft_batch
from rlvr.config import RunConfig, load_config
from rlvr.engine.build import build_optimizer
from rlvr.engine.context import learning_rate
from rlvr.errors import UserError
from rlvr.models import load_policy
from rlvr.rollout.heldout import evaluate_heldout
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.prompts import PromptFormat
from rlvr.tasks.registry import get_task, load_task
from rlvr.types import Query
from rlvr.verifiers import RewardFunction

SOURCES = {
    "gold": "none: fine-tuned on the worked solutions (SFT)",
    "rft": "none: fine-tuned on the base's own right answers (RFT)",
}
"""Each source of a supervised control, and what it trains on, in words (a study's "reward" column)."""


@dataclass(frozen=True)
class SupervisedSpec:
    """One supervised control, as the runner runs it (studies/runner.py)."""

    kind: ClassVar[str] = "supervised"
    out: str
    source: str
    """"gold" (SFT on the task's worked solutions) or "rft" (the base's own right samples)."""
    config: str | None = None
    overrides: tuple[str, ...] = ()
    """The RL arm's preset and overrides: its base, task, batch shape, optimizer, seed."""
    seed: int | None = None
    rft_samples: int = 32
    """RFT: samples drawn from the base per training query, before the wrong ones are dropped."""
    threads: int | None = None
    progress: bool = False
    log: str | None = None

    def finished(self) -> bool:
        return rundir.is_finished(self.out)

    def log_path(self) -> Path:
        return Path(self.log) if self.log else Path(self.out).with_name(f"{Path(self.out).name}.log")


def run_supervised(spec: SupervisedSpec) -> dict:
    """Fine-tune, write the run directory, return its summary."""
    if spec.source not in SOURCES:
        raise UserError(f"supervised control: unknown source {spec.source!r}; known: {', '.join(SOURCES)}")
    cfg = load_config(spec.config, [*spec.overrides, *([f"train.seed={spec.seed}"] if spec.seed is not None else [])])
    if cfg.model.lora_rank:
        raise UserError("supervised control: it fine-tunes every weight; run it with model.lora_rank=0")
    if spec.source == "gold" and get_task(cfg.task.name).reference_solution is None:
        raise UserError(f"supervised control 'gold': task {cfg.task.name!r} has no worked solutions to train on")
    if spec.threads:
        torch.set_num_threads(spec.threads)
    started, out = time.perf_counter(), Path(spec.out)
    out.mkdir(parents=True, exist_ok=True)
    rundir.write_config(out, cfg.to_dict())
    torch.manual_seed(cfg.train.seed)
    model, tokenizer = load_policy(resolve_model_path(cfg.model.name))
    train_queries, heldout = load_task(cfg.task)
    prompt_format = PromptFormat.of(cfg.task)
    gold = RewardFunction({"correctness": 1.0})

    def evaluate() -> dict:
        model.eval()
        r = cfg.rollout
        result = evaluate_heldout(model, tokenizer, heldout, gold, n=cfg.train.eval_samples, temperature=r.temperature,
                                  top_p=r.top_p, max_new_tokens=r.max_new_tokens, prompt_format=prompt_format,
                                  ks=tuple(cfg.train.eval_ks), draw_seed=cfg.train.seed)  # fmt: skip
        return result.to_dict()

    base = evaluate()
    pool = Pool(spec, cfg, model, tokenizer, prompt_format, gold)
    _fine_tune(cfg, model, tokenizer, train_queries, pool, out, spec.progress)
    final = evaluate()
    model.save_pretrained(rundir.final_dir(out))
    tokenizer.save_pretrained(rundir.final_dir(out))
    summary = {"base": base, "final": final, "steps": cfg.train.steps,
               "supervised": {"source": spec.source, **pool.about()}, "wall_s": round(time.perf_counter() - started, 2)}  # fmt: skip
    rundir.write_summary(out, summary)
    return summary


class Pool:
    """The completions a step may take for each training query, made when a step first draws it:
    the worked solution ("gold"), or the base's right samples ("rft"). Each query's samples are
    its own paired draws (rollout/draws.py, train.seed), so its pool is the same whenever it is made."""

    def __init__(self, spec: SupervisedSpec, cfg: RunConfig, model, tokenizer, prompt_format: PromptFormat,
                 gold: RewardFunction) -> None:  # fmt: skip
        task = get_task(cfg.task.name)
        self.spec, self.cfg, self.model, self.tokenizer = spec, cfg, model, tokenizer
        self.prompt_format, self.gold, self.task = prompt_format, gold, task
        self.kept: dict[str, list[str]] = {}
        self.drawn = self.right_chain = 0

    def fill(self, queries: list[Query]) -> None:
        """Make the pools of those of `queries` not made yet (one sampling call for all of them)."""
        new = [q for q in queries if q.id not in self.kept]
        if not new:
            return
        if self.spec.source == "gold":
            self.kept.update({q.id: [self.task.reference_solution(q)] for q in new})
            return
        r, was_training = self.cfg.rollout, self.model.training
        self.model.eval()
        batch = sample_completions(self.model, self.tokenizer, new, group_size=self.spec.rft_samples,
                                   temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens,
                                   prompt_format=self.prompt_format, draw_seed=self.cfg.train.seed)  # fmt: skip
        self.model.train(was_training)
        scored = self.gold.score_batch([(batch.query_of(i), text) for i, text in enumerate(batch.texts)])
        self.kept.update({q.id: [] for q in new})
        checker = self.task.reasoning_checker
        for i, text in enumerate(batch.texts):
            self.drawn += 1
            if scored[i].reward == 1.0:  # a right answer, whatever the steps
                query = batch.query_of(i)
                self.kept[query.id].append(text)
                self.right_chain += bool(checker and checker(query, text))

    def about(self) -> dict:
        """The pool in numbers (for rft: samples drawn, kept, kept with every step right, queries)."""
        made = {"queries_drawn": len(self.kept), "queries_with_kept": sum(bool(t) for t in self.kept.values())}
        if self.spec.source == "gold":
            return made
        return {"samples": self.drawn, "kept": sum(map(len, self.kept.values())),
                "kept_right_chain": self.right_chain if self.task.reasoning_checker else None, **made}  # fmt: skip


def step_queries(rng: random.Random, queries: list[Query], pool: Pool, size: int) -> list[Query]:
    """`size` distinct queries drawn uniformly from those with a completion to learn: a random order
    of all, pools made `size` at a time, the empty ones passed over (fewer, if fewer have one)."""
    order, chosen = rng.sample(queries, len(queries)), []
    for at in range(0, len(order), size):
        part = order[at : at + size]
        pool.fill(part)
        chosen += [q for q in part if pool.kept[q.id]]
        if len(chosen) >= size:
            return chosen[:size]
    if not chosen:
        raise UserError(f"supervised control '{pool.spec.source}': no training query has a completion to learn "
                        f"({pool.drawn} samples of the base drawn, none right)")  # fmt: skip
    return chosen


def _fine_tune(cfg: RunConfig, model, tokenizer, queries: list[Query], pool: Pool, out: Path, progress: bool) -> None:
    """train.steps steps of batch_queries queries x group_size completions; metrics.jsonl per step."""
    rng = random.Random(cfg.train.seed)
    optimizer = build_optimizer(cfg, model)
    model.train()
    with open(rundir.metrics_path(out), "w") as metrics:
        for step in range(1, cfg.train.steps + 1):
            began = time.perf_counter()
            for param_group in optimizer.param_groups:
                param_group["lr"] = learning_rate(cfg.optim, step - 1)  # the RL step's schedule (0-based)
            rows = Counter()
            for query in step_queries(rng, queries, pool, cfg.train.batch_queries):
                rows.update((query.prompt, rng.choice(pool.kept[query.id])) for _ in range(cfg.rollout.group_size))
            loss = weighted_sft_loss(model, tokenizer, list(rows.items()))
            loss.backward()
            if cfg.optim.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            row = {"step": step, "sft/loss": round(float(loss.detach()), 6), "sft/distinct_completions": len(rows),
                   "time/step": round(time.perf_counter() - began, 4)}  # fmt: skip
            metrics.write(json.dumps(row) + "\n")
            if progress and step % 50 == 0:
                print(f"step {step}: loss {row['sft/loss']:.4f}", flush=True)
    model.eval()


def weighted_sft_loss(model, tokenizer, rows: list[tuple[tuple[str, str], int]]) -> torch.Tensor:
    """The next-token loss averaged over completion tokens of ((prompt, completion), count) rows, each
    counted `count` times: the loss of the batch with every row repeated, computed once per row."""
    ids, labels = sft_batch(tokenizer, [pair for pair, _ in rows])  # [R, L]
    target = labels[:, 1:]  # [R, L-1] position t predicts token t + 1
    logits = model(input_ids=ids).logits[:, :-1]  # [R, L-1, V]
    nll = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=-100, reduction="none")  # [R, L-1]
    weight = torch.tensor([count for _, count in rows], dtype=nll.dtype)[:, None] * (target != -100)  # [R, L-1]
    return (nll * weight).sum() / weight.sum()
