"""Synchronous against asynchronous rollouts (rollout.max_staleness) on the default run, in one run.

    python benchmarks/async_rollouts.py                 # 3 seeds x 2 modes x 20 steps + 2 sync probes, ~5 min on 2 cores
    python benchmarks/async_rollouts.py --seeds 1 --steps 5      # a quick look

Per seed, the default config trains `--steps` steps twice through the real `rlvr train` (a process
each): synchronously (max_staleness=0, torch's default threads) and with max_staleness=N (the
trainer on the cores left over, the sampler process on rollout.sampler_threads=1); the order
alternates from seed to seed. Measured per run: the step loop's wall time (the sum of time/step,
with and without the first step, which in async mode includes waiting for the sampler process to
start), the whole command's wall time, the cores' utilisation (CPU seconds of the command and every
process under it, over wall seconds x cores) and the held-out pass@1 of the final model (summary.json).

Printed: per seed both modes; then the speed-up (sync / async step-loop time, mean over seeds),
both modes' utilisation, and pass@1 of each mode as mean and sd over seeds, with whether the async
mean lies within the synchronous seeds' range (the issue's bar: at least 1.15x faster, pass@1
within the seed spread). Then two short async probes measure a weight sync: the bytes sent and
the share of elements that changed at the sampler's precision, for full fine-tuning with a
bfloat16 sampler copy and for LoRA (only the adapters are sent).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every finished process below this one
    return usage.ru_utime + usage.ru_stime


def train(out: Path, seed: int, steps: int, sets: list[str]) -> dict:
    """One `rlvr train` of the default config; its step times, wall, utilisation and pass@1."""
    argv = [sys.executable, "-m", "rlvr.cli", "train", "--quiet", "--seed", str(seed), "--out", str(out),
            "--set", f"train.steps={steps}"]  # fmt: skip
    for value in sets:
        argv += ["--set", value]
    cpu, started = cpu_seconds(), time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps_ = [m for m in lines if "time/step" in m]
    summary = json.loads((out / "summary.json").read_text())
    return {
        "loop_s": sum(m["time/step"] for m in steps_),
        "loop_after_first_s": sum(m["time/step"] for m in steps_[1:]),
        "wall_s": wall,
        "utilisation": cpu / (wall * len(os.sched_getaffinity(0))),
        "pass@1": summary["final"]["pass@1"],
        "metrics": steps_,
    }


def _mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return f"{statistics.mean(values):.3f} +- {sd:.3f}"


def sync_probe(root: Path, name: str, sets: list[str], staleness: int) -> str:
    run = train(root / name, 1, 6, [f"rollout.max_staleness={staleness}", *sets])
    synced = [m for m in run["metrics"] if "sync/changed_frac" in m]
    changed = statistics.mean(m["sync/changed_frac"] for m in synced)
    sent = statistics.mean(m["sync/bytes"] for m in synced)
    params = synced[0]["sync/params"]
    return f"{name}: {sent / 1e6:.2f} MB per sync ({params:,} elements); {100 * changed:.2f}% changed at the sampler's precision"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--staleness", type=int, default=1)
    parser.add_argument("--no-probes", action="store_true", help="skip the weight-sync probes")
    parser.add_argument("--async-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a further --set of the async runs, e.g. train.threads=2 (repeatable)")  # fmt: skip
    args = parser.parse_args()
    modes = {
        "sync": [],
        f"max_staleness={args.staleness}": [f"rollout.max_staleness={args.staleness}", *args.async_set],
    }
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory(prefix="rlvr-async-") as tmp:
        root = Path(tmp)
        for seed in range(1, args.seeds + 1):
            order = list(modes) if seed % 2 else list(reversed(modes))
            for mode in order:
                run = train(root / f"{mode}-{seed}", seed, args.steps, modes[mode])
                results[mode].append(run)
                print(
                    f"seed {seed} {mode:>15}: step loop {run['loop_s']:6.2f} s ({run['loop_after_first_s']:6.2f} s "
                    f"after step 1), command {run['wall_s']:6.1f} s, cores {100 * run['utilisation']:4.0f}% busy, "
                    f"held-out pass@1 {run['pass@1']:.3f}",
                    flush=True,
                )
        sync, asynchronous = (results[mode] for mode in modes)
        mean = statistics.mean

        def ratio(key: str) -> float:
            return mean(r[key] for r in sync) / mean(r[key] for r in asynchronous)

        print(
            f"\nspeed-up of max_staleness={args.staleness} over sync ({args.steps} steps, {args.seeds} seeds): "
            f"step loop {ratio('loop_s'):.2f}x, after step 1 {ratio('loop_after_first_s'):.2f}x, "
            f"whole command {ratio('wall_s'):.2f}x"
        )
        print(
            f"cores busy: sync {100 * mean(r['utilisation'] for r in sync):.0f}%, "
            f"async {100 * mean(r['utilisation'] for r in asynchronous):.0f}%"
        )
        low, high = min(r["pass@1"] for r in sync), max(r["pass@1"] for r in sync)
        async_mean = mean(r["pass@1"] for r in asynchronous)
        within = "within" if low <= async_mean <= high else "outside"
        print(
            f"held-out pass@1: sync {_mean_sd([r['pass@1'] for r in sync])}, "
            f"async {_mean_sd([r['pass@1'] for r in asynchronous])} ({within} the sync seeds' range {low:.3f}-{high:.3f})"
        )
        staleness = [m["rollout/staleness_mean"] for r in asynchronous for m in r["metrics"]]
        idle = [m.get("time/trainer_idle", 0.0) for r in asynchronous for m in r["metrics"][1:]]
        sampler_idle = [m.get("time/sampler_idle", 0.0) for r in asynchronous for m in r["metrics"][1:]]
        first_wait = [r["metrics"][0].get("time/trainer_idle", 0.0) for r in asynchronous]
        print(
            f"async: staleness mean {mean(staleness):.2f}; the first step waited {mean(first_wait):.2f} s for its "
            f"batch; per step after the first, trainer idle {mean(idle):.3f} s, sampler idle {mean(sampler_idle):.3f} s"
        )
        if not args.no_probes:
            print("\nweight syncs (6 steps, max_staleness=1):")
            print("  " + sync_probe(root, "full fine-tuning, bfloat16 sampler", ["rollout.dtype=bfloat16"], 1))
            print("  " + sync_probe(root, "full fine-tuning, float32 sampler", [], 1))
            print("  " + sync_probe(root, "LoRA rank 8, float32 sampler", ["model.lora_rank=8"], 1))


if __name__ == "__main__":
    main()
