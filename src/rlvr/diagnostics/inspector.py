"""`rlvr inspect`: capture one update from a config or from a step of a saved run, write it as
capture.json (schema: docs/inspector.md) and capture.html, and replay it under other settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig, config_from_dict, load_config
from rlvr.diagnostics.capture import SCHEMA, capture_update, config_record
from rlvr.engine.build import RunParts, build_run, restore
from rlvr.engine.checkpoint import saved_step
from rlvr.engine.context import Rollouts
from rlvr.engine.flight import load_batch, recorded_batches
from rlvr.errors import UserError
from rlvr.models.lora import checkpoint_mismatch
from rlvr.rollout.tools import calls_run
from rlvr.rundir import (
    STATE_FILE,
    find_checkpoint,
    last_step,
    not_a_run,
    read_config,
    recorded_checkpoints,
    saved_models,
)

CAPTURE_FILE = "capture.json"


class InspectError(UserError):
    """A run, step or capture file that `rlvr inspect` cannot use."""


def inspect_config(cfg: RunConfig, out_dir: Path, *, step: int = 1) -> dict[str, Any]:
    """Capture loop step `step` (1-based, as metrics.jsonl counts) of a fresh run of `cfg`: the
    base model, the step's queries, the seed's random draws (no base evaluation runs first, so
    the samples are not those of `rlvr train` with the same seed)."""
    source = {"kind": "config", "run": None, "step": step, "policy": _policy(cfg, None)}
    return _capture(build_run(cfg), step, source, out_dir)


def inspect_run(run_dir: Path, step: int, overrides: list[str], out_dir: Path) -> dict[str, Any]:
    """Capture the update logged as `step` in run_dir/metrics.jsonl, from the run's config.

    The update starts from the policy after step − 1 steps: the base model for step 1; the run's
    checkpoint when it holds exactly that step (then the optimizer and RNG state are the run's too,
    and the capture repeats the real step); a model kept then (train.keep_every's steps/<N>/, or
    final/), weights only; otherwise the saved weights nearest that step, and `source.warning` says
    which (`overrides` may change model.lora_*, and then weights saved for another policy do not
    fit). A step after the one the run would take next is refused.
    """
    if problem := not_a_run(run_dir):
        raise InspectError(problem)
    if step < 1:
        raise InspectError(f"--step {step}: steps count from 1, as in metrics.jsonl")
    cfg = load_config(None, overrides, base=config_from_dict(read_config(run_dir)))
    checkpoint = find_checkpoint(run_dir)
    saved = None if checkpoint is None else saved_step(checkpoint)
    taken = max(last_step(run_dir), saved or 0)
    if step > taken + 1:
        took = f"took steps 1-{taken}" if taken else "has taken no step yet"
        raise InspectError(
            f"--step {step}: {run_dir} {took}; inspect a step from 1 to {taken + 1} "
            f"({taken + 1}: the update it would take next)"
        )
    mismatch = None if checkpoint is None else checkpoint_mismatch(checkpoint, cfg.model)
    source: dict[str, Any] = {"kind": "run", "run": str(run_dir), "step": step}
    if step == 1:
        parts = build_run(cfg)
        source["policy"] = _policy(cfg, None)
    elif saved == step - 1 and mismatch is None:
        parts = build_run(cfg, checkpoint)
        restore(parts.context, checkpoint)  # the run's optimizer and RNG state: the real step again
        source["policy"] = _policy(cfg, saved)
    elif (recorded := recorded_checkpoints(run_dir).get(step - 1)) and checkpoint_mismatch(recorded, cfg.model) is None:
        parts = build_run(cfg, recorded)
        restore(parts.context, recorded)  # the flight recorder's state before the step: the real step again
        source["policy"] = f"the flight recorder's checkpoint after step {step - 1} ({recorded.relative_to(run_dir)})"
    else:
        weights = _saved_weights(run_dir, cfg, None if mismatch else checkpoint)
        used = min(weights, key=lambda s: (abs(s - (step - 1)), -s))  # the nearest; a tie goes to the later
        parts = build_run(cfg, weights[used])
        source["policy"] = _kept_policy(cfg, run_dir, used, weights[used])
        if used != step - 1:
            source["warning"] = _not_kept(run_dir, step, weights, saved, mismatch) + (
                f"; step {step} is inspected from {source['policy']}"
            )
    recorded = _recorded_batch(run_dir, step, overrides, source)
    return _capture(parts, step, source, out_dir, recorded)


def _recorded_batch(run_dir: Path, step: int, overrides: list[str], source: dict[str, Any]) -> Rollouts | None:
    """The flight recorder's batch of `step` (engine/flight.py), when it holds one and the capture
    starts from the state the step started from with the run's own settings of what made the
    batch; else None (the step samples again). `source["batch"]` says which."""
    path = recorded_batches(run_dir).get(step)
    exact = "warning" not in source and all(o.split(".", 1)[0].strip() == "algo" for o in overrides)
    if path is None or not exact:
        source["batch"] = "sampled again from the state before the step"
        return None
    source["batch"] = f"the flight recorder's batch of step {step} ({path.relative_to(run_dir)}), not sampled again"
    return load_batch(path)["rollouts"]


def _saved_weights(run_dir: Path, cfg: RunConfig, checkpoint: Path | None) -> dict[int, Path | None]:
    """The weights a captured policy can start from, by the step they were saved after: the base
    (None) at 0, the run's whole models (rundir.saved_models) when the policy is not LoRA, and
    `checkpoint` (one that fits the policy: adapters under LoRA)."""
    weights: dict[int, Path | None] = {0: None}
    if not cfg.model.lora_rank:  # a kept model is merged: a LoRA policy cannot start from it
        weights |= saved_models(run_dir, saved_step)
    if checkpoint is not None:
        weights.setdefault(saved_step(checkpoint), checkpoint)
    return weights


def _kept_policy(cfg: RunConfig, run_dir: Path, used: int, path: Path | None) -> str:
    """The captured policy's weights when they are not the run's own state before the step."""
    if path is None:
        return _policy(cfg, None)
    where = "the checkpoint" if (path / STATE_FILE).is_file() else f"the model in {path.relative_to(run_dir)}/"
    return f"{where} after step {used} (weights only: fresh optimizer state and random draws)"


def _not_kept(
    run_dir: Path, step: int, weights: dict[int, Path | None], saved: int | None, mismatch: str | None
) -> str:
    """Why step − 1's weights are not at hand: a checkpoint that does not fit, or none kept."""
    if saved == step - 1 and mismatch:
        return f"{run_dir} has a checkpoint after step {saved}, but it {mismatch}"
    have = ", ".join(str(s) for s in weights if s)
    holds = f"{run_dir} holds weights after steps {have}" if have else f"{run_dir} holds no saved weights"
    usable = saved is not None and not mismatch
    repeat = f"; --step {saved + 1} repeats the run's own update from its checkpoint" if usable else ""
    return f"no model kept after step {step - 1} (train.keep_every=N keeps one every N steps; {holds}){repeat}"


def _policy(cfg: RunConfig, saved_step: int | None) -> str:
    """Where the captured policy's weights come from: the base model (None) or the checkpoint after
    `saved_step`, and with LoRA the adapters (fresh on the base, or saved in the checkpoint)."""
    m = cfg.model
    if saved_step is None:
        return f"base model {m.name}" + (f" with fresh LoRA adapters r={m.lora_rank}" if m.lora_rank else "")
    adapters = f", LoRA adapters r={m.lora_rank} on base model {m.name}" if m.lora_rank else ""
    return f"checkpoint after step {saved_step}{adapters}"


def _capture(
    parts: RunParts, step: int, source: dict[str, Any], out_dir: Path, recorded: Rollouts | None = None
) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        body = capture_update(parts.context, step - 1, out_dir, recorded)
    finally:
        parts.close()
    cfg = parts.context.cfg
    return {
        "schema": SCHEMA,
        "source": source,
        "config": config_record(cfg),
        "run_config": cfg.to_dict(),
        "weights": "policy",
        "reference_model": cfg.model.name,
        **body,
    }


def write_capture(capture: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    from rlvr.diagnostics.html import render_capture

    json_path, html_path = out_dir / CAPTURE_FILE, out_dir / "capture.html"
    json_path.write_text(json.dumps(capture, allow_nan=False) + "\n")  # NaN is null here: a page must parse it
    html_path.write_text(render_capture(capture))
    return json_path, html_path


def read_capture(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InspectError(f"--replay {path}: no such file (a capture.json written by rlvr inspect)")
    try:
        capture = json.loads(path.read_text())
    except ValueError:
        raise InspectError(f"--replay {path}: not JSON; pass a capture.json written by rlvr inspect") from None
    if not isinstance(capture, dict) or capture.get("schema") != SCHEMA:
        raise InspectError(
            f"--replay {path}: not an rlvr inspect capture (schema {SCHEMA}); write one with rlvr inspect"
        )
    return capture


def summary_lines(capture: dict[str, Any]) -> list[str]:
    c, n = capture["config"], len(capture["completions"])
    if "pairs" in capture:  # DPO: a pairwise loss, no per-token terms
        what = f"{len(capture['pairs'].get('chosen', []))} pass-vs-fail pairs"
        check = ""
    else:
        what = f"{capture['counts']['num_tokens']} tokens"
        check = f" (recomputed from the exported tensors: {capture['loss_recomputed']:.6g})"
    lines = [
        f"captured step {capture['source']['step']} ({capture['source']['policy']}): {c['algorithm']}, "
        f"B={len(capture['prompts'])} x G={c['group_size']} = {n} completions, {what}",
        f"reward mean {_mean(capture['rewards']):.3f}; loss {capture['loss']:.6g}{check}; "
        f"grad_norm {capture['grad_norm']:.4f}; update_norm {capture['update_norm']:.5f}",
    ]
    if capture.get("turns") is not None:
        lines.append(tool_line(capture))
    if "warning" in capture["source"]:
        lines.append(f"warning: {capture['source']['warning']}")
    return lines


def tool_line(capture: dict[str, Any]) -> str:
    """Tool rollouts: calls, failures, and the observation tokens the loss mask leaves out."""
    turns, n = capture["turns"], len(capture["completions"])
    calls = [call for row in turns for call in calls_run(row)]
    failed = sum(bool(turn["error"]) for turn in calls)
    users = sum(bool(calls_run(row)) for row in turns)
    observed = sum(turn["obs_end"] - turn["obs_start"] for row in turns for turn in row if "obs_start" in turn)
    return (
        f"tools: {len(calls)} call{'' if len(calls) == 1 else 's'} ({failed} failed) in {n} completions, {users} of them called "
        f"(use rate {users / n:.3f}); {observed} observation tokens are 0 in the loss mask"
    )


def _mean(rows: list[list[float | None]]) -> float:
    values = [v for row in rows for v in row if v is not None]
    return sum(values) / len(values) if values else float("nan")
