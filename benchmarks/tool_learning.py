"""RL teaches the tiny-arith-tool base to call the python tool when it helps: 3 seeds.

    .venv/bin/python benchmarks/tool_learning.py --out runs/tools
    .venv/bin/python benchmarks/tool_learning.py --out runs/tools --seeds 1 --steps 10   # a quick look

Each seed is one real `rlvr train --config configs/arith-tool.yaml --seed S`: GRPO on three-operand
arithmetic with two-digit operands (task.digits=2, values up to 9999), rollouts with the python
tool (rollout.tools=python, tags, 2 turns), a correct-answer reward. The base (shipped,
bases/tiny_arith_tool.py) calls the tool on about a fifth of its samples and is right on nearly all of
them, and on few of the rest (printed first, from 800 held-out samples). Then `rlvr eval --run`
evaluates each run against the base on its 200 held-out queries (n=8 at T=1, tool rollouts,
pass@1 ... pass@8 with 95% intervals, paired draws). Printed per seed: base and trained pass@1 and
pass@8 with intervals and their paired difference, training's own held-out check (pass@1 over 4
samples, greedy, share of samples that ran a tool call), the wall times; then the base once and
the mean and sd over seeds (benchmarks/learning.py). `--eval-only` re-evaluates seeds already
trained. OUT/results.json keeps every run's summary with its evaluation.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning import Recipe, run  # noqa: E402  (benchmarks/ is not a package)

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


if __name__ == "__main__":
    run(
        Recipe(
            name="tool use (configs/arith-tool.yaml)",
            description=__doc__.splitlines()[0],
            base="tiny-arith-tool",
            config=CONFIG,
            summary_keys=("pass@1", "greedy", "tool_use_rate"),
            preamble=base_split,
        )
    )
