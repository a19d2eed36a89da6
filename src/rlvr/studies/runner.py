"""One way to run training for every study: a typed spec, run in this process or in a child.

    spec = RunSpec(out="runs/a", config="configs/smoke.yaml", overrides=("algo.beta=0",), seed=1)
    run(spec)                         # here; returns the run's summary
    run_many([spec, ...], jobs=4)     # side by side, each in a child with one torch thread and a log
    start(spec, log)                  # one detached child in its own process group (the lab)

A child runs `python -m rlvr.studies.runner SPEC`, SPEC being the job's JSON (`to_json`): a library
entry point that reads a typed spec, never the CLI's parser. A finished run (summary.json) is kept
and an interrupted one resumes from its checkpoint, so a study stopped half-way continues where it
stopped when it is started again. The same children evaluate a finished run's pass@k (`PasskSpec`,
what `rlvr eval` computes) for the studies that measure it, and run a study's supervised controls
(`SupervisedSpec`, studies/supervised.py).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from tqdm import tqdm
from transformers.utils import logging as hf_logging

from rlvr.config import RunConfig, config_from_dict, eval_fields, load_config
from rlvr.engine.loop import train
from rlvr.errors import UserError
from rlvr.rollout.heldout import HeldoutResult
from rlvr.rollout.prompts import PromptFormat
from rlvr.rundir import final_dir, find_checkpoint, is_finished, is_run_dir, read_config
from rlvr.studies.passk_eval import evaluate_passk
from rlvr.studies.supervised import SupervisedSpec, run_supervised
from rlvr.verifiers.registry import close_verifiers

EVAL_REPORT = "eval.json"
"""What `evaluate_passk` writes into its output folder (studies/passk_eval.py)."""


@dataclass(frozen=True)
class RunSpec:
    """One training run: a preset and overrides, as `rlvr train --config --set` takes them, into
    one run directory (rundir.py)."""

    kind: ClassVar[str] = "train"
    out: str
    """The run directory."""
    config: str | None = None
    """YAML preset (None: the defaults)."""
    overrides: tuple[str, ...] = ()
    """`section.key=value` overrides on top of the preset."""
    seed: int | None = None
    """train.seed, after the overrides (None: whatever they and the preset say)."""
    threads: int | None = None
    """torch CPU threads of the process that trains (None: torch's default; run_many's children: 1)."""
    resume: bool = True
    """Continue from the run directory's checkpoint when it has one: its saved config with
    `overrides` on top (as `rlvr train --resume DIR --set ...`). Without one the run starts afresh."""
    progress: bool = False
    """Progress bar and messages on stdout."""
    log: str | None = None
    """Where a child's output goes (None: `<out>.log` beside the run directory)."""
    base_eval: str | None = None
    """A JSON file whose "base" is the base model's held-out evaluation, made already for the same
    base, held-out split, sampling settings and train.seed (a summary.json of such a run, or the one
    `rlvr compare` shares): used instead of evaluating the base again (None: evaluate it)."""

    def finished(self) -> bool:
        return is_finished(self.out)

    def log_path(self) -> Path:
        return Path(self.log) if self.log else Path(self.out).with_name(f"{Path(self.out).name}.log")


@dataclass(frozen=True)
class PasskSpec:
    """pass@k and CoT-pass@k of a finished run's trained policy against the base it started from, on
    the run's own held-out task (chain length, values, sampling length): what `rlvr eval --model
    RUN/final --base BASE --set ...` writes to `out`."""

    kind: ClassVar[str] = "passk"
    run_dir: str
    out: str
    """Folder for eval.json and passk.png."""
    n: int
    """Samples per held-out query."""
    ks: tuple[int, ...]
    num_queries: int
    temperature: float = 1.0
    seed: int = 0
    """Sampling seed, the same for both models."""
    base_only: bool = False
    """Evaluate the run's base model alone (no trained model): a baseline such as the base sampled at
    a lower temperature, in eval.json as "model"."""
    threads: int | None = None
    progress: bool = False
    log: str | None = None
    """Where a child's output goes (None: `<run_dir>.eval.log` beside the run directory)."""
    support_k: int | None = None
    """Also each query's support at this k against the base (`rlvr eval --support-k`)."""
    base_report: str | None = None
    """The eval.json of the base evaluated alone with the same settings and seed, reused as the base."""

    def finished(self) -> bool:
        return (Path(self.out) / EVAL_REPORT).is_file()

    def log_path(self) -> Path:
        return Path(self.log) if self.log else Path(self.run_dir).with_name(f"{Path(self.run_dir).name}.eval.log")


Job = RunSpec | PasskSpec | SupervisedSpec


def run(spec: RunSpec) -> dict[str, Any]:
    """Train one run in this process (resuming it when asked and possible); return its summary."""
    checkpoint = find_checkpoint(spec.out) if spec.resume and is_run_dir(spec.out) else None
    if checkpoint is not None:
        cfg = load_config(None, list(spec.overrides), base=config_from_dict(read_config(spec.out)))
    else:
        seed = [] if spec.seed is None else [f"train.seed={spec.seed}"]
        cfg = load_config(spec.config, [*spec.overrides, *seed])
    if spec.threads:
        torch.set_num_threads(spec.threads)
    base = None if spec.base_eval is None else json.loads(Path(spec.base_eval).read_text())["base"]
    base_eval = None if base is None else HeldoutResult.from_dict(base)
    return train(cfg, spec.out, resume=checkpoint is not None, progress=spec.progress, base_eval=base_eval)


def evaluate(spec: PasskSpec) -> dict[str, Any]:
    """Evaluate one finished run as `rlvr eval` does (studies/passk_eval.py); return the report."""
    saved, cfg = read_config(spec.run_dir), held_out_config(spec.run_dir)
    if spec.threads:
        torch.set_num_threads(spec.threads)
    base = str(saved["model"]["name"])
    return evaluate_passk(
        base if spec.base_only else str(final_dir(spec.run_dir)),
        base=None if spec.base_only else base,
        task=cfg.task,
        n=spec.n,
        ks=list(spec.ks),
        num_queries=spec.num_queries,
        temperature=spec.temperature,
        seed=spec.seed,
        out=Path(spec.out),
        progress=spec.progress,
        max_new_tokens=cfg.rollout.max_new_tokens,
        prompt_format=PromptFormat.of(cfg.task),
        rollout=cfg.rollout,
        support_k=spec.support_k,
        base_report=None if spec.base_report is None else Path(spec.base_report),
    )


def held_out_config(run_dir: str | Path) -> RunConfig:
    """What decides a run's held-out evaluation: the defaults with the run's task and its own
    eval_fields (for arith: chain length, values, sampling length), as `rlvr eval --task --set` sets them."""
    saved = read_config(run_dir)
    data: dict[str, dict[str, Any]] = {"task": {"name": saved["task"]["name"]}}
    for section, key in (name.split(".", 1) for name in eval_fields(saved["task"]["name"])):
        data.setdefault(section, {})[key] = saved[section][key]
    return config_from_dict(data)


JOBS: dict[str, tuple[type, Callable[[Any], dict[str, Any]]]] = {
    RunSpec.kind: (RunSpec, run),
    PasskSpec.kind: (PasskSpec, evaluate),
    SupervisedSpec.kind: (SupervisedSpec, run_supervised),
}
"""Each kind of job a child runs: its spec type and the function that runs it."""


def to_json(job: Job) -> str:
    return json.dumps({"kind": job.kind, **dataclasses.asdict(job)})


def from_json(text: str) -> Job:
    """The spec `to_json` wrote (JSON lists read back as the tuples they were: specs hold no lists)."""
    data = json.loads(text)
    kind = data.pop("kind", None)
    if kind not in JOBS:
        raise UserError(f"a runner job of unknown kind {kind!r}; known: {', '.join(JOBS)}")
    return JOBS[kind][0](**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})


def child_command(job: Job) -> list[str]:
    """The child process that runs `job`: this module's entry point with the job's JSON."""
    return [sys.executable, "-m", "rlvr.studies.runner", to_json(job)]


def _child_env(job: Job, threads: int | None) -> dict[str, str]:
    """The parent's environment, with OMP_NUM_THREADS set before torch loads when threads are fixed."""
    threads = job.threads or threads
    return {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}


@dataclass(frozen=True)
class Batch:
    """What `run_many` did: how many jobs it ran, and those that failed (in the order given)."""

    made: int
    failed: list[Job]


def run_many(
    jobs_to_run: Sequence[Job], *, jobs: int | None = None, progress: bool = True, desc: str = "runs"
) -> Batch:
    """Run every job not finished yet, `jobs` side by side (default one per core), each in a child
    process with one torch thread and its output in its own log (`log_path`), with a progress bar."""
    jobs = jobs or max(1, os.cpu_count() or 1)
    todo = [job for job in jobs_to_run if not job.finished()]
    bar = tqdm(
        total=len(jobs_to_run), initial=len(jobs_to_run) - len(todo), desc=desc, unit="run", disable=not progress
    )
    codes: dict[int, int] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_run_child, job): index for index, job in enumerate(todo)}
        for future in as_completed(futures):
            codes[futures[future]] = future.result()
            bar.update(1)
    bar.close()
    return Batch(len(todo), [job for index, job in enumerate(todo) if codes[index] != 0])


def _run_child(job: Job) -> int:
    log = job.log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        done = subprocess.run(
            child_command(job), stdout=out, stderr=subprocess.STDOUT, env=_child_env(job, 1), check=False
        )
    return done.returncode


def start(job: Job, log: str | Path) -> subprocess.Popen:
    """Start `job` in a detached child and return at once. The child leads a new session (its own
    process group), so killing the group also ends what it spawned (verifier sandboxes)."""
    with open(log, "w") as out:
        return subprocess.Popen(
            child_command(job),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_child_env(job, None),
            start_new_session=True,
        )


def main(argv: list[str] | None = None) -> int:
    """A child's entry point: run the job whose JSON (or a file holding it) is the one argument.
    A user's mistake prints one line and exits 2, as the CLI does."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m rlvr.studies.runner SPEC (a job's JSON, or a file holding it)", file=sys.stderr)
        return 2
    hf_logging.disable_progress_bar()  # the log shows rlvr's own progress, not one bar per save and load
    text = argv[0] if argv[0].lstrip().startswith("{") else Path(argv[0]).read_text()
    try:
        job = from_json(text)
        print(f"rlvr runner: {job.kind} -> {job.out}", flush=True)
        JOBS[job.kind][1](job)
    except UserError as err:
        print(f"rlvr: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rlvr: interrupted; a run with a checkpoint resumes when it is started again", file=sys.stderr)
        return 130
    finally:
        close_verifiers()  # worker pools and the coq session end with the child
    return 0


if __name__ == "__main__":
    faulthandler.enable()  # a fatal signal (an abort at exit, say) prints every thread's stack to the log
    sys.exit(main())
