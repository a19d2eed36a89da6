"""RL teaches the tiny-arith-tool base to call the python tool when it helps: 3 seeds.

    .venv/bin/python benchmarks/tool_learning.py --out runs/tools
    .venv/bin/python benchmarks/tool_learning.py --out runs/tools --seeds 1 --steps 10   # a quick look

Each seed is one real `rlvr train --config configs/arith-tool.yaml --seed S`: GRPO on three-operand
arithmetic with two-digit operands (task.digits=2, values up to 9999), rollouts with the python
tool (rollout.tools=python, tags, 2 turns), a correct-answer reward. The base (shipped,
models/tool_base.py) calls the tool on about a fifth of its samples and is right on nearly all of
them, and on few of the rest. Printed per seed: held-out pass@1 (4 samples at T=1), greedy and the
share of samples that ran a tool call, base and final, and the wall time; then the means and
standard deviations. OUT/results.json keeps every run's summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning import train  # noqa: E402  (benchmarks/ is not a package)

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "arith-tool.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=None, help="default: the config's train.steps")
    args = parser.parse_args()
    overrides = [f"train.steps={args.steps}"] if args.steps else []
    rows = []
    for seed in args.seeds:
        s = train("tiny-arith-tool", args.out / f"seed{seed}", seed, overrides, config=CONFIG)
        rows.append(s)
        b, f = s["base"], s["final"]
        print(
            f"seed {seed}: held-out pass@1 {b['pass@1']:.3f} -> {f['pass@1']:.3f}, greedy {b['greedy']:.3f} -> "
            f"{f['greedy']:.3f}, tool use {b['tool_use_rate']:.3f} -> {f['tool_use_rate']:.3f}, "
            f"{s['steps']} steps in {s['measured_wall_s']:.0f} s (whole command)",
            flush=True,
        )

    def spread(key: str, when: str) -> str:
        values = [100 * s[when][key] for s in rows]
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return f"{statistics.mean(values):.1f} ± {sd:.1f}%"

    for key, label in (("pass@1", "pass@1"), ("greedy", "greedy"), ("tool_use_rate", "tool use")):
        print(f"{label}: {spread(key, 'base')} -> {spread(key, 'final')} over {len(rows)} seeds")
    (args.out / "results.json").write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": rows}, indent=1)
    )


if __name__ == "__main__":
    main()
