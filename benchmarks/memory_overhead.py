"""CPU cost of the memory/* metrics: one trainer with them, one without, steps alternated in one process.

OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/memory_overhead.py [steps]
"""

import statistics
import sys
import tempfile
import time

from rlvr.config import load_config
from rlvr.engine.loop import Trainer

SETUP = [
    "train.batch_queries=4",
    "rollout.group_size=4",
    "task.num_train=40",
    "task.num_eval=8",
    "rollout.max_new_tokens=16",
    "optim.micro_batch_size=8",
    "train.threads=1",
]


def main(steps: int = 8) -> None:
    trainers = {
        on: Trainer(load_config(None, [*SETUP, f"train.memory_metrics={str(on).lower()}"]), tempfile.mkdtemp())
        for on in (True, False)
    }
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for step in range(steps):
        for on, trainer in trainers.items():
            start = time.process_time()  # this process only: verifier workers are excluded
            trainer.step(step)
            seconds[on].append(time.process_time() - start)
    on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(f"median CPU seconds per step: memory metrics on {on:.3f}, off {off:.3f} ({100 * (on / off - 1):+.1f}%)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
