"""The "One step" tab's actions: capture one real update, and replay a capture under other settings.

Both only call rlvr.diagnostics (inspect_run / inspect_config, write_capture, read_capture, replay,
replay_lines, render_capture); the lab computes nothing itself.
"""

from __future__ import annotations

import html
import tempfile
from pathlib import Path
from typing import Any

from rlvr.algos import AGGREGATIONS as AGGREGATION_FNS
from rlvr.algos import ALGORITHMS as REGISTRY
from rlvr.config import load_config
from rlvr.errors import UserError
from rlvr.lab.files import find_files

CAPTURES = "lab-captures"
"""Folder under --runs that the capture button writes into (one new sub-folder per click)."""

ALGORITHMS = tuple(name for name, algorithm in REGISTRY.items() if algorithm.update == "policy_gradient")
"""What a replay can switch to: algorithms with advantages and a per-token policy loss."""
AGGREGATIONS = tuple(AGGREGATION_FNS)

EXPLAIN = (
    "The replay keeps the captured completions, rewards, old and reference log-probs and policy weights, "
    "and recomputes the loss and its gradient under the new algo.* settings: the numbers below differ only "
    "because of what you changed."
)


def iframe(text: str, elem_id: str) -> str:
    """A whole HTML document shown apart from the page (its own scripts run inside)."""
    return (
        f'<iframe id="{elem_id}" srcdoc="{html.escape(text)}" style="width: 100%; height: 1200px; border: 0"></iframe>'
    )


def capture_step(root: Path, source: str, step: int, preset: str | Path) -> Path:
    """Capture update `step` of the run at `source` (or of `preset` when source is empty) into a new
    folder under root/lab-captures; returns its capture.html."""
    from rlvr.diagnostics.inspector import inspect_config, inspect_run, write_capture

    step = int(step)
    (root / CAPTURES).mkdir(parents=True, exist_ok=True)
    stem = Path(source).name if source else Path(preset).stem
    out = Path(tempfile.mkdtemp(prefix=f"{stem}-step{step}-", dir=root / CAPTURES))
    if source:
        capture = inspect_run(Path(source), step, [], out)
    else:
        if not Path(preset).is_file():
            raise UserError(f"{preset}: preset not found; start `rlvr lab` from the repository root")
        capture = inspect_config(load_config(str(preset), []), out, step=step)
    return write_capture(capture, out)[1]


def replay_overrides(epsilon: float, beta: float, algorithm: str, aggregation: str) -> list[str]:
    """The `--set algo.*` strings `rlvr inspect --replay` takes for these controls."""
    return [
        f"algo.epsilon={epsilon}",
        f"algo.beta={beta}",
        f"algo.algorithm={algorithm}",
        f"algo.aggregation={aggregation}",
    ]


def replay_step(capture_html: str, overrides: list[str]) -> tuple[str, float | None, str]:
    """(text, loss difference, replay HTML) of the chosen capture under `overrides`; a user error as
    its one line, with no number and no HTML."""
    from rlvr.diagnostics.html import render_capture
    from rlvr.diagnostics.inspector import read_capture
    from rlvr.diagnostics.replay import replay, replay_lines

    if not capture_html:
        return "No capture chosen: press *Capture* first, or pick a capture.html.", None, ""
    path = Path(capture_html).with_name("capture.json")
    try:
        capture = read_capture(path)
        result = replay(capture, path.parent, overrides)
    except UserError as error:
        return f"Error: {error}", None, ""
    text = EXPLAIN + "\n\n```\n" + "\n".join(replay_lines(result)) + "\n```"
    return text, result["loss_difference"], iframe(render_capture(capture, result), "replay-frame")


def step_controls(gr: Any, root: Path, preset: str | Path, choice: Any, runs: list[str]) -> None:
    """The capture and replay rows of the One step tab, wired to `choice` (the capture.html dropdown)."""
    with gr.Row():
        source = gr.Dropdown(
            choices=[("preset " + str(preset), "")] + [(r, r) for r in runs],
            value="",
            label="capture from (a run under --runs, or the preset's base model)",
            allow_custom_value=True,
            elem_id="capture-source",
        )  # runs started after page load too
        step = gr.Number(value=1, precision=0, minimum=1, label="step (1-based, as metrics.jsonl counts)")
        button = gr.Button("Capture", elem_id="capture-button")
    status = gr.Markdown(elem_id="capture-status")

    made_path = gr.Textbox(label="new capture.html", interactive=False, elem_id="capture-made")

    def on_capture(source_value: str, step_value: float) -> tuple[str, str, Any]:
        try:
            made = capture_step(root, source_value or "", int(step_value or 1), preset)
        except UserError as error:
            return f"Error: {error}", "", gr.Dropdown()
        captures = [str(p) for p in find_files(root, "capture.html")]
        return f"Captured into `{made.parent}`.", str(made), gr.Dropdown(choices=captures, value=str(made))

    button.click(on_capture, [source, step], [status, made_path, choice], api_name="inspect")
    gr.Markdown("Replay the chosen capture's batch under other settings (only algo.* can change).")
    with gr.Row():
        epsilon = gr.Number(value=0.2, label="ε (algo.epsilon)")
        beta = gr.Number(value=0.04, label="β (algo.beta)")
        algorithm = gr.Dropdown(choices=list(ALGORITHMS), value="grpo", allow_custom_value=True, label="algorithm")
        aggregation = gr.Dropdown(
            choices=list(AGGREGATIONS), value="sequence_mean", allow_custom_value=True, label="aggregation"
        )
        run = gr.Button("Replay", elem_id="replay-button")
    text = gr.Markdown(elem_id="replay-text")
    difference = gr.Number(label="loss difference (new − captured)", elem_id="replay-difference")
    replay_frame = gr.HTML(elem_id="replay")

    def on_replay(path: str, eps: float, b: float, algo: str, agg: str) -> tuple[str, float | None, str]:
        return replay_step(path, replay_overrides(eps, b, algo, agg))

    run.click(
        on_replay, [choice, epsilon, beta, algorithm, aggregation], [text, difference, replay_frame], api_name="replay"
    )
