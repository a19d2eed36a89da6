"""The run directory: the one module that knows its layout. Everything else reads and writes a
run through these names and functions.

    <run>/config.yaml     the resolved configuration (RunConfig.to_dict(), keys in field order)
    <run>/metrics.jsonl   one JSON object per logged step, {"step": N, ...}; null for non-finite
    <run>/summary.json    held-out evaluation before and after training; written last, so its
                          presence marks a finished run
    <run>/checkpoint/     the latest resumable state (policy in Hugging Face format + trainer_state.pt)
    <run>/final/          the trained policy, loadable as any Hugging Face model
    <run>/best/           the best policy by held-out score, when train.keep_best asks for it
    <run>/steps/<N>/      the policy after N steps, every train.keep_every steps when it asks for
                          them (Hugging Face format: model and tokenizer)
    <run>/curves.png      reward, held-out pass@1 and greedy, KL and entropy over steps (`rlvr train`)

Directories written by earlier versions use the same names and formats and read the same.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
HEALTH = "health.jsonl"
SUPERVISOR_LOG = "supervisor.jsonl"
"""`rlvr train --supervise`: one line per start and exit of the training process (engine/supervisor.py)."""
"""The run's health checks, one line per check and step (engine/health.py)."""
CHECKPOINT = "checkpoint"
RECORDER = "recorder"
"""The flight recorder: the checkpoints after the last train.recorder_steps steps (engine/checkpoint.py)."""
RECORDED, PINNED = "after-step-", "pinned-after-step-"
FINAL = "final"
BEST = "best"
CURVES = "curves.png"
STEPS = "steps"
MODEL_CONFIG = "config.json"
"""The file that makes a directory a loadable Hugging Face model."""
STATE_FILE = "trainer_state.pt"
"""The optimizer, step and RNG state inside a checkpoint (engine/checkpoint.py writes it)."""
OPTIMIZER_SHARDS = "optimizer"
"""In a checkpoint written with train.sharding=fsdp2: the optimizer state as each process's shards (DCP)."""


def config_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / CONFIG


def metrics_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / METRICS


def health_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / HEALTH


def read_health(run_dir: str | Path) -> list[dict[str, Any]]:
    """The lines of a run's health file (empty when it has none)."""
    path = health_path(run_dir)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summary_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / SUMMARY


def checkpoint_dir(run_dir: str | Path) -> Path:
    """Where the run's checkpoint goes (it may not exist yet; `find_checkpoint` finds a saved one)."""
    return Path(run_dir) / CHECKPOINT


def final_dir(run_dir: str | Path) -> Path:
    """The trained policy of a finished run."""
    return Path(run_dir) / FINAL


def best_dir(run_dir: str | Path) -> Path:
    """The best model by held-out score (train.keep_best), Hugging Face format, when kept."""
    return Path(run_dir) / BEST


def step_dir(run_dir: str | Path, step: int) -> Path:
    """Where the policy after `step` steps is kept (train.keep_every)."""
    return Path(run_dir) / STEPS / str(step)


def keep_step(run_dir: str | Path, step: int, save: Callable[[Path], None]) -> Path:
    """Keep the policy after `step` steps in steps/<step>/: `save(folder)` writes model and tokenizer
    into a fresh folder beside it, which then takes the name, so a kill never leaves half of one."""
    kept = step_dir(run_dir, step)
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f".{kept.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save(tmp)
    shutil.rmtree(kept, ignore_errors=True)
    tmp.rename(kept)
    return kept


def saved_models(run_dir: str | Path, checkpoint_step: Callable[[Path], int]) -> dict[int, Path]:
    """The run's loadable models by the step they were saved after, in step order: each steps/<N>/,
    final/ at the finished run's summary "steps", and the checkpoint at its state's step
    (`checkpoint_step(checkpoint)` reads it: engine/checkpoint.py) when it holds a whole model (with
    LoRA it holds the adapters alone). One step's several copies hold the same weights; the first
    of that order is given."""
    saved: dict[int, Path] = {}
    for path in (Path(run_dir) / STEPS).glob("*"):
        if path.name.isdigit() and (path / MODEL_CONFIG).is_file():
            saved[int(path.name)] = path
    try:
        finished = (read_summary(run_dir) or {}).get("steps")
    except ValueError:  # a summary that is not JSON says nothing about the step of final/
        finished = None
    if isinstance(finished, int) and (final_dir(run_dir) / MODEL_CONFIG).is_file():
        saved.setdefault(finished, final_dir(run_dir))
    checkpoint = find_checkpoint(run_dir)
    if checkpoint is not None and (checkpoint / MODEL_CONFIG).is_file():
        saved.setdefault(checkpoint_step(checkpoint), checkpoint)
    return dict(sorted(saved.items()))


def default_run_dir(seed: int, root: str | Path = "runs") -> Path:
    """Where a new run goes when no directory is named: <root>/<YYYYmmdd-HHMMSS>-seed<N>."""
    return Path(root) / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}"


def is_run_dir(run_dir: str | Path) -> bool:
    """Whether a run was started here: training wrote its config.yaml."""
    return config_path(run_dir).is_file()


def not_a_run(run_dir: str | Path, flag: str = "--run") -> str | None:
    """What is wrong with `flag run_dir` when no run was started there; None when one was."""
    return None if is_run_dir(run_dir) else f"{flag} {run_dir}: no run there (expected {CONFIG} from rlvr train --out)"


def is_finished(run_dir: str | Path) -> bool:
    """Whether the run here ran to its end (its summary.json is written last)."""
    return summary_path(run_dir).is_file()


def has_final(run_dir: str | Path) -> bool:
    """Whether the run here saved its trained policy."""
    return final_dir(run_dir).is_dir()


def find_checkpoint(run_dir: str | Path) -> Path | None:
    """The run's checkpoint, also when a kill fell between the two renames that replace it
    (engine/checkpoint.py keeps the previous one as `.checkpoint.old` for that instant)."""
    for name in (CHECKPOINT, f".{CHECKPOINT}.old"):
        path = Path(run_dir) / name
        if (path / STATE_FILE).is_file():
            return path
    return None


def recorder_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / RECORDER


def recorded_checkpoints(run_dir: str | Path, *, pinned: bool = True) -> dict[int, Path]:
    """The recorder's checkpoints by the step they were saved after (pinned ones with `pinned`)."""
    found: dict[int, Path] = {}
    prefixes = (PINNED, RECORDED) if pinned else (RECORDED,)
    for path in sorted(recorder_dir(run_dir).glob("*")) if recorder_dir(run_dir).is_dir() else ():
        for prefix in prefixes:
            rest = path.name.removeprefix(prefix)
            if rest != path.name and rest.isdigit() and (path / STATE_FILE).is_file():
                found.setdefault(int(rest), path)
    return found


def run_dirs(root: str | Path) -> Iterator[Path]:
    """Every run directory under root, at any depth (sweeps nest runs one level down), by path."""
    return (config.parent for config in sorted(Path(root).rglob(CONFIG)))


def read_config(run_dir: str | Path) -> dict[str, Any]:
    """The run's configuration as a plain dict ({} for an empty file). Raises OSError when there is
    no config.yaml and yaml.YAMLError when it is not YAML."""
    return yaml.safe_load(config_path(run_dir).read_text()) or {}


def write_config(run_dir: str | Path, config: dict[str, Any]) -> None:
    config_path(run_dir).write_text(yaml.safe_dump(config, sort_keys=False))


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """The logged rows in order; [] when nothing is logged yet. A line that is not JSON (the one the
    trainer is writing this instant) is skipped."""
    path = metrics_path(run_dir)
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else ():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def last_step(run_dir: str | Path) -> int:
    """The last step the run logged in metrics.jsonl (0 before its first)."""
    return max((row["step"] for row in read_metrics(run_dir) if isinstance(row.get("step"), int)), default=0)


def read_summary(run_dir: str | Path) -> dict[str, Any] | None:
    """The finished run's summary; None while it is unfinished. Raises ValueError when the file is
    not JSON."""
    path = summary_path(run_dir)
    return json.loads(path.read_text()) if path.is_file() else None


def write_summary(run_dir: str | Path, summary: dict[str, Any]) -> None:
    summary_path(run_dir).write_text(json.dumps(summary, indent=2) + "\n")


def _resumed(segments: list[dict[str, Any]] | None) -> str:
    """How a resumed run's time adds up: " over N runs (resumed at step S: ...)"; "" for one run."""
    if not segments:
        return ""
    last = segments[-1]
    unknown = [f"{s['from_step']}-{s['to_step']}" for s in segments if s["wall_s"] is None]
    untimed = f"; steps {', '.join(unknown)} untimed (an older checkpoint)" if unknown else ""
    steps = last["to_step"] - last["from_step"]
    return (
        f" over {len(segments)} runs (resumed at step {last['from_step']}: "
        f"{steps} step{'' if steps == 1 else 's'} in {last['wall_s']:.0f} s{untimed})"
    )


def summary_lines(summary: dict[str, Any], *, temperature: float, fidelity: str, tools: str) -> list[str]:
    """The held-out results before and after training, as `rlvr train` prints them; `temperature`,
    `fidelity` and `tools` are the run's rollout.temperature, reward.fidelity and rollout.tools."""
    base, final = summary["base"], summary["final"]
    lines = [
        f"held-out pass@1 (n={final['n']}, T={temperature}): "
        f"{base['pass@1']:.3f} -> {final['pass@1']:.3f} ({100 * (final['pass@1'] - base['pass@1']):+.1f} points); "
        f"greedy {base['greedy']:.3f} -> {final['greedy']:.3f}; "
        f"{summary['steps']} steps in {summary['wall_s']:.0f} s{_resumed(summary.get('segments'))}"
    ]
    if fidelity != "gold":
        lines.append(
            f"gold verifier (reward.fidelity={fidelity} trained): held-out gold pass@1 "
            f"{base['gold_pass@1']:.3f} -> {final['gold_pass@1']:.3f}, greedy {base['gold_greedy']:.3f} -> "
            f"{final['gold_greedy']:.3f}; hacking rate "
            f"{base['hacking_rate']:.3f} -> {final['hacking_rate']:.3f} (docs/hacking.md)"
        )
    if "tool_use_rate" in final:
        lines.append(
            f"tool use (rollout.tools={tools}): share of held-out samples that ran a call "
            f"{base['tool_use_rate']:.3f} -> {final['tool_use_rate']:.3f} (docs/tools.md)"
        )
    return lines
