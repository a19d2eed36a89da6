"""`rlvr eval`: sample n completions per held-out query from a model (and its base), count right
answers and right reasoning, and turn the counts into pass@k / CoT-pass@k curves, JSON and a PNG.

It lives beside the trainer's held-out evaluation, not in `eval/`, because it samples (rollout/)
and `eval/` stays pure math (DESIGN.md, "Imports flow one way").
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.bases import resolve_model_path
from rlvr.config import RolloutConfig, TaskConfig
from rlvr.eval.cot import ReasoningChecker
from rlvr.eval.curves import QueryCounts, crossing_k, curves
from rlvr.eval.plots import plot_passk
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.prompts import PromptFormat
from rlvr.rollout.tools import ToolUse
from rlvr.tasks.registry import get_task, load_heldout
from rlvr.types import Query
from rlvr.verifiers import RewardFunction


def count_samples(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    reward_fn: RewardFunction,
    checker: ReasoningChecker | None,
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    chunk_completions: int = 512,
    progress: bool = False,
    label: str = "",
    prompt_format: PromptFormat = PromptFormat(),
    tools: ToolUse | None = None,
) -> tuple[list[QueryCounts], int]:
    """Per-query counts from n samples each, and how many samples the verifier could not score
    (those are kept out of n, as in the trainer's held-out pass@1); prompts laid out by
    `prompt_format` (rollout/prompts.py; auto by default); tool rollouts with `tools`."""
    chunk = max(1, chunk_completions // n)
    counts, unscorable = [], 0
    bar = tqdm(total=len(queries), desc=f"sampling {label}", unit="query", disable=not progress)
    for start in range(0, len(queries), chunk):
        part = queries[start : start + chunk]
        batch = sample_completions(
            model,
            tokenizer,
            part,
            group_size=n,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            prompt_format=prompt_format,
            tools=tools,
        )
        scored = reward_fn.score_batch([(batch.query_of(i), t) for i, t in enumerate(batch.texts)])
        for q, query in enumerate(part):
            group = [
                (s, t)
                for s, t in zip(scored[q * n : (q + 1) * n], batch.texts[q * n : (q + 1) * n])
                if s.reward is not None
            ]
            unscorable += n - len(group)
            if not group:
                continue
            correct = [t for s, t in group if s.correct]
            cot = None if checker is None else sum(checker(query, t) for t in correct)
            counts.append(QueryCounts(n=len(group), correct=len(correct), cot_correct=cot))
        bar.update(len(part))
    bar.close()
    return counts, unscorable


def _evaluate_model(
    name: str,
    queries: list[Query],
    checker: ReasoningChecker | None,
    *,
    n: int,
    ks: list[int],
    temperature: float,
    seed: int,
    progress: bool,
    label: str,
    max_new_tokens: int,
    prompt_format: PromptFormat,
    rollout: RolloutConfig,
) -> dict:
    model, tokenizer = load_policy(resolve_model_path(name))
    torch.manual_seed(seed)  # both models start sampling from the same RNG state
    started = time.perf_counter()
    tools = ToolUse.of(rollout)  # rollout.tools: each model's samples are tool rollouts
    try:
        counts, unscorable = count_samples(
            model,
            tokenizer,
            queries,
            RewardFunction({"correctness": 1.0}),
            checker,
            n=n,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            progress=progress,
            label=label,
            prompt_format=prompt_format,
            tools=tools,
        )
    finally:
        if tools is not None:
            tools.close()
    return {
        "path": name,
        **curves(counts, ks),
        "unscorable": unscorable,
        "wall_s": round(time.perf_counter() - started, 1),
        "per_query": [[c.n, c.correct, c.cot_correct] for c in counts],
    }


def evaluate_passk(
    model: str,
    *,
    base: str | None,
    task: TaskConfig,
    n: int,
    ks: list[int],
    num_queries: int,
    temperature: float,
    seed: int,
    out: Path,
    progress: bool = True,
    max_new_tokens: int = RolloutConfig.max_new_tokens,
    prompt_format: PromptFormat = PromptFormat(),
    rollout: RolloutConfig | None = None,
) -> dict:
    """Evaluate `model` (and `base`) on `num_queries` held-out queries of the registered task
    `task.name`, set up as `task` (the trainer's held-out split for those settings, with
    task.num_eval = num_queries), prompts laid out by `prompt_format`. CoT-pass@k needs the task's
    reasoning checker; without one it is reported unavailable (null), never 0. Writes out/eval.json
    and out/passk.png and returns the report (the eval.json object)."""
    registered = get_task(task.name)
    queries = load_heldout(dataclasses.replace(task, num_eval=num_queries))[:num_queries]
    rollout = rollout or RolloutConfig()
    named = {"model": model, **({"base": base} if base else {})}
    sampling = {"n": n, "ks": ks, "temperature": temperature, "seed": seed, "progress": progress,
                "max_new_tokens": max_new_tokens, "prompt_format": prompt_format, "rollout": rollout}  # fmt: skip
    models = {
        label: _evaluate_model(path, queries, registered.reasoning_checker, label=label, **sampling)
        for label, path in named.items()
    }
    report = {
        "task": task.name,
        "n": n,
        "k": ks,
        "num_queries": len(queries),
        "temperature": temperature,
        "seed": seed,
        "max_new_tokens": max_new_tokens,
        "tools": rollout.tools,
        "prompt_format": {"style": prompt_format.style, "system_prompt": prompt_format.system_prompt},
        "spec": {**{name: getattr(task, name) for name in registered.heldout_fields}, "data_seed": task.data_seed},
        "models": models,
        "crossing": _crossings(ks, models),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=1) + "\n")
    plot_passk(report, out / "passk.png")
    return report


def format_eval_table(report: dict) -> str:
    """The printed table: one row per k, pass@k and CoT-pass@k in percent for each model."""

    def pct(values: list[float] | None, i: int) -> str:
        return "n/a" if values is None else f"{100 * values[i]:.1f}%"

    models = report["models"]
    header = "   k" + "".join(f"  {label + ' pass@k':>14}  {label + ' CoT-pass@k':>18}" for label in models)
    rows = [header]
    for i, k in enumerate(report["k"]):
        rows.append(
            f"{k:>4}" + "".join(f"  {pct(m['pass@k'], i):>14}  {pct(m['cot_pass@k'], i):>18}" for m in models.values())
        )
    if "base" in models:
        for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")):
            k = report["crossing"][key]
            if models["base"][key] is None:
                rows.append(f"{name}: unavailable for task '{report['task']}' (no reasoning checker)")
            elif k is None:
                rows.append(f"{name}: the curves do not cross (base never catches up from below at these k)")
            else:
                rows.append(f"{name}: base catches up with the trained model at k={k}")
    unscorable = {label: m["unscorable"] for label, m in models.items() if m["unscorable"]}
    if unscorable:
        rows.append(f"unscorable samples (kept out of n): {unscorable}")
    return "\n".join(rows)


def _crossings(ks: list[int], models: dict[str, dict]) -> dict[str, int | None]:
    """Where the base's pass@k and CoT-pass@k curves catch up with the model's (None without a base,
    or where a curve is unavailable)."""
    crossing: dict[str, int | None] = {"pass@k": None, "cot_pass@k": None}
    if "base" in models:
        for key in crossing:
            if models["base"][key] is not None:
                crossing[key] = crossing_k(ks, models["base"][key], models["model"][key])
    return crossing
