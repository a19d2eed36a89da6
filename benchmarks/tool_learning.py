"""RL teaches the tiny-arith-tool base to call the python tool when it helps: 3 seeds.

    .venv/bin/python benchmarks/tool_learning.py --out runs/tools
    .venv/bin/python benchmarks/tool_learning.py --out runs/tools --seeds 1 --steps 10   # a quick look

Each seed is one real `rlvr train --config configs/arith-tool.yaml --seed S`: GRPO on three-operand
arithmetic with two-digit operands (task.digits=2, values up to 9999), rollouts with the python
tool (rollout.tools=python, tags, 2 turns), a correct-answer reward. The base (shipped,
bases/tiny_arith_tool.py) calls the tool on about a fifth of its samples and is right on nearly all of
them, and on few of the rest (printed first, from 800 held-out samples). Printed per seed: held-out pass@1 (4 samples at T=1), greedy and the
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


def base_split(queries: int = 100, samples: int = 8) -> str:
    """The base's held-out accuracy among its samples that called the tool and among the rest
    (`queries` held-out queries x `samples` tool rollouts at T = 1, seed 0)."""
    import torch

    from rlvr.bases import resolve_model_path, tiny_arith_tool
    from rlvr.models import load_policy
    from rlvr.rollout.hf import sample_completions
    from rlvr.rollout.tools import FORMATS, ToolUse
    from rlvr.tasks.arith import make_queries
    from rlvr.verifiers import RewardFunction

    model, tok = load_policy(resolve_model_path("tiny-arith-tool"))
    tools = ToolUse(FORMATS["tags"], max_turns=2)
    try:
        torch.manual_seed(0)
        heldout = make_queries(queries, split="heldout", seed=0, spec=tiny_arith_tool.TASK)
        batch = sample_completions(model, tok, heldout, group_size=samples, max_new_tokens=48, tools=tools)
    finally:
        tools.close()
    scored = RewardFunction().score_batch([(batch.query_of(i), t) for i, t in enumerate(batch.texts)])
    called = [any("obs_start" in t for t in turns) for turns in batch.turns]
    right = [s.correct for s in scored]

    def share(rows: list[bool]) -> float:
        return 100 * sum(rows) / max(len(rows), 1)

    return (
        f"base, {len(called)} held-out samples: called the tool on {share(called):.1f}%; right on "
        f"{share([r for r, c in zip(right, called) if c]):.1f}% of those, "
        f"{share([r for r, c in zip(right, called) if not c]):.1f}% of the rest"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=None, help="default: the config's train.steps")
    args = parser.parse_args()
    overrides = [f"train.steps={args.steps}"] if args.steps else []
    print(base_split(), flush=True)
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
