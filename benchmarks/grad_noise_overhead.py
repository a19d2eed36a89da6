"""Cost of the per-step gradient noise measurement (grad/variance, grad/noise_scale): the policy
forward/backward of one default step (B = 16, G = 8, micro-batches of 32) with and without the
MicroBatchNoise hook, median of 5 after a warm-up, on the embedded model.

    OMP_NUM_THREADS=1 python benchmarks/grad_noise_overhead.py
"""

import statistics
import time

import torch

from rlvr.bases import resolve_model_path
from rlvr.config import AlgoConfig
from rlvr.engine.update import accumulate_policy_gradient, micro_batches
from rlvr.meters.grad_noise import MicroBatchNoise
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries


def main() -> None:
    torch.set_num_threads(1)
    model, tok = load_policy(resolve_model_path("tiny-arith"))
    torch.manual_seed(0)
    batch = sample_completions(model, tok, make_queries(16, split="train", seed=0), group_size=8, max_new_tokens=40)
    advantages = torch.randn(batch.num_completions)  # [N]
    algo = AlgoConfig(beta=0.0)

    def step(with_hook: bool) -> float:
        model.zero_grad(set_to_none=True)
        start = time.perf_counter()
        hook = MicroBatchNoise(model) if with_hook else None
        accumulate_policy_gradient(
            model,
            batch,
            advantages,
            None,
            algo,
            temperature=1.0,
            max_new_tokens=40,
            micro_batch_size=32,
            on_micro_batch=hook,
        )
        if hook is not None:
            hook.metrics()
        return time.perf_counter() - start

    step(True), step(False)
    times = {flag: [] for flag in (False, True)}
    for _ in range(5):
        for flag in (False, True):
            times[flag].append(step(flag))
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(
        f"forward/backward without the hook {off * 1000:.0f} ms, with it {on * 1000:.0f} ms "
        f"(+{100 * (on - off) / off:.1f}%; noisy on a shared machine)"
    )
    # The hook's own work, alone: one construction, 4 reads (one per micro-batch), the estimate.
    mbs = micro_batches(batch, 32)
    alone = []
    for _ in range(20):
        start = time.perf_counter()
        hook = MicroBatchNoise(model)
        for mb in mbs:
            hook(mb, None)
        hook.metrics()
        alone.append(time.perf_counter() - start)
    cost = statistics.median(alone)
    print(f"the hook alone: {cost * 1000:.1f} ms per step = {100 * cost / off:.1f}% of the forward/backward")


if __name__ == "__main__":
    main()
