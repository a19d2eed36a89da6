"""RL with the Coq verifier raises held-out proof success: a tiny prover, 3 seeds.

    .venv/bin/python benchmarks/proof_learning.py --out runs/proofs
    .venv/bin/python benchmarks/proof_learning.py --out runs/proofs --seeds 1 --steps 10   # a quick look

The lemmas are rlvr.tasks.proofs' five families (boolean identities, `k + n` and `n + k` against
`S (... n)`, list length after cons, `app l nil = l`), each closed by one strategy: computation
(`intros n. reflexivity.`) or induction (`induction n as [|i IH]. ... rewrite IH ...`), and
`destruct` for booleans. Held-out statements are never training statements.

The base is tiny-arith (whose character tokenizer covers Coq's ASCII) after a supervised warm-up on
the training lemmas in which a proof takes the wrong family's strategy with probability
ERROR_RATE, the way every embedded base learns from right and wrong solutions alike: it knows the
proof language and both strategies, and often picks the wrong one. Built once into OUT/base.

Then `rlvr train` runs GRPO (100 steps, lr 1e-4 after 10 warm-up steps) on task.name=proofs, rewarded by the coq verifier (real coqtop in the
sandbox), once per seed, and `rlvr eval --run` evaluates each run against the base on its 200
held-out lemmas (n=8 at T=1, pass@1 ... pass@8 with 95% intervals, paired draws). Printed per
seed: base and trained proof success at pass@1 and pass@8 with intervals and their paired
difference, training's own held-out check (pass@1 over 4 samples, greedy), the wall times; then
the base once and the mean and sd over seeds (benchmarks/learning.py). `--eval-only` re-evaluates
seeds already trained.
"""

from __future__ import annotations

import random
from pathlib import Path

WARMUP_STEPS = 400
ERROR_RATE = 0.4
NUM_TRAIN, NUM_EVAL = 750, 200
MAX_NEW_TOKENS = 96
LR, STEPS = 1e-4, 100
"""At 2e-4 for 60 steps held-out success rose +11.5 points but greedy fell on two seeds; at 1e-4 for
100 steps both rise (training's own held-out check, 2026-12-02)."""

_WRONG = {  # the other strategy, with the lemma's own variable
    "add_left": lambda v: f"intros {v}. induction {v} as [|i IH]. reflexivity. simpl. rewrite IH. reflexivity.",
    "length_cons": lambda v: f"intros {v}. induction {v} as [|x {v} IH]. reflexivity. simpl. rewrite IH. reflexivity.",
    "add_right": lambda v: f"intros {v}. reflexivity.",
    "app_nil": lambda v: f"intros {v}. reflexivity.",
}


def warmup_proof(query, rng: random.Random) -> str:
    """The lemma's own proof, or with probability ERROR_RATE the wrong strategy for it."""
    from rlvr.tasks.proofs import reference_proof

    proof = reference_proof(query)
    if rng.random() < ERROR_RATE:
        family, variable = query.meta["family"], proof.split()[1].rstrip(".")
        if family == "bool":  # destruct one variable too few: true only if the rest do not matter
            head, _, _ = proof.partition(" destruct ")
            variables = head.split()[1:]
            proof = f"{head} destruct {variables[0].rstrip('.')}; reflexivity."
        else:
            proof = _WRONG[family](variable)
    return f"<answer>{proof}</answer>"


def build_base(path: Path) -> None:
    import torch

    from rlvr.bases import resolve_model_path
    from rlvr.bases.warmup import WarmupSpec, warm_up
    from rlvr.models import load_policy
    from rlvr.tasks.proofs import make_queries

    torch.manual_seed(0)
    model, tokenizer = load_policy(resolve_model_path("tiny-arith"))
    train = make_queries(NUM_TRAIN, split="train", seed=0)
    spec = WarmupSpec(steps=WARMUP_STEPS, batch_size=64, lr=1e-3, warmup_steps=20, error_rate=ERROR_RATE)
    warm_up(model, tokenizer, train, warmup_proof, spec)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


OVERRIDES = (
    "task.name=proofs", f"task.num_train={NUM_TRAIN}", f"task.num_eval={NUM_EVAL}",
    f"rollout.max_new_tokens={MAX_NEW_TOKENS}", "optim.warmup_steps=10",
)  # fmt: skip


if __name__ == "__main__":
    from learning import Recipe, run  # benchmarks/learning.py, beside this script

    run(
        Recipe(
            name="proofs",
            description=__doc__.split("\n\n")[0],
            base=build_base,
            overrides=OVERRIDES,
            steps=STEPS,
            lr=LR,
        )
    )
