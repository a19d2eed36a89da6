"""What the run's health checks cost on the default step, measured inside one run.

    python benchmarks/health_overhead.py              # 40 default steps, ~30 s on 2 cores
    python benchmarks/health_overhead.py --steps 10 --set rollout.dtype=bfloat16

Trains the default config (or the given --set overrides) step by step through the engine's own
loop pieces: each step runs `Trainer.step` (sample, verify, update, weight sync and, with a
sampler copy, its probe) and then the health checks exactly as the loop runs them
(`engine/loop.py _health`: the weights' finiteness and every check's read, the metrics and the
health.jsonl lines). Both are timed in the same process, step by step, so the ratio does not
depend on how busy the machine is. Printed: the step's median and the checks' median time, and
their ratio (the issue's bar: at most 5% of the default step); the flight recorder's own work
(engine/flight.py: always on, and writing each batch with train.recorder_steps > 0); the probe of a sampler copy runs
inside the step and is reported apart as `sync/probe` when the setting has one (timed by running
it again after the step).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="a config override")
    args = parser.parse_args()

    from rlvr.config import load_config
    from rlvr.engine.flight import FlightRecorder
    from rlvr.engine.loop import Trainer, _health
    from rlvr.engine.sync_probe import probe_logp

    class TimedFlight(FlightRecorder):
        """The loop's flight recorder, its own work timed: the RNG state at the step's start and
        the finiteness check after each micro-batch (inside the step), and writing the batch."""

        spent = 0.0

        def begin(self) -> None:
            started = time.perf_counter()
            super().begin()
            self.spent += time.perf_counter() - started

        def micro_batch(self, mb, logp) -> None:
            started = time.perf_counter()
            super().micro_batch(mb, logp)
            self.spent += time.perf_counter() - started

    cfg = load_config(None, [f"train.steps={args.steps}", *args.overrides])
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(cfg, Path(tmp))
        flight = TimedFlight(trainer.policy)
        step_s, health_s, probe_s, flight_s = [], [], [], []
        for step in range(args.steps):
            flight.spent = 0.0
            flight.begin()
            started = time.perf_counter()
            metrics = trainer.step(step, flight)
            step_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            if cfg.train.recorder_steps:
                flight.write(Path(tmp), step + 1, metrics["loss"], keep=cfg.train.recorder_steps)
            flight_s.append(flight.spent + time.perf_counter() - started)
            started = time.perf_counter()
            _health(trainer, step + 1, metrics, flight)
            health_s.append(time.perf_counter() - started)
            probe = trainer.context.sync_probe.probe
            if probe is not None:
                started = time.perf_counter()
                trainer.sampler.score(probe), probe_logp(trainer.context.forward, probe)
                probe_s.append(time.perf_counter() - started)
        trainer.close()
    step, health = statistics.median(step_s), statistics.median(health_s)
    print(f"{args.steps} steps of the {'default' if not args.overrides else ' '.join(args.overrides)} config")
    print(f"step (sample, verify, update, sync): median {step * 1000:.1f} ms")
    print(f"health checks after it: median {health * 1000:.2f} ms = {health / step:.2%} of the step")
    kept = (
        f"recording the batch (train.recorder_steps={cfg.train.recorder_steps})"
        if cfg.train.recorder_steps
        else "the batch held"
    )
    flight = statistics.median(flight_s)
    print(f"flight recorder ({kept}): median {flight * 1000:.2f} ms = {flight / step:.2%} of the step")
    if probe_s:
        probe = statistics.median(probe_s)
        print(f"sync/probe (inside the step): median {probe * 1000:.2f} ms = {probe / step:.2%} of the step")


if __name__ == "__main__":
    main()
