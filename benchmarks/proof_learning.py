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

Then `rlvr train` runs GRPO on task.name=proofs, rewarded by the coq verifier (real coqtop in the
sandbox), once per seed. Printed per seed: held-out proof success (pass@1 over 4 samples at T=1,
and greedy), base and final, and the wall time.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

WARMUP_STEPS = 400
ERROR_RATE = 0.4
NUM_TRAIN, NUM_EVAL = 750, 200
MAX_NEW_TOKENS = 96
LR = 2e-4

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

    from rlvr.models import load_policy
    from rlvr.models.warmup import WarmupSpec, warm_up
    from rlvr.tasks.proofs import make_queries

    torch.manual_seed(0)
    model, tokenizer = load_policy("tiny-arith")
    train = make_queries(NUM_TRAIN, split="train", seed=0)
    spec = WarmupSpec(steps=WARMUP_STEPS, batch_size=64, lr=1e-3, warmup_steps=20, error_rate=ERROR_RATE)
    warm_up(model, tokenizer, train, warmup_proof, spec)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


def train(base: Path, out: Path, seed: int, steps: int, lr: float) -> dict:
    argv = [
        sys.executable, "-m", "rlvr.cli", "train", "--quiet", "--seed", str(seed), "--out", str(out),
        "--set", f"model.name={base}",
        "--set", "task.name=proofs",
        "--set", f"task.num_train={NUM_TRAIN}",
        "--set", f"task.num_eval={NUM_EVAL}",
        "--set", f"rollout.max_new_tokens={MAX_NEW_TOKENS}",
        "--set", f"train.steps={steps}",
        "--set", f"optim.lr={lr}",
        "--set", "optim.warmup_steps=10",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    summary = json.loads((out / "summary.json").read_text())
    summary["measured_wall_s"] = time.perf_counter() - started
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--lr", type=float, default=LR)
    args = parser.parse_args()
    base = args.out / "base"
    if not (base / "model.safetensors").is_file():
        started = time.perf_counter()
        build_base(base)
        print(f"base: tiny-arith + {WARMUP_STEPS} warm-up steps on proofs in {time.perf_counter() - started:.0f} s")
    rows = []
    for seed in args.seeds:
        s = train(base, args.out / f"seed{seed}", seed, args.steps, args.lr)
        rows.append(s)
        print(
            f"seed {seed}: held-out proof success pass@1 {s['base']['pass@1']:.3f} -> {s['final']['pass@1']:.3f}, "
            f"greedy {s['base']['greedy']:.3f} -> {s['final']['greedy']:.3f}, {s['steps']} steps in "
            f"{s['measured_wall_s']:.0f} s",
            flush=True,
        )
    gains = [100 * (s["final"]["pass@1"] - s["base"]["pass@1"]) for s in rows]
    print(f"proofs: mean pass@1 change {sum(gains) / len(gains):+.1f} points over {len(rows)} seeds")
    (args.out / "results.json").write_text(json.dumps({"runs": rows}, indent=1))


if __name__ == "__main__":
    main()
