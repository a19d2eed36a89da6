"""Samples per second of `rlvr eval` against the trainer's own rollout rate, interleaved in one run.

    python benchmarks/eval_speed.py            # ~1 min on 2 cores
    python benchmarks/eval_speed.py --quick    # ~20 s

Both sides sample n completions per held-out query from the same model at the same temperature and
length, and verify every completion: `rlvr eval` through its own counting loop
(studies/passk_eval.py `count_samples`: sampling in chunks of 512 completions, the correctness
verifier, the task's reasoning checker for CoT-pass@k, and paired draws), the trainer through the parts a run
builds (engine/build.py: the configured sampler, then the run's reward function, format reward
included) on batches of `train.batch_queries` queries x G = n, as a training step samples them.
The rounds alternate the two, and the medians are printed with their ratio; the issue that asked
for this holds `rlvr eval` to at least 0.9 of the trainer's rate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from rlvr.config import load_config
from rlvr.engine.build import build_run
from rlvr.studies.passk_eval import count_samples
from rlvr.tasks.registry import get_task, load_heldout
from rlvr.verifiers import RewardFunction


def trainer_rate(parts, queries, n: int, batch: int) -> float:
    """Completions per second through the run's sampler and reward, `batch` queries at a time."""
    ctx, rollout = parts.context, parts.context.cfg.rollout
    start = time.perf_counter()
    for first in range(0, len(queries), batch):
        part = queries[first : first + batch]
        sampled = ctx.sampler.sample(
            part, group_size=n, max_new_tokens=rollout.max_new_tokens, temperature=rollout.temperature,
            top_p=rollout.top_p,
        )  # fmt: skip
        ctx.reward_fn.score_batch([(sampled.query_of(i), text) for i, text in enumerate(sampled.texts)])
    return len(queries) * n / (time.perf_counter() - start)


def eval_rate(parts, queries, n: int, seed: int) -> float:
    """Completions per second through `rlvr eval`'s counting loop on the same model, with its paired
    draws (rollout/draws.py) as `rlvr eval --seed` samples."""
    ctx, rollout = parts.context, parts.context.cfg.rollout
    checker = get_task(ctx.cfg.task.name).reasoning_checker
    start = time.perf_counter()
    count_samples(
        ctx.policy, ctx.tokenizer, queries, RewardFunction({"correctness": 1.0}), checker, n=n,
        temperature=rollout.temperature, max_new_tokens=rollout.max_new_tokens, prompt_format=parts.prompt_format,
        draw_seed=seed,
    )  # fmt: skip
    return len(queries) * n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and rounds")
    args = parser.parse_args()
    queries_n, rounds, n = (32, 2, 8) if args.quick else (96, 3, 8)
    cfg = load_config(None, [f"rollout.group_size={n}", f"task.num_eval={queries_n}", "train.memory_metrics=false"])
    parts = build_run(cfg)
    queries = load_heldout(cfg.task)[:queries_n]
    rates: dict[str, list[float]] = {"rlvr eval": [], "trainer rollouts": []}
    try:
        for round_ in range(rounds):
            rates["rlvr eval"].append(eval_rate(parts, queries, n, seed=round_))
            torch.manual_seed(round_)
            rates["trainer rollouts"].append(trainer_rate(parts, queries, n, cfg.train.batch_queries))
    finally:
        parts.close()
    load = os.getloadavg()[0]
    print(f"{queries_n} held-out arith queries x n={n}, T={cfg.rollout.temperature}, {rounds} rounds, load {load:.2f}")
    print(f"{'path':<20}{'samples/s (median)':>20}{'rounds':>28}")
    for name, values in rates.items():
        print(f"{name:<20}{statistics.median(values):>20.1f}{'  '.join(f'{v:.1f}' for v in values):>28}")
    ratio = statistics.median(rates["rlvr eval"]) / statistics.median(rates["trainer rollouts"])
    print(f"rlvr eval / trainer rollouts: {ratio:.2f}x")


if __name__ == "__main__":
    main()
