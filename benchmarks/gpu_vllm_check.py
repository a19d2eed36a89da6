"""One prepared check of rollout.backend=vllm on a GPU: a few GRPO steps of the tiny model, with TIS,
and the weight sync verified after every update. It installs nothing; on a CUDA machine:

    python -m venv /tmp/vllm-venv
    /tmp/vllm-venv/bin/pip install -e '.[vllm]'    # rlvr + vllm>=0.22,<=0.31 (TRL 1.16's range), its CUDA torch
    /tmp/vllm-venv/bin/python benchmarks/gpu_vllm_check.py --out gpu_vllm_check.json

What it measures (all written to --out as JSON; exit 0 when every check holds, 1 otherwise):
  - a fixed probe (completions the sampler drew before training) is scored after every update by
    the sampler (vLLM's prompt log-probs) and by the trainer (one forward pass, float32);
    synced: mean |sampler − trainer| over the probe's tokens is within --tolerance;
    moved: the sampler's scores changed from the previous update's by more than that gap, so the
    agreement is with the *new* weights (a sampler that missed the sync would agree with the old);
  - each step's loss is finite, and its sampling/* (TIS) metrics and time/* are recorded;
  - completions that stopped end with a stop token, EOS for the tiny model (vLLM returned it with
    the ids; rollout/prompts.py `stop_token_ids`).

`--dry-run` runs the same plumbing on a CPU with rollout.backend=hf rollout.dtype=bfloat16 (a bf16
sampler under the same sync contract), so the script's own code is tested where no GPU is
(tests/rollout/test_gpu_check_script.py).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

SMALL = [
    "train.batch_queries=4",
    "rollout.group_size=4",
    "task.num_train=40",
    "task.num_eval=8",
    "train.eval_samples=2",
    "algo.tis_cap=2",
    "rollout.dtype=bfloat16",
    "optim.lr=2e-3",
]
BACKENDS = {
    "gpu": ["rollout.backend=vllm", "model.device=cuda"],
    "dry-run": ["rollout.backend=hf", "model.device=cpu", "train.threads=1"],
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps (each: sample, verify, update, sync)")
    parser.add_argument("--out", type=Path, default=Path("gpu_vllm_check.json"), help="JSON file to write")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.02,
        help="largest mean |sampler − trainer| log-prob gap on the probe that counts as synced",
    )
    parser.add_argument("--dry-run", action="store_true", help="CPU plumbing check with the HF bf16 sampler")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.tolerance <= 0:
        parser.error("--steps must be >= 1 and --tolerance > 0")
    return args


def probe_gaps(trainer, probe, previous):
    """(mean |sampler − trainer|, mean |sampler − previous sampler|, sampler scores) on the probe."""
    from rlvr.engine.update import reference_logprobs

    mask = probe.completion_mask.bool()  # [n, T]
    sampler_logp = trainer.sampler.score(probe).float()  # [n, T]
    trainer_logp = reference_logprobs(trainer.policy, probe, temperature=1.0).float()  # [n, T]
    gap = float((sampler_logp - trainer_logp)[mask].abs().mean())
    moved = float((sampler_logp - previous)[mask].abs().mean())
    return gap, moved, sampler_logp


def run(args: argparse.Namespace) -> dict:
    import torch

    from rlvr.config import load_config
    from rlvr.engine.loop import Trainer
    from rlvr.rollout.prompts import stop_token_ids

    mode = "dry-run" if args.dry_run else "gpu"
    cfg = load_config(None, [*SMALL, *BACKENDS[mode], f"train.steps={args.steps}"])
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(cfg, Path(tmp))
        torch.manual_seed(1)
        probe = trainer.sampler.sample(
            trainer.eval_queries[:2],
            group_size=2,
            max_new_tokens=cfg.rollout.max_new_tokens,
            temperature=1.0,
            top_p=1.0,
        )  # fixed sequences, scored after every update
        # the rows vLLM itself says it stopped (VLLMSampler.engine_finish_reasons) must end with a stop token
        engine = list(getattr(trainer.sampler, "engine_finish_reasons", None) or probe.finish_reasons)
        gap0, _, previous = probe_gaps(trainer, probe, torch.zeros_like(probe.old_logp))
        steps = []
        for step in range(args.steps):
            metrics = trainer.step(step)
            gap, moved, previous = probe_gaps(trainer, probe, previous)
            keep = ("loss", "reward", "grad_norm", "time/generate", "time/tis_forward", "time/weight_sync")
            steps.append(
                {
                    "step": step + 1,
                    "probe_gap": gap,
                    "probe_moved": moved,
                    **{k: v for k, v in metrics.items() if k in keep or k.startswith("sampling/")},
                }
            )
    stopped = [row for row, reason in enumerate(engine) if reason == "stop"]
    ids = probe.completion_ids
    stop_ids = stop_token_ids(trainer.tokenizer, trainer.prompt_format, trainer.policy)
    stop_ok = all(int(ids[r][probe.completion_mask[r].bool()][-1]) in stop_ids for r in stopped)
    checks = {
        "synced_after_every_update": all(s["probe_gap"] <= args.tolerance for s in steps),
        "sampler_moved_more_than_gap": all(s["probe_moved"] > s["probe_gap"] for s in steps),
        "loss_finite": all(math.isfinite(s["loss"]) for s in steps),
        "tis_metrics_logged": all("sampling/importance_sampling_ratio/mean" in s for s in steps),
        "stopped_rows_end_with_stop_token": stop_ok,
    }
    return {
        "dry_run": args.dry_run,
        "backend": cfg.rollout.backend,
        "sampler_dtype": cfg.rollout.dtype,
        "device": str(trainer.device),
        "torch": torch.__version__,
        "vllm": _vllm_version(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "tolerance": args.tolerance,
        "probe_gap_before_training": gap0,
        "probe_rows": len(probe.texts),
        "steps": steps,
        "checks": checks,
        "ok": all(checks.values()),
    }


def _vllm_version() -> str | None:
    try:
        import vllm
    except ImportError:
        return None
    return vllm.__version__


def main(argv: list[str] | None = None) -> int:
    from rlvr.errors import UserError

    args = parse_args(argv)
    start = time.perf_counter()
    try:
        result = run(args)
    except UserError as err:  # no vLLM, no GPU: say so in one line
        print(f"gpu_vllm_check: {err}", file=sys.stderr)
        return 2
    result["wall_s"] = round(time.perf_counter() - start, 2)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["checks"]), f"-> {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
