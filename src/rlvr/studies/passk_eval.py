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
from typing import Any

from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.bases import resolve_model_path
from rlvr.config import RolloutConfig, TaskConfig
from rlvr.errors import UserError
from rlvr.eval.cot import ReasoningChecker
from rlvr.eval.curves import (
    CURVES,
    Bootstrap,
    QueryCounts,
    crossing_k,
    curves,
    intervals,
    paired_difference,
    query_pass_at_k,
    support_counts,
    too_few_scorable,
)
from rlvr.eval.plots import plot_passk
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.rollout.prompts import PromptFormat
from rlvr.rollout.tools import ToolUse
from rlvr.tasks.registry import get_task, load_heldout
from rlvr.types import Query, Verdict
from rlvr.verifiers import RewardFunction
from rlvr.verifiers.reward import CORRECTNESS, ScoredCompletion

SAMPLES = "samples.jsonl"
"""Every sample of every model evaluated, one JSON object a line (`sample_record`), beside eval.json."""
LM_EVAL_SAMPLES = "samples_lm_eval.jsonl"
"""The same samples grouped per model and query as lm-eval-harness logs them (`lm_eval_rows`)."""


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
    records: list[dict[str, Any]] | None = None,
    draw_seed: int | None = None,
) -> tuple[list[QueryCounts], int]:
    """Per-query counts from n samples each (every query, in order: one with no scorable sample has
    n = 0), and how many samples the verifier could not score (those are kept out of n, as in the
    trainer's held-out pass@1); prompts laid out by `prompt_format` (rollout/prompts.py; auto by
    default); tool rollouts with `tools`. With `records`, one record per sample is appended to it
    (`sample_record`). `draw_seed`: common random numbers (rollout/draws.py), so that two models
    evaluated with one seed get the same draws per query and sample."""
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
            draw_seed=draw_seed,
        )
        scored = reward_fn.score_batch([(batch.query_of(i), t) for i, t in enumerate(batch.texts)])
        for q, query in enumerate(part):
            group = range(q * n, (q + 1) * n)
            samples = [sample_record(query, i - q * n, batch.texts[i], scored[i], checker) for i in group]
            for i, sample in zip(group, samples):
                sample["finish_reason"] = batch.finish_reasons[i]
            counts.append(query_counts(query, samples))
            unscorable += n - counts[-1].n
            if records is not None:
                records.extend(samples)
        bar.update(len(part))
    bar.close()
    return counts, unscorable


def sample_record(
    query: Query, index: int, text: str, scored: ScoredCompletion, checker: ReasoningChecker | None
) -> dict[str, Any]:
    """One line of samples.jsonl: the query id, the sample's index, its completion and the
    correctness verdict under the field names `rlvr verify` writes (verifiers/rows.py), whether it
    counts (`scorable`: the verifier could judge it), and `reasoning_verdict` ("pass" or "fail"
    from the task's reasoning checker; None without one)."""
    result = scored.results[CORRECTNESS]
    reasoning = None if checker is None else ("pass" if checker(query, text) else "fail")
    return {
        "query_id": query.id,
        "sample": index,
        "completion": text,
        **{key: value for key, value in result.to_dict().items() if key not in ("tests", "elapsed_s")},
        "scorable": scored.reward is not None,
        "reasoning_verdict": reasoning,
    }


def query_counts(query: Query, samples: list[dict[str, Any]]) -> QueryCounts:
    """A query's counts from its sample records: n scorable, right answers, right answers whose
    reasoning is right too (None without a reasoning checker)."""
    scorable = [s for s in samples if s["scorable"]]
    correct = [s for s in scorable if s["verdict"] == Verdict.PASS.value]
    no_checker = any(s["reasoning_verdict"] is None for s in samples)
    cot = None if no_checker else sum(s["reasoning_verdict"] == "pass" for s in correct)
    return QueryCounts(n=len(scorable), correct=len(correct), cot_correct=cot, query_id=query.id)


def first_hits(samples: list[dict[str, Any]]) -> list[int | None]:
    """A query's first right answer and first right answer with right reasoning among its sample
    records: [sample index or None, sample index or None] (the second None without a checker)."""
    hits: list[int | None] = [None, None]
    for s in sorted(samples, key=lambda s: s["sample"]):
        if s["scorable"] and s["verdict"] == Verdict.PASS.value:
            hits[0] = s["sample"] if hits[0] is None else hits[0]
            if s["reasoning_verdict"] == "pass" and hits[1] is None:
                hits[1] = s["sample"]
    return hits


def continue_support(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    queries: list[Query],
    reward_fn: RewardFunction,
    checker: ReasoningChecker | None,
    hits: list[list[int | None]],
    *,
    start: int,
    until: int,
    round_size: int = 256,
    chunk_completions: int = 512,
    **sampling: Any,
) -> list[int]:
    """Support at large k without drawing k samples of every query: from sample `start` on, in
    rounds of `round_size`, draw on for each query whose first right answer (or, with a checker,
    first right chain) is not found yet, until it is or `until` samples are drawn. The draws are
    the same paired draws (samples start, start + 1, ... of `draw_seed`) a single draw of `until`
    samples would make, so whether a query is solved within k <= until is what that draw says.
    `hits` (per query, as `first_hits` gives) are updated in place; returns samples drawn per query."""
    drawn = [start] * len(queries)
    need = 1 if checker is None else 2
    for first in range(start, until, round_size):
        size = min(round_size, until - first)
        open_ = [i for i, hit in enumerate(hits) if sum(h is not None for h in hit) < need]
        if not open_:
            break
        chunk = max(1, chunk_completions // size)
        for at in range(0, len(open_), chunk):
            part = open_[at : at + chunk]
            batch = sample_completions(model, tokenizer, [queries[i] for i in part], group_size=size,
                                       first_sample=first, **sampling)  # fmt: skip
            scored = reward_fn.score_batch([(batch.query_of(j), t) for j, t in enumerate(batch.texts)])
            for q, i in enumerate(part):
                rows = range(q * size, (q + 1) * size)
                samples = [
                    sample_record(queries[i], first + j - q * size, batch.texts[j], scored[j], checker) for j in rows
                ]
                found = first_hits(samples)
                hits[i] = [old if old is not None else new for old, new in zip(hits[i], found)]
                drawn[i] = first + size
    return drawn


def _support(model, tokenizer, queries: list[Query], checker, records: list[dict[str, Any]], *, start: int,
             until: int, **sampling: Any) -> dict[str, Any]:  # fmt: skip
    """A model's "support" entry: the first successes among its first `start` samples (`records`),
    drawn on to `until` (`continue_support`)."""
    by_query: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_query.setdefault(record["query_id"], []).append(record)
    hits = [first_hits(by_query.get(q.id, [])) for q in queries]
    reward_fn = RewardFunction({"correctness": 1.0})
    drawn = continue_support(model, tokenizer, queries, reward_fn, checker, hits, start=start, until=until, **sampling)
    return {"k": until, "first_correct": [h[0] for h in hits], "first_cot": [h[1] for h in hits], "drawn": drawn}


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
    support_k: int | None = None,
) -> tuple[dict, list[QueryCounts], list[dict[str, Any]]]:
    """The model's eval.json entry, its per-query counts and its sample records (labelled `label`).
    With `support_k`, the entry's "support" also says per query where the first right answer and
    the first right chain fell within `support_k` paired draws (`continue_support`; the samples
    past n are counted, not recorded)."""
    model, tokenizer = load_policy(resolve_model_path(name))
    started = time.perf_counter()
    tools = ToolUse.of(rollout)  # rollout.tools: each model's samples are tool rollouts
    records: list[dict[str, Any]] = []
    try:
        # draw_seed: both models draw the same uniforms for each query and sample
        drawing = {"temperature": temperature, "max_new_tokens": max_new_tokens, "prompt_format": prompt_format,
                   "tools": tools, "draw_seed": seed}  # fmt: skip
        counts, unscorable = count_samples(model, tokenizer, queries, RewardFunction({"correctness": 1.0}), checker,
                                           n=n, progress=progress, label=label, records=records, **drawing)  # fmt: skip
        if support_k:
            support = _support(model, tokenizer, queries, checker, records, start=n, until=support_k, **drawing)
    finally:
        if tools is not None:
            tools.close()
    entry = {
        "path": name,
        **curves(counts, ks),
        **intervals(counts, ks, Bootstrap(seed=seed)),
        "unscorable": unscorable,
        "too_few_scorable": too_few_scorable(counts, ks),
        "wall_s": round(time.perf_counter() - started, 1),
        "per_query": [[c.n, c.correct, c.cot_correct] for c in counts],
        "query_ids": [c.query_id for c in counts],
    }
    if support_k:
        entry["support"] = support
    return entry, counts, [{"model": label, **record} for record in records]


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
    support_k: int | None = None,
    base_report: Path | None = None,
) -> dict:
    """Evaluate `model` (and `base`) on `num_queries` held-out queries of the registered task
    `task.name`, set up as `task` (the trainer's held-out split for those settings, with
    task.num_eval = num_queries), prompts laid out by `prompt_format`. CoT-pass@k needs the task's
    reasoning checker; without one it is reported unavailable (null), never 0. Writes out/eval.json,
    out/samples.jsonl (every sample), out/samples_lm_eval.jsonl (the lm-eval-harness export) and
    out/passk.png, and returns the report (the eval.json object).

    `support_k`: also where each model first succeeds within that many paired draws per query, and,
    with a base, each query's support class at that k ("support": preserved, expanded, shrunk,
    never). `base_report`: the eval.json of the base evaluated alone with these same settings and
    seed, whose entry is the base's here instead of sampling it again (its samples stay in its folder)."""
    registered = get_task(task.name)
    queries = load_heldout(dataclasses.replace(task, num_eval=num_queries))[:num_queries]
    rollout = rollout or RolloutConfig()
    named = {"model": model, **({"base": base} if base and base_report is None else {})}
    sampling = {"n": n, "ks": ks, "temperature": temperature, "seed": seed, "progress": progress,
                "max_new_tokens": max_new_tokens, "prompt_format": prompt_format, "rollout": rollout,
                "support_k": support_k}  # fmt: skip
    evaluated = {
        label: _evaluate_model(path, queries, registered.reasoning_checker, label=label, **sampling)
        for label, path in named.items()
    }
    models = {label: entry for label, (entry, _, _) in evaluated.items()}
    report = {
        "task": task.name, "n": n, "k": ks, "num_queries": len(queries), "temperature": temperature, "seed": seed,
        "max_new_tokens": max_new_tokens, "tools": rollout.tools,
        "prompt_format": {"style": prompt_format.style, "system_prompt": prompt_format.system_prompt},
        "spec": {**{name: getattr(task, name) for name in registered.heldout_fields}, "data_seed": task.data_seed},
        "models": models, "support_k": support_k, "bootstrap": Bootstrap(seed=seed).to_dict(), "samples": SAMPLES,
    }  # fmt: skip
    if base:
        _against_base(report, evaluated, base, base_report, [q.id for q in queries])
    report["crossing"] = _crossings(ks, models)
    records = [record for _, _, part in evaluated.values() for record in part]
    _write(out, report, records, queries)
    return report


def _against_base(report: dict, evaluated: dict, base: str, base_report: Path | None, query_ids: list[str]) -> None:
    """The report's base entry (evaluated here, or reused from `base_report`), the paired
    difference and, with support_k, each query's support class."""
    if base_report is not None:
        entry = _reused_base(base_report, report, base, query_ids)
        report["models"]["base"] = entry
        evaluated["base"] = (entry, _counts_of(entry), [])
        report["base_report"] = str(base_report)
    models, k = report["models"], report["support_k"]
    if k:
        report["support"] = {
            curve: support_counts(models["base"]["support"][key], models["model"]["support"][key], k)
            for curve, key in (("pass@k", "first_correct"), ("cot_pass@k", "first_cot"))
        }
    bootstrap = Bootstrap(seed=report["seed"])
    report["difference"] = paired_difference(evaluated["model"][1], evaluated["base"][1], report["k"], bootstrap)


REUSED = ("task", "n", "k", "num_queries", "temperature", "seed", "max_new_tokens", "tools", "prompt_format", "spec")
"""What a base evaluated alone must share with an evaluation that reuses it (`base_report`), and the
support k too where the evaluation reuses it for support (its first n draws are the same either way)."""


def _reused_base(path: Path, report: dict, base: str, query_ids: list[str]) -> dict:
    """The base's entry from its own evaluation at `path`, refused unless that evaluation is this
    one's for the base: same model, settings, held-out queries and sampling seed."""
    try:
        alone = json.loads(Path(path).read_text())
        entry = alone["models"]["model"]
    except (OSError, ValueError, KeyError) as err:
        raise UserError(f"base report {path}: not an eval.json of a model evaluated alone ({err})") from None
    differ = [key for key in REUSED if alone.get(key) != report[key]]
    if report["support_k"] and alone.get("support_k") != report["support_k"]:
        differ.append("support_k")
    if entry.get("path") != base:
        differ.insert(0, f"model ({entry.get('path')} is not {base})")
    if entry.get("query_ids") != query_ids:
        differ.append("query_ids")
    if differ:
        raise UserError(f"base report {path} was made with other settings: {', '.join(differ)}")
    return entry


def _counts_of(entry: dict) -> list[QueryCounts]:
    return [QueryCounts(n, c, cot, qid) for (n, c, cot), qid in zip(entry["per_query"], entry["query_ids"])]


def _write(out: Path, report: dict, records: list[dict[str, Any]], queries: list[Query]) -> None:
    """eval.json, samples.jsonl, samples_lm_eval.jsonl and passk.png into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=1) + "\n")
    _write_jsonl(out / SAMPLES, records)
    _write_jsonl(out / LM_EVAL_SAMPLES, lm_eval_rows(report, records, queries))
    plot_passk(report, out / "passk.png")


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w") as file:
        file.writelines(json.dumps(row) + "\n" for row in rows)


def lm_eval_rows(report: dict, records: list[dict[str, Any]], queries: list[Query]) -> list[dict[str, Any]]:
    """One lm-eval-harness style sample line (`--log_samples`) per model and query: doc_id, doc,
    target, resps (every completion), filtered_resps (the scorable ones, in order), one field per
    metric ("pass@1", "cot_pass@4", ...: the query's estimate, null where it has fewer than k
    scorable samples or no reasoning checker), and "model" (docs/evaluation.md has the mapping)."""
    by_query: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        by_query.setdefault((record["model"], record["query_id"]), []).append(record)
    rows = []
    for label in report["models"]:
        for doc_id, query in enumerate(queries):
            samples = by_query.get((label, query.id), [])
            counts = query_counts(query, samples)
            metrics = {
                f"{curve.replace('@k', '')}@{k}": query_pass_at_k([counts], k, curve)[0]
                if curve == "pass@k" or counts.cot_correct is not None
                else None
                for curve in CURVES
                for k in report["k"]
            }
            rows.append({
                "model": label,
                "doc_id": doc_id,
                "doc": {"query_id": query.id, "prompt": query.prompt, "verifier": query.verifier},
                "target": str(query.verifier.get("answer", json.dumps(query.verifier, sort_keys=True))),
                "resps": [[s["completion"] for s in samples]],
                "filtered_resps": [s["completion"] for s in samples if s["scorable"]],
                "verdicts": [s["verdict"] for s in samples],
                **metrics,
            })  # fmt: skip
    return rows


def _crossings(ks: list[int], models: dict[str, dict]) -> dict[str, int | None]:
    """Where the base's pass@k and CoT-pass@k curves catch up with the model's (None without a base,
    or where a curve is unavailable)."""
    crossing: dict[str, int | None] = {"pass@k": None, "cot_pass@k": None}
    if "base" in models:
        for key in crossing:
            if models["base"][key] is not None:
                crossing[key] = crossing_k(ks, models["base"][key], models["model"][key])
    return crossing
