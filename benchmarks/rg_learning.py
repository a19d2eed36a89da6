"""The tiny model learns a reasoning-gym task: chain_sum, base -> GRPO, held-out accuracy, 3 seeds.

    .venv/bin/python benchmarks/rg_learning.py --out runs/rg-chain-sum
    .venv/bin/python benchmarks/rg_learning.py --out runs/rg-chain-sum --seeds 1 --steps 20   # a quick look

The embedded tiny-arith base has only ever seen bare expressions such as "(3*9)-4"; reasoning-gym's
chain_sum asks in English ("State the final answer to the following arithmetic problem: 4 - 1 - 7
="), and tiny-arith scores 0 on it. So the base for this run is tiny-arith after a short supervised
warm-up on chain_sum's own training questions, with worked solutions whose steps are wrong with
probability 0.35 (bases/warmup.py, the recipe every embedded base uses): it knows the format and
often the answer, not reliably. It is built once into OUT/base (about 5 minutes on 2 cores).

Then `rlvr train` runs GRPO (100 steps, lr 1e-4 after 10 warm-up steps) on task.name=reasoning_gym, task.rg_dataset=chain_sum (2-3 one-digit
terms, + and -), rewarded by chain_sum's own score_answer in rlvr's worker pool, once per seed,
and `rlvr eval --run` evaluates each run against the base on its 200 held-out questions (n=8 at
T=1, pass@1 ... pass@8 with 95% intervals, paired draws). Printed per seed: base and trained
pass@1 and pass@8 with intervals and their paired difference, training's own held-out check
(pass@1 over 4 samples, greedy), the wall times; then the base once and the mean and sd over
seeds (benchmarks/learning.py). `--eval-only` re-evaluates seeds already trained.
"""

from __future__ import annotations

import json
from pathlib import Path

DATASET = "chain_sum"
CONFIG = {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 1}
WARMUP_STEPS = 150
ERROR_RATE = 0.35
LR, LR_WARMUP, STEPS = 1e-4, 10, 100
"""rlvr's default lr since the atlas measured it best on arith; chosen here first: at 5e-4 (the earlier
default) AdamW's first, sign-sized step took this freshly warmed-up base
to a KL of 0.1 and cut its greedy accuracy from 0.72 to 0.14 in two steps (seed 1, measured). At
2e-4 for 60 steps pass@1 still rose on every seed (+16.1 points) but greedy fell on two of three;
at 1e-4 for 100 steps both rise (README)."""


def rg_config_flag() -> str:
    return "task.rg_config={" + ", ".join(f"{key}: {value}" for key, value in CONFIG.items()) + "}"


def build_base(path: Path) -> None:
    """tiny-arith warmed up on chain_sum's training questions (module docstring)."""
    import torch

    from rlvr.bases import resolve_model_path
    from rlvr.bases.warmup import WarmupSpec, warm_up
    from rlvr.models import load_policy
    from rlvr.tasks.arith import worked_solution
    from rlvr.tasks.reasoning_gym import load
    from rlvr.types import Query

    torch.manual_seed(0)
    model, tokenizer = load_policy(resolve_model_path("tiny-arith"))
    train, _ = load(DATASET, CONFIG, seed=0, num_train=2000, num_eval=200)

    def with_steps(query: Query) -> Query:
        """The row with the operands and operators of its expression ("4 - 1 - 7"), which the arith
        worked solutions read."""
        tokens = query.verifier["entry"]["metadata"]["expression"].split()
        operands, ops = [int(tokens[0])], []
        for op, value in zip(tokens[1::2], tokens[2::2], strict=True):
            ops.append(op)
            operands.append(int(value))
        return Query(query.id, query.prompt, query.verifier, {"operands": operands, "ops": ops})

    queries = [with_steps(query) for query in train]
    spec = WarmupSpec(steps=WARMUP_STEPS, batch_size=64, lr=1e-3, warmup_steps=20, error_rate=ERROR_RATE)
    warm_up(model, tokenizer, queries, lambda q, rng: worked_solution(q, rng=rng, error_rate=ERROR_RATE), spec)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


OVERRIDES = (
    "task.name=reasoning_gym", f"task.rg_dataset={DATASET}", rg_config_flag(),
    "task.num_train=2000", "task.num_eval=200", f"optim.warmup_steps={LR_WARMUP}",
)  # fmt: skip


if __name__ == "__main__":
    from learning import Recipe, run  # benchmarks/learning.py, beside this script

    run(
        Recipe(
            name=f"{DATASET} {json.dumps(CONFIG)}",
            description=__doc__.split("\n\n")[0],
            base=build_base,
            overrides=OVERRIDES,
            steps=STEPS,
            lr=LR,
        )
    )
