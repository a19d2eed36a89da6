"""`rlvr inspect`: capture one update with every intermediate, or replay a capture under other settings.

(Named inspect_cmd so that it never stands in for the standard library's `inspect`.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rlvr.cli.common import UsageError, add_command, quiet_hugging_face
from rlvr.cli.validators import int_at_least
from rlvr.config import load_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "inspect",
        run,
        help="capture one update with every intermediate (JSON + HTML), or replay one under other settings",
        description="Run one real update (from a config, or a step of a saved run) and write capture.json "
        "(every intermediate: rewards, advantages, log-probs, ratios, clipping, KL, per-token loss, loss, "
        "gradient norms; schema in docs/inspector.md) and capture.html. With --replay, recompute a captured "
        "batch under other algo.* settings and show the change in loss, per-token weights and gradient.",
        config="YAML preset; the update of step 1 of a fresh run is captured",
        overrides="override one config field (repeatable); with --replay only algo.* fields",
        out="output folder (default: inspect/, or the capture's folder for --replay)",
    )
    p.add_argument("--run", metavar="DIR", help="a run directory of rlvr train; needs --step")
    p.add_argument(
        "--step",
        type=int_at_least(1, " (steps count from 1, as in metrics.jsonl)"),
        help="with --run: the update logged as this step in metrics.jsonl, from the model after step N-1 "
        "(the run's checkpoint at N-1 repeats it exactly; train.keep_every=K keeps a model every K steps; "
        "without one the output names the weights used); a step past the run's next is refused",
    )
    p.add_argument(
        "--replay",
        metavar="CAPTURE",
        help="a capture.json to recompute under --set algo.* settings; or a flight recorder's batch "
        "(RUN/recorder/batch-step-N.pt, train.recorder_steps): step N again on it, exactly, then under --set if given",
    )


def run(args: argparse.Namespace) -> int:
    from rlvr.diagnostics import inspector

    if args.replay:
        if args.config or args.run or args.step is not None:
            raise UsageError(
                "--replay recomputes a saved capture; drop --config/--run/--step and pass --set algo.*=..."
            )
        return _replay(Path(args.replay), args.overrides, Path(args.out) if args.out else None)
    if args.run and args.config:
        raise UsageError("--run uses that run's saved config; drop --config (--set may still change fields)")
    if args.run and args.step is None:
        raise UsageError("--run DIR needs --step N: the update logged as step N in DIR/metrics.jsonl")
    quiet_hugging_face()
    out = Path(args.out or "inspect")
    if args.run:
        capture = inspector.inspect_run(Path(args.run), args.step, args.overrides, out)
    else:
        capture = inspector.inspect_config(load_config(args.config, args.overrides), out, step=args.step or 1)
    json_path, html_path = inspector.write_capture(capture, out)
    print("\n".join(inspector.summary_lines(capture)))
    print(f"saved: {json_path}, {html_path} (policy weights for --replay in {out / capture['weights']})")
    return 0


def _replay(path: Path, overrides: list[str], out: Path | None) -> int:
    from rlvr.diagnostics.html import render_capture
    from rlvr.diagnostics.inspector import read_capture
    from rlvr.diagnostics.replay import replay, replay_lines
    from rlvr.engine.flight import recorded_step

    step = recorded_step(path)
    if step is None and not overrides:
        raise UsageError("--replay needs at least one --set algo.KEY=VALUE to compare against the capture")
    quiet_hugging_face()
    if step is not None:  # a flight recorder's batch: the step itself again, captured, then replayed
        out = out or Path("inspect")
        capture = _recorded(path, step, out)
        if not overrides:
            return 0
        path = out / "capture.json"
    else:
        capture = read_capture(path)
    result = replay(capture, path.parent, overrides)
    out = out or path.parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(result) + "\n")
    (out / "replay.html").write_text(render_capture(capture, result))
    print("\n".join(replay_lines(result)))
    print(f"saved: {out / 'replay.json'}, {out / 'replay.html'}")
    return 0


def _recorded(path: Path, step: int, out: Path) -> dict:
    """Step `step` of the run that holds the recorder batch `path`, trained again on that batch
    from the recorder's state before it, captured into `out` with the loss beside the logged one."""
    from rlvr import rundir
    from rlvr.diagnostics import inspector

    if not path.is_file():
        raise UsageError(f"--replay {path}: no such file (a flight recorder's batch of rlvr train)")
    run = path.parent.parent
    capture = inspector.inspect_run(run, step, [], out)
    inspector.write_capture(capture, out)
    print("\n".join(inspector.summary_lines(capture)))
    logged = next((r for r in rundir.read_metrics(run) if r.get("step") == step and "loss" in r), None)
    if logged is not None:
        same = capture["loss"] == logged["loss"] and capture["grad_norm"] == logged["grad_norm"]
        print(f"step {step} again on its recorded batch: loss {capture['loss']}, grad_norm {capture['grad_norm']} "
              f"({'equal to' if same else 'NOT equal to'} metrics.jsonl's {logged['loss']}, {logged['grad_norm']})")  # fmt: skip
    print(
        f"saved: {out / 'capture.json'} (replay it under other settings: --replay {out / 'capture.json'} --set algo.*)"
    )
    return capture
