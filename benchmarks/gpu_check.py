"""One prepared check of the GPU recipe, configs/qwen2.5-0.5b-gsm8k-lora.yaml, on a CUDA machine:
a few GRPO steps of Qwen2.5-0.5B with LoRA, bf16 weights and gradient checkpointing on GSM8K-format
rows, the same steps with asynchronous rollouts (rollout.max_staleness=1: a sampler process beside
the trainer, docs/async.md), then the vLLM check (benchmarks/gpu_vllm_check.py, in its own process). It prints tokens/s and
the peak of allocated GPU memory beside `rlvr memory`'s estimate for the same setup, and writes
everything to --out (JSON). It installs and downloads nothing:

    .venv/bin/python benchmarks/gpu_check.py                    # random weights of Qwen2.5-0.5B's shape
    .venv/bin/python benchmarks/gpu_check.py --model /models/Qwen2.5-0.5B-Instruct
    .venv/bin/python benchmarks/gpu_check.py --dry-run          # the same code on the CPU, at small width

The model: --model is a local Hugging Face directory. Without it the script builds a randomly
initialised Qwen2ForCausalLM with the numbers of `rlvr memory`'s Qwen2.5-0.5B preset (hidden 896,
24 layers, 14 heads, 2 KV heads, MLP 4864, vocabulary 151,936, tied embeddings) and a character
tokenizer with Qwen2.5's ChatML template (rlvr.models.tokenizer): the real model's memory and work
per token. Random weights earn no reward (every completion runs to rollout.max_new_tokens, the most
work a step can do), so all advantages would be 0: the script then scores with a noisy verifier
that passes half of the failures (reward.fidelity=noisy), which gives each group rewards that
differ and the update a real policy gradient, at the recipe's own memory and compute.

--dry-run builds the same architecture with 2 layers of width 112 (14 heads of 8 dimensions, 2 KV
heads) and runs 2 small steps on the CPU in float32; the vLLM check runs with its own --dry-run.

The data: GSM8K-format rows made here (a question, a worked answer ending '#### N'), read through
task.name=hf, task.hf_format=gsm8k as the recipe reads the real files.

Exit status: 0 when every step's loss is finite (the asynchronous run's too, its batches at most one
update stale), the adapters moved, and the vLLM check passed or could not start (no vLLM installed: reported, not failed); 1 otherwise; 2 without a CUDA device
(except --dry-run) or with a setting that cannot run (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECIPE = HERE.parent / "configs" / "qwen2.5-0.5b-gsm8k-lora.yaml"
PRESET = "Qwen2.5-0.5B"
"""The `rlvr memory` preset whose numbers the random model takes."""
SMALL_WIDTH = {"hidden_size": 112, "num_layers": 2, "intermediate_size": 608}
"""--dry-run: Qwen2.5-0.5B's head layout (14 heads, 2 KV heads, tied embeddings) at 1/8 of its width
(head dimension 8 instead of 64, the MLP 4864/896 times the width) and 2 of its 24 layers."""

MODES = {
    "gpu": ["model.device=cuda"],
    "dry-run": [
        "model.device=cpu",
        "train.threads=2",
        "train.batch_queries=2",
        "rollout.group_size=4",
        "rollout.max_new_tokens=32",
        "optim.micro_batch_size=8",
    ],
}
"""Overrides of the recipe by mode: on a GPU its own sizes (B = 16, G = 8, T = 512, micro-batches
of 8); on the CPU a step small enough for seconds."""
RANDOM_WEIGHTS = ["reward.fidelity=noisy", "reward.false_positive_rate=0.5"]
"""Random weights earn no reward; a verifier that passes half of the failures gives GRPO's groups
rewards that differ, so the adapters get a policy gradient (an entropy bonus would also give one,
but keeps two more [n, T, V] tensors for the backward than the recipe does)."""


# --------------------------------------------------------------------------- inputs made here


def build_random_qwen(path: Path, *, small: bool, device: str) -> Path:
    """A randomly initialised Qwen2ForCausalLM of Qwen2.5-0.5B's shape (SMALL_WIDTH if `small`), saved in
    bf16 with the ChatML character tokenizer in `path`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from rlvr.diagnostics.memory_model import load_model_spec
    from rlvr.models.tokenizer import build_chat_tokenizer

    spec, tokenizer = load_model_spec(PRESET), build_chat_tokenizer()
    sizes = dict(SMALL_WIDTH) if small else {
        "hidden_size": spec.hidden_size, "num_layers": spec.num_layers, "intermediate_size": spec.intermediate_size,
    }  # fmt: skip
    config = Qwen2Config(
        vocab_size=len(tokenizer) if small else spec.vocab_size,  # the full size keeps ids the tokenizer lacks
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["intermediate_size"],
        num_hidden_layers=sizes["num_layers"],
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        tie_word_embeddings=spec.tie_embeddings,
        rms_norm_eps=1e-6,  # Qwen2.5's, as its rope theta and context length
        rope_theta=1e6,
        max_position_embeddings=32768,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    with torch.device(device):  # 0.5B parameters initialise in a moment on a GPU, in seconds on a CPU
        model = Qwen2ForCausalLM(config)
    model.to(torch.bfloat16).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _apples(name: str, a: int, b: int, c: int) -> tuple[str, str, int]:
    question = f"{name} has {a} apples. She buys {b} bags with {c} apples in each. How many apples does she have now?"
    steps = f"She buys {b}*{c}=<<{b}*{c}={b * c}>>{b * c} apples.\n{a}+{b * c}=<<{a}+{b * c}={a + b * c}>>{a + b * c}"
    return question, steps, a + b * c


def _loaves(name: str, a: int, b: int, c: int) -> tuple[str, str, int]:
    question = f"{name} bakes {a} loaves in the morning and {b} in the afternoon, then sells {c}. How many are left?"
    steps = (
        f"{name} bakes {a}+{b}=<<{a}+{b}={a + b}>>{a + b} loaves.\n{a + b}-{c}=<<{a + b}-{c}={a + b - c}>>{a + b - c}"
    )
    return question, steps, a + b - c


def _pages(name: str, a: int, b: int, c: int) -> tuple[str, str, int]:
    question = f"{name} reads {a} pages a day for {b} days, then {c} more pages. How many pages has she read?"
    steps = f"In {b} days she reads {a}*{b}=<<{a}*{b}={a * b}>>{a * b} pages.\n{a * b}+{c}=<<{a * b}+{c}={a * b + c}>>{a * b + c}"
    return question, steps, a * b + c


def gsm8k_rows(n: int, seed: int) -> list[dict[str, str]]:
    """`n` word problems in GSM8K's layout, {"question", "answer"}: the answer a worked solution with
    GSM8K's <<calculator>> annotations, ending '#### N'."""
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        problem = (_apples, _loaves, _pages)[index % 3]
        name = rng.choice(["Natalia", "Weng", "Betty", "Julie"])
        question, steps, answer = problem(name, rng.randint(12, 40), rng.randint(2, 9), rng.randint(2, 11))
        rows.append({"question": question, "answer": f"{steps}\n#### {answer}"})
    return rows


def write_gsm8k(path: Path, *, train: int, test: int) -> Path:
    """A dataset directory in Hugging Face layout: train.jsonl and test.jsonl (the two splits)."""
    path.mkdir(parents=True, exist_ok=True)
    for split, rows in (("train", gsm8k_rows(train, seed=0)), ("test", gsm8k_rows(test, seed=1))):
        (path / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# --------------------------------------------------------------------------- the recipe's steps


def run_recipe(args: argparse.Namespace, work: Path) -> dict:
    """Train the recipe for args.steps steps; per-step times, tokens/s, memory, and the estimate."""
    import torch

    from rlvr.config import load_config
    from rlvr.diagnostics.memory_estimate import estimate
    from rlvr.diagnostics.memory_model import load_model_spec
    from rlvr.diagnostics.memory_setup import memory_command, setup_for_run
    from rlvr.engine.loop import Trainer
    from rlvr.rollout.hf import encode_prompts

    mode = "dry-run" if args.dry_run else "gpu"
    random_weights = args.model is None
    if random_weights:
        device, width = ("cpu", " at small width") if args.dry_run else ("cuda", "")
        print(f"building a randomly initialised Qwen2 of {PRESET}'s shape{width}", flush=True)
        model = build_random_qwen(work / "model", small=args.dry_run, device=device)
    else:
        model = args.model
    settings = [f"model.name={model}", f"task.hf_path={write_gsm8k(work / 'gsm8k', train=64, test=16)}"]
    settings += MODES[mode] + (RANDOM_WEIGHTS if random_weights else []) + [f"train.steps={args.steps}"]
    settings += [f"model.dtype={args.dtype}", f"rollout.dtype={args.dtype}"]
    cfg = load_config(RECIPE, settings)
    trainer = Trainer(cfg, work / "run")
    adapters = {n: p.detach().clone() for n, p in trainer.policy.named_parameters() if p.requires_grad}
    prompts = [q.prompt for q in trainer.train_queries]
    prompt_len = encode_prompts(trainer.tokenizer, prompts, fmt=trainer.prompt_format)[0].shape[1]  # widest P
    steps = [_timed_step(trainer, step, cfg, on_cuda=not args.dry_run) for step in range(args.steps)]
    moved = max(
        float((p.detach() - adapters[n]).abs().max()) for n, p in trainer.policy.named_parameters() if n in adapters
    )
    setup = setup_for_run(cfg, prompt_len=prompt_len)
    spec_source = PRESET if random_weights and not args.dry_run else str(model)
    predicted = estimate(load_model_spec(spec_source), setup).components
    return {
        "mode": mode,
        "model": "random weights, Qwen2.5-0.5B's shape" + (" at small width" if args.dry_run else "")
        if random_weights
        else str(model),
        "device": torch.cuda.get_device_name(0) if not args.dry_run else "cpu",
        "torch": torch.__version__,
        "settings": settings,
        "prompt_len": prompt_len,
        "steps": steps,
        "adapters_max_change": moved,
        "estimate_command": memory_command(spec_source, setup),
        "estimate_bytes": {name: c.bytes for name, c in predicted.items()},
    }


def _timed_step(trainer, step: int, cfg, *, on_cuda: bool) -> dict:
    import torch

    if on_cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    metrics = trainer.step(step)
    if on_cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(f"step {step + 1}/{cfg.train.steps}: {seconds:.1f} s, loss {metrics['loss']:.4f}", flush=True)
    sampled = metrics["completions/mean_length"] * cfg.train.batch_queries * cfg.rollout.group_size  # tokens
    return {
        "step": step + 1,
        "seconds": seconds,
        "generate_seconds": metrics["time/generate"],
        "sampled_tokens": sampled,
        "generate_tokens_per_s": sampled / metrics["time/generate"],
        "step_tokens_per_s": sampled / seconds,
        "loss": metrics["loss"],
        "reward": metrics["reward"],
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if on_cuda else None,
        "accounted_peak_bytes": metrics.get("memory/peak_total"),
        "trainer_idle_s": metrics.get("time/trainer_idle"),  # asynchronous rollouts only
        "staleness": metrics.get("rollout/staleness_mean"),
    }


# --------------------------------------------------------------------------- asynchronous rollouts


FAIR_STEPS = 6
"""Steps below which the asynchronous ratio mostly measures how the run starts: the first step may
wait for the sampler process to load, and the process samples the next batch during the first."""


def run_async(args: argparse.Namespace, work: Path, settings: list[str]) -> dict:
    """The recipe again, for the same steps, with rollout.max_staleness=1 (docs/async.md): a sampler
    process with its own copy of the model on the same device samples the next batch while the
    trainer updates. Its step times go beside the synchronous run's. The peak memory is the trainer
    process's alone (the sampler's copy lives in the other process)."""
    import gc

    import torch

    from rlvr.config import load_config
    from rlvr.engine.loop import Trainer

    gc.collect()  # the synchronous run's trainer, before this one loads
    if not args.dry_run:
        torch.cuda.empty_cache()
    extra = ["rollout.max_staleness=1"] + (["train.threads=1"] if args.dry_run else [])  # 2 cores: 1 + the sampler's 1
    cfg = load_config(RECIPE, [*settings, *extra])
    trainer = Trainer(cfg, work / "run-async")
    try:
        steps = [_timed_step(trainer, step, cfg, on_cuda=not args.dry_run) for step in range(args.steps)]
    finally:
        trainer.close()
    return {"settings": extra, "steps": steps}


# --------------------------------------------------------------------------- the vLLM check


def run_vllm_check(args: argparse.Namespace, work: Path) -> dict:
    """benchmarks/gpu_vllm_check.py in its own process (vLLM takes over its process's GPU state):
    its checks, or why it could not run."""
    out = work / "gpu_vllm_check.json"
    print(f"running benchmarks/gpu_vllm_check.py (at most {args.vllm_timeout} s)", flush=True)
    command = [sys.executable, str(HERE / "gpu_vllm_check.py"), "--out", str(out)]
    command += ["--dry-run", "--steps", "2"] if args.dry_run else []
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.vllm_timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "detail": f"did not finish in {args.vllm_timeout} s"}
    if done.returncode == 2:  # it could not start (no vLLM, no GPU) and said why in its last line
        return {"status": "not run", "detail": (done.stderr.strip() or "exit 2").splitlines()[-1]}
    last_line = (done.stdout.strip() or done.stderr.strip() or "no output").splitlines()[-1]  # its checks
    result = json.loads(out.read_text()) if out.is_file() else {}
    return {
        "status": "passed" if done.returncode == 0 else "failed",
        "detail": last_line,
        "checks": result.get("checks"),
        "steps": result.get("steps"),
    }


# --------------------------------------------------------------------------- report


def _size(n: float | None) -> str:
    from rlvr.diagnostics.memory_estimate import format_bytes

    return "-" if n is None else format_bytes(n)


def report(result: dict) -> str:
    steps, estimated = result["steps"], result["estimate_bytes"]["peak_total"]
    lines = [
        f"gpu_check ({result['mode']}): {RECIPE.name}, {len(steps)} steps on {result['device']}, model: {result['model']}",
        f"{'step':>4} {'time':>8} {'generate':>9} {'sampled':>8} {'gen tok/s':>10} {'step tok/s':>11} "
        f"{'loss':>9} {'peak allocated':>15} {'accounted':>11}",
    ]
    for s in steps:
        lines.append(
            f"{s['step']:>4} {s['seconds']:>7.1f}s {s['generate_seconds']:>8.1f}s {s['sampled_tokens']:>8.0f} "
            f"{s['generate_tokens_per_s']:>10.0f} {s['step_tokens_per_s']:>11.0f} {s['loss']:>9.4f} "
            f"{_size(s['peak_allocated_bytes']):>15} {_size(s['accounted_peak_bytes']):>11}"
        )
    measured = [s["peak_allocated_bytes"] or s["accounted_peak_bytes"] for s in steps]
    kind = (
        "allocated (torch.cuda.max_memory_allocated)"
        if steps[0]["peak_allocated_bytes"]
        else "accounted (memory/peak_total)"
    )
    lines.append(f"peak {kind}: {_size(max(measured))}; rlvr memory's estimate: {_size(estimated)} "
                 f"(measured / estimated {max(measured) / estimated:.2f})")  # fmt: skip
    lines.append(f"  estimate: {result['estimate_command']}")
    later = steps[1:] or steps  # the first step warms up kernels and the verifier's workers
    lines.append(
        f"after the first step: {sum(s['generate_tokens_per_s'] for s in later) / len(later):.0f} sampled tokens/s "
        f"while sampling, {sum(s['step_tokens_per_s'] for s in later) / len(later):.0f} per second of step"
    )
    lines.append(_async_line(result))
    vllm = result["vllm_check"]
    lines.append(f"vLLM check (benchmarks/gpu_vllm_check.py): {vllm['status']}: {vllm['detail']}")
    return "\n".join(lines)


def _async_line(result: dict) -> str:
    """The asynchronous run's step loop against the synchronous run's, first steps included (the
    asynchronous first step waits for whatever is left of the sampler process's start)."""
    run = result["async"]
    if run is None:
        return "asynchronous rollouts: not run (--skip-async)"
    n, later = len(run["steps"]), run["steps"][1:] or run["steps"]
    sync_s, async_s = sum(s["seconds"] for s in result["steps"]), sum(s["seconds"] for s in run["steps"])
    line = (
        f"asynchronous rollouts (rollout.max_staleness=1), {n} steps: {async_s:.1f} s against {sync_s:.1f} s "
        f"synchronous ({sync_s / async_s:.2f}x); after the first step the trainer waited "
        f"{sum(s['trainer_idle_s'] for s in later) / len(later):.2f} s a step for its batch, mean staleness "
        f"{sum(s['staleness'] for s in later) / len(later):.2f}"
    )
    if n < FAIR_STEPS:
        line += (
            f" (over {n} steps the sampler process's start, which the first step may wait for, and the "
            f"batches it samples ahead weigh heavily; --steps {FAIR_STEPS} or more for a ratio that means something)"
        )
    return line


def checks(result: dict) -> dict[str, bool]:
    return {
        "loss_finite": all(math.isfinite(s["loss"]) for s in result["steps"]),
        "adapters_moved": result["adapters_max_change"] > 0,
        "vllm_check_passed_or_not_run": result["vllm_check"]["status"] != "failed",
        "async_loss_finite_or_not_run": result["async"] is None
        or all(math.isfinite(s["loss"]) and s["staleness"] <= 1 for s in result["async"]["steps"]),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="local Hugging Face model directory (default: random weights)")
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps (default 3 on a GPU, 2 with --dry-run)")
    parser.add_argument("--dry-run", action="store_true", help="run on the CPU at small width (no GPU needed)")
    parser.add_argument(
        "--dtype",
        choices=["bfloat16", "float32"],
        help="model.dtype and rollout.dtype (default: the recipe's bfloat16 on a GPU; float32 with --dry-run)",
    )
    parser.add_argument("--skip-vllm", action="store_true", help="leave out the vLLM check")
    parser.add_argument("--skip-async", action="store_true", help="leave out the run with rollout.max_staleness=1")
    parser.add_argument("--vllm-timeout", type=int, default=300, help="seconds the vLLM check may take (default 300)")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"), help="JSON file to write")
    args = parser.parse_args(argv)
    args.steps = args.steps if args.steps is not None else (2 if args.dry_run else 3)
    args.dtype = args.dtype or ("float32" if args.dry_run else "bfloat16")
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from transformers.utils import logging as transformers_logging

    from rlvr.errors import UserError

    transformers_logging.disable_progress_bar()  # weight loading bars, which would bury the report
    if not args.dry_run and not torch.cuda.is_available():
        print(
            f"gpu_check: no CUDA device (torch {torch.__version__} sees none); run it on a GPU machine, "
            "or with --dry-run on the CPU",
            file=sys.stderr,
        )
        return 2
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rlvr-gpu-check-") as tmp:
        try:
            result = run_recipe(args, Path(tmp))
            result["async"] = None if args.skip_async else run_async(args, Path(tmp), result["settings"])
        except UserError as error:  # a missing package, a bad --model: one line
            print(f"gpu_check: {error}", file=sys.stderr)
            return 2
        skipped = {"status": "not run", "detail": "--skip-vllm"}
        result["vllm_check"] = skipped if args.skip_vllm else run_vllm_check(args, Path(tmp))
    result["checks"] = checks(result)
    result["ok"] = all(result["checks"].values())
    result["wall_s"] = round(time.perf_counter() - start, 1)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))
    print(f"checks: {json.dumps(result['checks'])}; {result['wall_s']} s in all -> {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
