"""`rlvr plan --verify`: one real step of a plan, its measured memory beside the estimate.

The step is rlvr's trainer in a child process (`main`; under torchrun when the plan has several
processes), with the
plan's settings, the model given, the default arith task and the plan's batch, group and
completion length, for one step and the smallest held-out evaluation. From the step's metrics it
reads what each process held (`memory/*`: the tensor bytes the memory meter counts, the largest
over processes, and the peak RSS), and sets them beside the estimate of that very run (the
prompts' real length, rlvr train's own linter's numbers).

Weights, gradients, optimizer states, the reference and the sampler's copy are sizes the estimate
should match; activations and the KV cache depend on how long the completions really were
(printed beside them); the RSS adds Python, torch and the libraries.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rlvr import rundir
from rlvr.diagnostics.memory_estimate import Estimate, format_bytes
from rlvr.diagnostics.plan import Plan
from rlvr.errors import UserError

COMPARED = ("policy_weights", "policy_gradients", "policy_optimizer", "reference_weights", "sampler_weights",
            "kv_cache", "activations", "peak_total")  # fmt: skip
"""The components both the estimate and the memory meter name."""


def verify_settings(plan: Plan, model: str) -> list[str]:
    """The `rlvr train --set` values of the one-step run that checks `plan` on `model`."""
    s = plan.setup
    shape = [
        f"train.batch_queries={s.batch}",
        f"rollout.group_size={s.group}",
        f"rollout.max_new_tokens={s.completion_len}",
    ]
    run = [f"model.name={model}", f"algo.algorithm={s.algorithm}", f"algo.beta={s.beta:g}", "train.steps=1",
           "task.num_eval=1", "train.eval_samples=1", "train.save_every=0"]  # fmt: skip
    return [*plan.train_settings(), *shape, *run]


def run_step(plan: Plan, model: str, out: Path, *, timeout_s: float = 3600) -> dict:
    """Train one step of `plan` into `out` in a child process (several under torchrun), started
    through this module's `main`; returns the step's metrics (a UserError if the run failed)."""
    import tempfile

    import yaml

    from rlvr.config import load_config

    cfg = load_config(None, verify_settings(plan, model))  # a bad setting is refused here, before any process starts
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
        yaml.safe_dump(cfg.to_dict(), file, sort_keys=False)
    command = [sys.executable, "-m", __name__, file.name, str(out)]
    env = dict(os.environ)
    if plan.setup.gpus > 1:
        launch = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(plan.setup.gpus)]
        command = [sys.executable, *launch, "-m", __name__, file.name, str(out)]
        env.setdefault("OMP_NUM_THREADS", "1")
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    finally:
        os.unlink(file.name)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
        raise UserError("the plan's step failed:\n" + "\n".join(tail))
    return next(row for row in rundir.read_metrics(out) if "loss" in row)


def main() -> None:
    """A training process of `run_step`: `python -m rlvr.diagnostics.plan_check CONFIG.yaml OUT`."""
    import yaml

    from rlvr.config import config_from_dict
    from rlvr.engine.loop import train
    from rlvr.errors import RunFailure, report
    from rlvr.verifiers.registry import close_verifiers

    cfg = config_from_dict(yaml.safe_load(Path(sys.argv[1]).read_text()))
    try:
        train(cfg, Path(sys.argv[2]), progress=False)
    except (UserError, RunFailure) as err:  # one line and the CLI's exit codes
        raise SystemExit(report(err)) from None
    finally:
        close_verifiers()


def run_estimate(out: Path, processes: int) -> Estimate:
    """The estimate of the run in `out` as rlvr train's linter makes it: its config, its prompts' real length."""
    from rlvr.bases import resolve_model_path
    from rlvr.config import load_config
    from rlvr.diagnostics.lint import longest_prompt, task_and_tokenizer
    from rlvr.diagnostics.memory_estimate import estimate
    from rlvr.diagnostics.memory_model import load_model_spec
    from rlvr.diagnostics.memory_setup import setup_for_run

    cfg = load_config(rundir.config_path(out))
    queries, tokenizer = task_and_tokenizer(cfg)
    setup = setup_for_run(cfg, prompt_len=longest_prompt(cfg, queries, tokenizer), processes=processes)
    return estimate(load_model_spec(str(resolve_model_path(cfg.model.name))), setup)


def comparison(result: Estimate, measured: dict) -> list[str]:
    """The table of estimated and measured bytes per process, component by component."""
    lines = [f"{'component (per process)':<24} {'estimated':>12} {'measured':>12}  measured / estimated"]
    for name in COMPARED:
        guess, held = result.components.get(name), measured.get(f"memory/{name}")
        if guess is None and not held:
            continue
        guess_bytes = guess.bytes if guess is not None else 0.0
        ratio = f"{held / guess_bytes:.3f}" if guess_bytes and held is not None else "-"
        shown = format_bytes(held) if held is not None else "not measured"
        lines.append(f"{name:<24} {format_bytes(guess_bytes):>12} {shown:>12}  {ratio}")
    rss = measured.get("memory/rss_max")
    if rss:
        lines.append(f"{'peak RSS (process)':<24} {'':>12} {format_bytes(rss):>12}  Python, torch and libraries too")
    lengths = measured.get("completions/mean_length")
    if lengths is not None:
        lines.append(f"completions averaged {lengths:.1f} of {result.setup.completion_len} tokens: activations "
                     "and the KV cache are estimated at the full length")  # fmt: skip
    return lines


if __name__ == "__main__":
    main()
