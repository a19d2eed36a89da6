"""What rg_learning.py and proof_learning.py share: build a base once, then train it with GRPO
through the real `rlvr train` once per seed and print held-out pass@1 and greedy, base and final.

Not a benchmark of its own: each script gives its base builder, its `--set` overrides and its
defaults, and `run` does the rest (arguments, the base, the seeds, results.json).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def train(base: Path | str, out: Path, seed: int, overrides: list[str], config: Path | None = None) -> dict:
    """One `rlvr train` run of `base` (a path or a built-in name) with `config`, if given, and
    `overrides` (section.key=value); its summary.json plus the wall time measured around the command."""
    argv = [sys.executable, "-m", "rlvr.cli", "train", "--quiet", "--seed", str(seed), "--out", str(out)]
    if config is not None:
        argv += ["--config", str(config)]
    for override in [f"model.name={base}", *overrides]:
        argv += ["--set", override]
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    summary = json.loads((out / "summary.json").read_text())
    summary["measured_wall_s"] = time.perf_counter() - started
    return summary


def run(
    description: str,
    *,
    name: str,
    build_base: Callable[[Path], None],
    overrides: Callable[[argparse.Namespace], list[str]],
    steps: int,
    lr: float,
) -> None:
    """Parse --out/--seeds/--steps/--lr, build OUT/base unless it is there, train each seed, print
    one line per seed and the mean change, and write OUT/results.json."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--lr", type=float, default=lr)
    args = parser.parse_args()
    base = args.out / "base"
    if not (base / "model.safetensors").is_file():
        started = time.perf_counter()
        build_base(base)
        print(f"base for {name} built in {time.perf_counter() - started:.0f} s")
    common = [f"train.steps={args.steps}", f"optim.lr={args.lr}"]
    rows = []
    for seed in args.seeds:
        s = train(base, args.out / f"seed{seed}", seed, overrides(args) + common)
        rows.append(s)
        print(
            f"seed {seed}: held-out pass@1 {s['base']['pass@1']:.3f} -> {s['final']['pass@1']:.3f}, greedy "
            f"{s['base']['greedy']:.3f} -> {s['final']['greedy']:.3f}, {s['steps']} steps in {s['measured_wall_s']:.0f} s",
            flush=True,
        )
    gains = [100 * (s["final"]["pass@1"] - s["base"]["pass@1"]) for s in rows]
    print(f"{name}: mean pass@1 change {sum(gains) / len(gains):+.1f} points over {len(rows)} seeds")
    (args.out / "results.json").write_text(
        json.dumps({"name": name, "args": vars(args) | {"out": str(args.out)}, "runs": rows}, indent=1)
    )
