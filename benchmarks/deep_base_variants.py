"""Why tiny-arith-deep's recipe: variants of it, built and measured on held-out 5-operand chains.

    .venv/bin/python benchmarks/deep_base_variants.py --out runs/deep-variants
    .venv/bin/python benchmarks/deep_base_variants.py --out runs/deep-variants --variants shipped,no-deep

Each variant changes one thing of bases/tiny_arith_deep.py's recipe (the share of 5-operand chains in the
warm-up, the largest value, the smallest operand), is built by the same code as the shipped base
(`tiny_arith_deep.build`, about 6 minutes on one core) and evaluated by `rlvr eval`'s code on the
variant's own 100 held-out 5-operand queries, n = 256 samples each at T = 1. Printed per variant:
pass@k and CoT-pass@k at k = 1 and 256, and the share of queries whose only right answers at
k = 256 came after wrong steps (pass@256 - CoT-pass@256). Variants run side by side, one torch
thread each (--jobs, default 2). A variant already built in --out is reused.

The expansion study needs a base whose right chains are rare (CoT-pass@256 at most 10%) but not
absent (RL needs some to reinforce); the variants show where each side of that lies.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

VARIANTS = {
    "shipped": {},
    "no-deep": {"share": {5: 0.0}},
    "4-deep": {"share": {5: 0.001}},
    "max-value-99": {"task": {"max_value": 99}},
    "min-operand-2": {"task": {"min_operand": 2}},
}
"""Name -> changes to the recipe: share entries (5-operand share 0.002 = 8 distinct chains) or task fields."""


def _measure(name: str, out: str) -> dict:
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    from rlvr.bases import tiny_arith_deep
    from rlvr.bases.store import built_from
    from rlvr.config import TaskConfig
    from rlvr.studies.passk_eval import evaluate_passk

    change = VARIANTS[name]
    share = tiny_arith_deep.SHARE | change.get("share", {})
    task = dataclasses.replace(tiny_arith_deep.TASK, **change.get("task", {}))
    path = Path(out) / name
    if built_from(tiny_arith_deep.BASE.shipped, tiny_arith_deep.recipe(share, task)):
        path = tiny_arith_deep.BASE.shipped  # the shipped base is this variant: measure it as it is
    elif not built_from(path, tiny_arith_deep.recipe(share, task)):
        tiny_arith_deep.build(path, share=share, task=task)
    report = evaluate_passk(
        str(path), base=None, n=256, ks=[1, 256], num_queries=100, temperature=1.0, seed=0,
        out=Path(out) / name / "eval", progress=False, max_new_tokens=80,
        task=TaskConfig(operands=task.operands, digits=task.digits, max_value=task.max_value,
                        min_operand=task.min_operand),
    )  # fmt: skip
    model = report["models"]["model"]
    return {"variant": name, "change": change, "pass@k": model["pass@k"], "cot_pass@k": model["cot_pass@k"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/deep-variants")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(_measure, names, [args.out] * len(names)))
    print(f"{'variant':<15} {'pass@1':>7} {'pass@256':>9} {'CoT@1':>7} {'CoT@256':>8} {'right after wrong steps':>24}")
    for r in results:
        (p1, p256), (c1, c256) = r["pass@k"], r["cot_pass@k"]
        print(
            f"{r['variant']:<15} {100 * p1:6.1f}% {100 * p256:8.1f}% {100 * c1:6.1f}% {100 * c256:7.1f}% {100 * (p256 - c256):23.1f}%"
        )
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "variants.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
