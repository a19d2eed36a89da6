"""`rlvr train --check`: what a run's settings make certain, found before its first step.

Config validation (config/checks.py) refuses a setting that cannot run. The linter reads what the
config alone does not hold: the task's queries and worked solutions, the model's tokenizer, the
shipped atlas's measurements and this machine's memory. Each finding is an error (the run cannot
split its batch or fit in memory: `rlvr train` refuses to start, exit code 2) or a warning (it
runs, and likely badly), or a line that says what was checked and passed:

- ``batch``: train.batch_queries splits over the processes, and each process's completions over
  optim.micro_batch_size (the accumulation steps, never 0);
- ``queries``: train.batch_queries not above the task's training queries, else a warning: one step
  then samples some queries twice, as separate groups;
- ``max_new_tokens``: not below the longest worked solution of the task's training queries
  (tokens), else a warning: those right chains cannot be written (an answer-only reward may still
  pay a shorter completion); a task without worked solutions is not checked;
- ``lr``: above the largest learning rate the shipped atlas measured as stable on the default
  model and task (held-out pass@1 not below the base's, every seed): a warning;
- ``memory``: the estimate of `rlvr memory` for this run against this machine's free memory
  (the GPU's with a CUDA device, else RAM): an error when it does not fit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rlvr.config import RunConfig
from rlvr.errors import UserError

ATLAS = Path(__file__).resolve().parents[1] / "lab" / "atlas" / "atlas.json"
"""The shipped atlas (read as data; the lab's code is not imported)."""


@dataclass(frozen=True)
class Finding:
    level: str
    """error, warning or ok."""
    check: str
    message: str

    def line(self) -> str:
        return f"  {self.level:8s}{self.check:15s}{self.message}"


def lint(cfg: RunConfig, *, world_size: int = 1, free_bytes: float | None = None, strict: bool = True) -> list[Finding]:
    """Every finding for a run of `cfg` on `world_size` processes; `free_bytes` overrides the
    machine's free memory (tests). A task or model that does not load is a UserError with `strict`
    (`rlvr train --check`); without it (before a run) those checks are left to the run, which
    reports the same problem in its own words."""
    try:
        queries, tokenizer = task_and_tokenizer(cfg)
    except (UserError, ValueError, OSError) as err:
        if strict:
            raise UserError(str(err)) from None
        return [_batch(cfg, world_size), _lr(cfg)]
    return [
        _batch(cfg, world_size),
        _queries(cfg, queries),
        _lengths(cfg, queries, tokenizer),
        _lr(cfg),
        _memory(cfg, queries, tokenizer, free_bytes, world_size),
    ]


def task_and_tokenizer(cfg: RunConfig):
    """The run's training queries and its model's tokenizer (no weights loaded)."""
    from transformers import AutoTokenizer

    from rlvr.bases import resolve_model_path
    from rlvr.tasks.registry import get_task

    train_queries, _ = get_task(cfg.task.name).load(cfg.task)
    return train_queries, AutoTokenizer.from_pretrained(str(resolve_model_path(cfg.model.name)))


def _batch(cfg: RunConfig, world_size: int) -> Finding:
    b, g, mb = cfg.train.batch_queries, cfg.rollout.group_size, cfg.optim.micro_batch_size
    if b % world_size:
        return Finding("error", "batch", f"train.batch_queries={b} does not split over {world_size} processes; "
                       f"set it to a multiple of {world_size}")  # fmt: skip
    per = b // world_size * g
    if mb and mb < per and per % mb:
        return Finding("error", "batch", f"optim.micro_batch_size={mb} does not divide a process's {per} completions "
                       f"({b} queries / {world_size} processes x G {g}); pick a divisor of {per}")  # fmt: skip
    steps = per // mb if mb and mb < per else 1
    return Finding("ok", "batch", f"{b} queries x G {g} = {b * g} completions over {world_size} process(es): "
                   f"{per} each, {steps} micro-batch(es) of {min(mb or per, per)}")  # fmt: skip


def _queries(cfg: RunConfig, queries) -> Finding:
    b, n = cfg.train.batch_queries, len(queries)
    if b > n:
        return Finding("warning", "queries", f"train.batch_queries={b} is more than the {n} training queries of "
                       f"{cfg.task.name}: each step samples some of them twice, as separate groups "
                       f"(engine/context.py); set it to at most {n}")  # fmt: skip
    return Finding("ok", "queries", f"{b} of the {n} training queries of {cfg.task.name} per step")


def _lengths(cfg: RunConfig, queries, tokenizer) -> Finding:
    from rlvr.tasks.registry import get_task

    solution = get_task(cfg.task.name).reference_solution
    if solution is None:
        return Finding("ok", "max_new_tokens", f"task {cfg.task.name} has no worked solutions to measure: not checked")
    lengths = [len(tokenizer(solution(q), add_special_tokens=False)["input_ids"]) for q in queries]
    longest, limit = max(lengths), cfg.rollout.max_new_tokens
    cut = sum(n > limit for n in lengths)
    if cut:  # a warning: an answer-only reward can still pay a short completion that skips the chain
        return Finding("warning", "max_new_tokens", f"rollout.max_new_tokens={limit} cuts the worked solution of {cut} "
                       f"of {len(lengths)} training queries (the longest is {longest} tokens): their right chains "
                       f"cannot be written; set it to at least {longest}")  # fmt: skip
    return Finding("ok", "max_new_tokens", f"{limit} >= the longest worked solution, {longest} tokens "
                   f"({len(lengths)} training queries of {cfg.task.name})")  # fmt: skip


def _lr_evals(atlas: dict) -> dict[float, list[dict]]:
    """The atlas's lr values -> the held-out evaluations (run cards' `evals`) of their seeds."""
    out = {}
    for value in (atlas.get("knobs") or {}).get("lr", []):
        evals = [atlas["runs"][run]["evals"] for run in value["runs"] if run in atlas["runs"]]
        out[float(value["resolved"]["optim"]["lr"])] = [e for e in evals if e["pass@1"]]
    return out


def stable_lrs(atlas: dict) -> dict[float, tuple[bool, float, float]]:
    """The atlas's lr values -> (stable, base pass@1, final pass@1), means over the seeds; stable when
    no seed ended below its base's held-out pass@1."""
    out = {}
    for lr, evals in _lr_evals(atlas).items():
        pairs = [(e["pass@1"][0], e["pass@1"][-1]) for e in evals]
        if pairs:
            stable = all(final >= base for base, final in pairs)
            base, final = (sum(p[i] for p in pairs) / len(pairs) for i in (0, 1))
            out[lr] = (stable, base, final)
    return out


GREEDY_DROP = 0.02
"""How far a learning rate may take greedy accuracy down (mean over seeds) and still be a candidate
for the default: 2 points, the stability bar the controls study sets for its gold arm."""


def best_lr(atlas: dict) -> float | None:
    """The rule the default `optim.lr` was chosen by: among the atlas's lr values whose final greedy
    accuracy is at most GREEDY_DROP below their base's (means over seeds), the one with the highest final
    held-out pass@1; None when no value qualifies."""
    scores = {}
    for lr, evals in _lr_evals(atlas).items():
        evals = [e for e in evals if e["greedy"]]
        if evals:
            drop = sum(e["greedy"][0] - e["greedy"][-1] for e in evals) / len(evals)
            if drop <= GREEDY_DROP + 1e-9:
                scores[lr] = sum(e["pass@1"][-1] for e in evals) / len(evals)
    return max(scores, key=scores.__getitem__) if scores else None


def _lr(cfg: RunConfig) -> Finding:
    try:
        atlas = json.loads(ATLAS.read_text())
    except (OSError, ValueError):
        return Finding("ok", "lr", "no shipped atlas to compare with: not checked")
    default = next(v for v in atlas["knobs"]["lr"] if not v["overrides"])["resolved"]
    where = f"{default['model']['name']} on {default['task']['name']}"
    lrs = stable_lrs(atlas)
    stable = [lr for lr, (ok, _, _) in lrs.items() if ok]
    if not stable:
        return Finding("ok", "lr", "the atlas measured no stable lr: not checked")
    if cfg.model.lora_rank:
        return Finding("ok", "lr", "LoRA: the atlas measured full fine-tuning's learning rates only: not checked")
    top, lr = max(stable), cfg.optim.lr
    same = (cfg.model.name, cfg.task.name) == (default["model"]["name"], default["task"]["name"])
    if lr <= top:
        return Finding("ok", "lr", f"optim.lr={lr:g} within the atlas's stable range (up to {top:g}, {where})")
    unstable = sorted((x, lrs[x]) for x in lrs if x > top and not lrs[x][0])
    seen = (
        f"; {unstable[0][0]:g} took held-out pass@1 from {unstable[0][1][1]:.2f} to {unstable[0][1][2]:.2f}"
        if unstable
        else ""
    )
    note = "" if same else f" (measured on {where}, not this model and task)"
    return Finding("warning", "lr", f"optim.lr={lr:g} is above {top:g}, the largest lr the shipped atlas measured as "
                   f"stable{note}{seen}")  # fmt: skip


def _free_memory() -> tuple[float | None, str]:
    import torch

    if torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info()
        return float(free), "free on the GPU"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024, "available RAM"
    except OSError:
        pass
    return None, "unknown"


def longest_prompt(cfg: RunConfig, queries, tokenizer) -> int:
    """P of the memory estimate: the longest of the queries' prompts in tokens, as the run encodes them."""
    from rlvr.rollout.prompts import PromptFormat, prompt_token_ids

    fmt = PromptFormat.of(cfg.task)
    try:
        return max(len(prompt_token_ids(tokenizer, q.prompt, fmt)) for q in queries)
    except UserError:  # a prompt format this model cannot render: the run says so in its own words
        return max(len(tokenizer(q.prompt)["input_ids"]) for q in queries)


def _memory(cfg: RunConfig, queries, tokenizer, free_bytes: float | None, processes: int) -> Finding:
    from rlvr.bases import resolve_model_path
    from rlvr.diagnostics.memory_estimate import estimate, format_bytes
    from rlvr.diagnostics.memory_model import load_model_spec
    from rlvr.diagnostics.memory_setup import setup_for_run

    if cfg.algo.algorithm == "dpo":
        return Finding("ok", "memory", "not estimated for dpo (its pairs are formed each step): `rlvr memory --help`")
    prompt_len = longest_prompt(cfg, queries, tokenizer)
    try:
        spec = load_model_spec(str(resolve_model_path(cfg.model.name)))
        result = estimate(spec, setup_for_run(cfg, prompt_len=prompt_len, processes=processes))
    except UserError as err:  # a model family or setting the estimator does not price
        return Finding("ok", "memory", f"not estimated: {err}")
    need = result.components["peak_total"].bytes
    free, what = (free_bytes, "given") if free_bytes is not None else _free_memory()
    if free is None:
        return Finding("ok", "memory", f"estimated peak {format_bytes(need)}; this machine's free memory is unknown")
    level = "error" if need > free else "ok"
    advice = "; `rlvr memory` prices LoRA, checkpointing and smaller micro-batches" if need > free else ""
    return Finding(level, "memory", f"estimated peak {format_bytes(need)} (`rlvr memory`, prompts of {prompt_len} "
                   f"tokens) against {format_bytes(free)} {what}{advice}")  # fmt: skip
