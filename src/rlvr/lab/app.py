"""The Gradio page of `rlvr lab`: tabs that read run directories and call rlvr's library functions.

Knobs -> effects: pick a knob, see all its values side by side (curves, table, readings) from the
                 shipped atlas of real runs; your own runs beside them on request (effects.py,
                 yours.py, drawn in the browser).
One run:         pick knob values, see the matching run's measured numbers and curves.
Run live:        start a real `rlvr train` of the chosen knobs; its metrics stream in as steps finish.
Memory:          `rlvr memory`'s estimator for a chosen model preset and algorithm.
pass@k:          any eval.json's pass@k and CoT-pass@k curves, base against trained, with intervals.
One step:        capture one real update (or pick a capture.html), replay its batch under other algo.* settings.
Paradigms:       `rlvr compare`'s table and figure, beside the memory estimator for grpo, ppo and dpo.
Verifiers break: hostile python completions judged by the real PythonVerifier on a click; hacked runs.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from rlvr.algos import ALGORITHMS
from rlvr.diagnostics.memory_estimate import estimate, format_bytes
from rlvr.diagnostics.memory_model import load_model_spec, preset_names
from rlvr.errors import UserError
from rlvr.lab.breaks import COLUMNS as HOSTILE_COLUMNS
from rlvr.lab.breaks import HACK_COLUMNS, HOSTILE, hacked_examples, hacked_runs, judge_hostile
from rlvr.lab.effects_page import page_data
from rlvr.lab.effects_page import render as render_effects
from rlvr.lab.evals import (
    TABLE_COLUMNS,
    eval_choices,
    eval_text,
    interval_rows,
    load_regimes,
    passk_rows,
    read_eval,
    regime_rows,
    regime_text,
    run_eval_lines,
    short_names,
)
from rlvr.lab.files import find_files
from rlvr.lab.live import LiveRuns
from rlvr.lab.paradigms import (
    COMPARE_COMMAND,
    compare_frame,
    compare_summary,
    estimate_frame,
    estimate_setup,
    find_compares,
    measured_memory_frame,
    read_compare,
)
from rlvr.lab.runs import (
    KNOBS,
    TOOL_CURVES,
    Run,
    accuracy_metrics,
    knob_values,
    live_metrics,
    measured,
    pick_runs,
    progress,
    read_curves,
    read_run,
    scan_runs,
    sweep_command,
)
from rlvr.lab.step import step_controls
from rlvr.rundir import has_final

CURVE_COLUMNS = ["step", "metric", "value"]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _arrow(pair: tuple[float | None, float | None]) -> str:
    return f"{_pct(pair[0])} -> {_pct(pair[1])}"


def describe_run(run: Run, others: int = 0) -> str:
    """Markdown of one run's measured numbers, each with its unit and source."""
    m = measured(run)
    peak = m["memory/peak_total"]
    noise = m["grad/noise_scale"]
    wall = m["wall_s"]
    lines = [
        f"**{run.label}**" + (f" ({others} more runs match; showing this one)" if others else ""),
        *heldout_lines(run, m),
        *tool_lines(run, m),
    ]
    if m["gold_pass@1"][1] is not None and run.knobs.get("fidelity") != "gold":
        lines += [
            f"- held-out pass@1 with the gold verifier, base -> final: **{_arrow(m['gold_pass@1'])}**",
            f"- hacking rate (train verifier passes, gold fails; docs/hacking.md): **{_arrow(m['hacking_rate'])}**",
        ]
    lines += [
        f"- peak training memory `memory/peak_total` (max over steps): "
        f"**{'n/a' if peak is None else format_bytes(peak)}**",
        f"- gradient noise scale `grad/noise_scale` (last logged step, in completions): "
        f"**{'n/a (needs 2+ micro-batches)' if noise is None else f'{noise:.1f}'}**",
        f"- wall time: **{'n/a' if wall is None else f'{wall:.0f} s'}** for {m['steps_logged']} logged steps"
        if run.finished
        else f"- wall time: not yet (unfinished); {m['steps_logged']} logged steps",
    ]
    return "\n".join(line for line in lines if line != "")


def heldout_lines(run: Run, m: dict[str, Any]) -> list[str]:
    """Held-out pass@1 base -> final (summary.json); for an unfinished run, how far it got and its
    last held-out evaluation so far, never a pair of n/a."""
    if run.finished:
        return [
            f"- held-out pass@1 with the training verifier, base -> final: **{_arrow(m['pass@1'])}**",
            *run_eval_lines(run.path),
        ]
    last = m["eval/pass@1"]
    return [
        f"*unfinished* (no summary.json yet): **{progress(run, m['last_step'])}**; curves show the steps logged "
        "so far, and held-out pass@1 base -> final comes with summary.json",
        "" if last is None else f"- held-out pass@1 at the evaluation of step {last[0]}: **{_pct(last[1])}**",
    ]


def tool_lines(run: Run, m: dict[str, Any]) -> list[str]:
    """The tool-use rate beside accuracy, for a run with a tool (rollout.tools); none otherwise."""
    lines = []
    if any(v is not None for v in m["tool_use_rate"]):
        lines.append(
            "- held-out tool-use rate (share of samples that ran a tool call; docs/tools.md), base -> final: "
            f"**{_arrow(m['tool_use_rate'])}**"
        )
    elif m["eval/tool_use_rate"] is not None:  # unfinished: the last held-out evaluation so far
        step, value = m["eval/tool_use_rate"]
        lines.append(f"- held-out tool-use rate at the evaluation of step {step}: **{_pct(value)}**")
    if m["tools/use_rate"] is not None:
        lines.append(
            "- training tool-use rate `tools/use_rate` (share of the step's completions that ran a call), "
            f"last logged step: **{_pct(m['tools/use_rate'])}**"
        )
    return lines


def curves_frame(path: str | Path | None, metrics: tuple[str, ...]) -> pd.DataFrame:
    rows = read_curves(path, metrics) if path else []
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def knobs_answer(root: Path, values: list[str]) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """Markdown and the two curve frames for one knob setting (re-scans the folder: new runs appear)."""
    choice = {name: value or "" for name, value in zip(KNOBS, values, strict=True)}
    matches = pick_runs(scan_runs(root), choice)
    if not matches:
        text = (
            f"**No run for this setting** under `{root}`. Make it with:\n\n"
            f"```\n{sweep_command(choice, root)}\n```\nor press *Run live* in the next tab."
        )
        return text, curves_frame(None, ()), curves_frame(None, ())
    run = matches[0]
    return (
        describe_run(run, len(matches) - 1),
        curves_frame(run.path, accuracy_metrics(run.path)),
        curves_frame(run.path, ("kl",)),
    )


def memory_table(model: str, algorithm: str) -> pd.DataFrame:
    """`rlvr memory --model MODEL --algorithm ALGORITHM` (its defaults otherwise) as a table."""
    result = estimate(load_model_spec(model), estimate_setup(algorithm))
    return pd.DataFrame(
        [
            {
                "component (per GPU)": name,
                "memory": format_bytes(c.bytes),
                "GiB": round(c.bytes / 2**30, 3),
                "how": c.how,
            }
            for name, c in result.components.items()
        ]
    )


def live_status(live: LiveRuns, path: str | None) -> str:
    if not path:
        return "No live run yet."
    run = live.get(path)
    logged = len({row["step"] for row in read_curves(path, ("reward",))})
    if run is None:
        return f"`{path}`: not started by this lab."
    state = "running" if run.running else f"ended (exit code {run.process.returncode})"
    tail = "" if run.running or run.process.returncode == 0 else f"\n\n```\n{_tail(run.log)}\n```"
    return f"`{path}`: {state}; {logged} steps logged.{_live_accuracy(path)}{tail}"


def _live_accuracy(path: str) -> str:
    """For a live run with a tool: accuracy and tool-use rate of its last logged step ("" otherwise)."""
    rows = read_curves(path, ("accuracy", *TOOL_CURVES))
    if not any(row["metric"] in TOOL_CURVES for row in rows):
        return ""
    last = max(row["step"] for row in rows)
    at = {row["metric"]: row["value"] for row in rows if row["step"] == last}
    return f" Step {last}: accuracy {_pct(at.get('accuracy'))}, tool-use rate {_pct(at.get(TOOL_CURVES[0]))}."


def live_curves(path: str | None) -> pd.DataFrame:
    """The live chart: reward and accuracy per step, and the tool-use rate for a run with a tool."""
    return curves_frame(path, live_metrics(path) if path else ())


def _tail(path: Path, lines: int = 8) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.is_file() else ""


def _plot(gr: Any, title: str, caption: str) -> Any:
    return gr.LinePlot(x="step", y="value", color="metric", title=title, label=caption)


def effects_frame(root: Path) -> str:
    """The first page (effects_page.render) in an iframe: its script redraws a knob change in the
    browser, with no call to the server. Re-reading the runs under root needs a server call."""
    page = render_effects(page_data(root))
    return (
        f'<iframe id="effects-frame" title="knobs and their effects" srcdoc="{html.escape(page)}" '
        'style="width: 100%; height: 1500px; border: 0"></iframe>'
    )


def _effects_tab(gr: Any, root: Path) -> Any:
    frame = gr.HTML(effects_frame(root), elem_id="effects")
    gr.Button("Re-read your runs", size="sm").click(lambda: effects_frame(root), None, frame, api_name="effects")
    return frame


def _knobs_tab(gr: Any, root: Path, runs: list[Run]) -> tuple[list[Any], list[Any]]:
    gr.Markdown(
        "Pick knob values; the lab shows the finished run with exactly those settings, read from "
        f"`{root}` (every run directory there, made by `rlvr train`, `rlvr sweep` or this page)."
    )
    values = knob_values(runs)
    with gr.Row():
        dropdowns = [
            gr.Dropdown(
                choices=values[name] or [""],
                value=(values[name] or [""])[0],
                label=name,
                allow_custom_value=True,
                elem_id=f"knob-{name}",
            )
            for name in KNOBS
        ]
    refresh = gr.Button("Re-scan run directories")
    answer = gr.Markdown(elem_id="knobs-answer")
    gr.Markdown(
        "Reward (mean verifier reward per completion, 0-1) and accuracy (share of completions the "
        "verifier passed, 0-1) at each training step; for a base that checks its steps "
        "(`tiny-arith-check`), also the share of completions that check a step and the accuracy of "
        "those with and without a check (`selfcheck/*`, docs/metrics.md); for a run with a tool "
        "(`rollout.tools`), also the share of completions that ran a tool call (`tools/use_rate`):"
    )
    reward_plot = _plot(gr, "reward and accuracy per step", "reward, accuracy (0-1) vs step")
    gr.Markdown(
        "KL between the policy and the frozen reference at each step (nats per token, mean of the "
        "run's `algo.kl_estimator`; 0 when beta = 0):"
    )
    kl_plot = _plot(gr, "KL to reference per step", "kl (nats/token) vs step")
    outputs = [answer, reward_plot, kl_plot]
    for dropdown in dropdowns:
        dropdown.change(lambda *v: knobs_answer(root, list(v)), dropdowns, outputs)
    refresh.click(lambda *v: knobs_answer(root, list(v)), dropdowns, outputs, api_name="knobs")
    return dropdowns, outputs


def _live_tab(gr: Any, live: LiveRuns, dropdowns: list[Any]) -> None:
    gr.Markdown(
        f"Starts a real `rlvr train --config {live.preset}` with the knob values chosen in the first "
        f"tab, into a new run directory under `{live.root}`; its metrics appear below as steps finish."
    )
    current = gr.State(None)
    with gr.Row():
        start, stop = gr.Button("Run live", variant="primary"), gr.Button("Stop", variant="stop")
    status = gr.Markdown("No live run yet.", elem_id="live-status")
    gr.Markdown(
        "Reward and accuracy (0-1) of the live run at each finished step (with a tool, also the tool-use rate):"
    )
    plot = _plot(gr, "live run: reward and accuracy per step", "reward, accuracy (0-1) vs step")

    def on_start(*values: str) -> tuple[str, str]:
        try:
            run = live.start({name: value or "" for name, value in zip(KNOBS, values, strict=True)})
        except UserError as error:
            raise gr.Error(str(error)) from None  # shown in the page, not as a traceback
        return str(run.path), live_status(live, str(run.path))

    def on_tick(path: str | None) -> tuple[str, pd.DataFrame]:
        return live_status(live, path), live_curves(path)

    start.click(on_start, dropdowns, [current, status], api_name="start_live")

    def on_stop(path: str | None) -> str:
        if path:
            live.stop(path)
        return live_status(live, path)

    stop.click(on_stop, current, status, api_name="stop_live")
    gr.Timer(1.0).tick(on_tick, current, [status, plot])


def _memory_tab(gr: Any) -> None:
    gr.Markdown(
        "Estimated accelerator memory per GPU, by component, for training the chosen model with the "
        "chosen algorithm (bf16 mixed precision, AdamW, B=32 queries, G=8 (DPO: offline pairs), 256+1024 tokens; "
        "`rlvr memory --help` for the rest; formulas in docs/memory.md)."
    )
    with gr.Row():
        model = gr.Dropdown(choices=preset_names(), value="Qwen2.5-7B", label="model")
        algorithm = gr.Dropdown(choices=list(ALGORITHMS), value="grpo", label="algorithm")
    table = gr.Dataframe(value=memory_table("Qwen2.5-7B", "grpo"), label="memory by component", elem_id="memory")
    for control in (model, algorithm):
        control.change(memory_table, [model, algorithm], table, api_name=False)
    gr.Button("Estimate").click(memory_table, [model, algorithm], table, api_name="memory")


def passk_answer(paths: str | list[str] | None) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """Markdown, the curve frame and the interval table of one or several eval.json (several: one
    plot, curves labelled by run)."""
    chosen = [paths] if isinstance(paths, str) else list(paths or [])
    found = [(Path(p), read_eval(p)) for p in chosen if p]
    found = [(path, report) for path, report in found if report is not None]
    if not found:
        return (
            "No eval.json chosen. Make one with `rlvr eval --model RUN/final --base tiny-arith --out RUN/eval`.",
            pd.DataFrame([], columns=["k", "series", "value"]),
            pd.DataFrame([], columns=TABLE_COLUMNS),
        )
    names = short_names([path for path, _ in found]) if len(found) > 1 else [""]
    texts, rows, table = [], [], []
    for (path, report), name in zip(found, names, strict=True):
        texts.append(eval_text(path, report, name))
        rows += passk_rows(report, f"{name}: " if name else "")
        table += interval_rows(report, name or path.parent.name)
    return (
        "\n\n---\n\n".join(texts),
        pd.DataFrame(rows, columns=["k", "series", "value"]),
        pd.DataFrame(table, columns=TABLE_COLUMNS),
    )


def _passk_tab(gr: Any, root: Path) -> tuple[Any, Any, Any, Any]:
    gr.Markdown(
        "Does RL teach new answers or only make likely ones likelier? pass@k is the chance that at least "
        "one of k samples is right (0-1, Chen et al. 2021); CoT-pass@k also needs right reasoning. If the "
        "base model catches up at large k, training compressed rather than added capability."
    )
    regimes = load_regimes(root)
    if regimes:
        gr.Markdown(
            "### Both regimes, measured by `rlvr reproduce`\nSharpening: on `tiny-arith` the base already samples "
            "the right answer, and RL makes it likelier, so the base catches up at small k; the base alone at a "
            "lower temperature (the series base, T = 0.3) does better, for free. Expansion: on `tiny-arith-deep` the base "
            "rarely completes a 5-operand chain; an answer-only reward lifts CoT-pass@k at every k on 4 seeds of "
            "5 (the fifth learned right answers without right chains, and the mean hides it), and SFT on the "
            "worked solutions, given what RL is not, lifts it further on 4 of 5."
        )
    for curves in regimes:
        with gr.Row():
            gr.Markdown(regime_text(curves), elem_id=f"regime-{curves['study']}")
            gr.LinePlot(
                value=pd.DataFrame(regime_rows(curves), columns=["k", "series", "value"]),
                x="k",
                y="value",
                color="series",
                title=f"{curves['study']}: base against trained (mean over seeds)",
                label=f"{curves['study']} pass@k (0-1) vs k samples",
                elem_id=f"regime-plot-{curves['study']}",
            )
    gr.Markdown(
        f"### Your evaluations\nEvery eval.json `rlvr eval` wrote under `{root}`, whatever its task (named "
        "with its n and number of queries)."
    )
    evals = eval_choices(root)
    choice = gr.Dropdown(
        choices=evals,
        value=[path for _, path in evals[:1]],
        multiselect=True,
        label="eval.json (from `rlvr eval`); pick several to put their curves on one plot",
        allow_custom_value=True,
        elem_id="eval-choice",
    )
    rescan = gr.Button("Re-scan eval.json files", size="sm")
    text = gr.Markdown(elem_id="passk-answer")
    plot = gr.LinePlot(
        x="k", y="value", color="series", title="pass@k and CoT-pass@k vs k", label="pass@k (0-1) vs k samples"
    )
    gr.Markdown(
        "Each curve per k with its 95% bootstrap interval over queries as eval.json holds it (percent of "
        "queries solved), and model - base with its paired interval (points); blank where the file has "
        "no interval; n/a for CoT-pass@k where the task has no reasoning checker."
    )
    table = gr.Dataframe(headers=TABLE_COLUMNS, label="pass@k with 95% intervals", elem_id="passk-table")
    choice.change(passk_answer, choice, [text, plot, table], api_name="passk")
    rescan.click(lambda: gr.Dropdown(choices=eval_choices(root)), None, choice, api_name=False)
    return choice, text, plot, table


def capture_frame(path: str | None) -> str:
    """The chosen capture.html in an iframe (its own scripts run there, apart from the page's)."""
    file = Path(path) if path else None
    if file is None or file.name != "capture.html" or not file.is_file():
        return (
            "<p>No capture chosen. Make one with <code>rlvr inspect --run RUN --step 1 --out RUN/inspect</code> "
            "(RUN: a run directory under the lab's folder), then reload the page.</p>"
        )
    return (
        f'<iframe id="capture-frame" title="{html.escape(str(file))}" srcdoc="{html.escape(file.read_text())}" '
        'style="width: 100%; height: 1200px; border: 0"></iframe>'
    )


def _file_choice(gr: Any, paths: list[Path], label: str, elem_id: str) -> Any:
    """A dropdown of the files found, the first one chosen (one empty choice when none is); a path
    typed in is taken too."""
    choices = [str(path) for path in paths] or [""]
    return gr.Dropdown(choices=choices, value=choices[0], label=label, allow_custom_value=True, elem_id=elem_id)


def _step_tab(gr: Any, root: Path, preset: str | Path) -> tuple[Any, Any]:
    gr.Markdown(
        "One real update opened up, as `rlvr inspect` captured it: queries, the G completions, rewards, "
        "group mean and std, advantages, ratios, clipping, KL and loss (tokens coloured by advantage; "
        "schema in docs/inspector.md)."
    )
    choice = _file_choice(gr, find_files(root, "capture.html"), "capture.html (from `rlvr inspect`)", "capture-choice")
    step_controls(gr, root, preset, choice, [str(run.path) for run in scan_runs(root)])
    frame = gr.HTML(elem_id="capture")
    choice.change(capture_frame, choice, frame, api_name="capture")
    return choice, frame


def paradigms_answer(path: str | None) -> tuple[str, pd.DataFrame, str | None, pd.DataFrame]:
    """Summary, table, figure path and measured memory of one compare.json (or the command that makes one)."""
    report = read_compare(path) if path else None
    if report is None:
        missing = (
            f"**No `rlvr compare` output chosen.** Make one with:\n\n```\n{COMPARE_COMMAND}\n```\n"
            "(with `--runs runs` it appears here after a reload)."
        )
        return missing, pd.DataFrame(), None, pd.DataFrame()
    figure = Path(path).with_name("compare.png")
    return (
        compare_summary(path, report),
        compare_frame(report),
        str(figure) if figure.is_file() else None,
        measured_memory_frame(report),
    )


def _paradigms_tab(gr: Any, root: Path) -> tuple[Any, list[Any]]:
    gr.Markdown(
        "GRPO, PPO and DPO trained on the same task, model, prompt budget and seeds by `rlvr compare` "
        '(definitions: docs/algorithms.md, "Comparing paradigms").'
    )
    choice = _file_choice(gr, find_compares(root), "compare.json (from `rlvr compare`)", "compare-choice")
    summary = gr.Markdown(elem_id="compare-answer")
    gr.Markdown(
        "The comparison table: memory peaks (MiB), exploration (distinct correct solutions, queries solved, "
        "pass@k as a 0-1 share), stability (reward change per step, final reward, 0-1) and wall time (s)."
    )
    table = gr.Dataframe(label="rlvr compare table (mean ± std over seeds)", elem_id="compare-table")
    gr.Markdown(
        "Left: training reward (0-1) per step; middle: distinct correct solutions per step; right: held-out "
        "pass@k (% of queries) against k samples. Bands span min..max over seeds."
    )
    figure = gr.Image(label="compare.png", type="filepath", elem_id="compare-figure")
    with gr.Row():
        with gr.Column():
            gr.Markdown(
                "Measured on the tiny model: the peak of each `memory/*` metric the compare runs logged "
                "(MiB; the bytes of the tensors each part holds, counted by the trainer; docs/metrics.md)."
            )
            measured_table = gr.Dataframe(label="measured memory (tiny model)", elem_id="compare-memory")
        with gr.Column():
            gr.Markdown(
                "Estimated for a real model: `rlvr memory`'s formulas (docs/memory.md) per GPU for grpo, ppo "
                "and dpo, bf16 mixed precision, AdamW, B=32, G=8 (DPO: offline pairs), 256+1024 tokens (GiB)."
            )
            model = gr.Dropdown(choices=preset_names(), value="Qwen2.5-7B", label="model", elem_id="paradigm-model")
            estimated = gr.Dataframe(
                value=estimate_frame("Qwen2.5-7B"), label="estimated memory (GiB per GPU)", elem_id="paradigm-estimate"
            )
    model.change(estimate_frame, model, estimated, api_name="paradigm_memory")
    outputs = [summary, table, figure, measured_table]
    choice.change(paradigms_answer, choice, outputs, api_name="paradigms")
    return choice, outputs


def _breaks_tab(gr: Any, root: Path) -> None:
    gr.Markdown(
        f"{len(HOSTILE)} completions from the hostile suite (tests/sandbox/test_hostile.py), each answering a "
        "query whose expected value is a secret drawn on the host at the click: only an attack that "
        "worked could pass. *Run* judges them now with the real PythonVerifier in a fresh bubblewrap "
        "sandbox per completion (2 s wall clock, 1 s CPU, 256 MB each; about 10 s in all)."
    )
    run = gr.Button("Run the hostile completions", variant="primary")
    gr.Markdown(
        "One row per completion: what it tries, the verdict (pass / fail), the verifier's error class (why "
        "it failed: wrong_answer, timeout, memory, output_limit, protocol_violation, ...), its one-line "
        "detail and the code. Only the honest control should pass."
    )
    table = gr.Dataframe(headers=HOSTILE_COLUMNS, label="hostile completions, judged", elem_id="hostile", wrap=True)
    run.click(lambda: judge_hostile(), None, table, api_name="hostile")
    _hacked_section(gr, root)


def hacked_answer(path: str | None) -> tuple[str, pd.DataFrame]:
    """Counts and the hacked completions of fresh samples from a run's final model (or why there are none)."""
    run = read_run(Path(path)) if path else None
    if run is None or not has_final(run.path):
        return (
            "No finished run chosen. Make one trained against a weakened verifier with `rlvr train --config "
            "configs/smoke.yaml --set reward.fidelity=noisy --set reward.false_positive_rate=0.5 --out "
            "runs/noisy`.",
            pd.DataFrame([], columns=HACK_COLUMNS),
        )
    counts, frame = hacked_examples(run.path)
    logged = measured(run)["hacking_rate"][1]
    text = (
        f"`{run.path}` (reward.fidelity={run.knobs['fidelity']}): of {counts['sampled']} fresh samples "
        f"(4 each for its first 8 training queries), the training verifier passed {counts['training passes']}, "
        f"gold passed {counts['gold passes']}, **{counts['hacked']} hacked** (training pass, gold fail or "
        f"unscorable) out of {counts['judged']} the training verifier could judge. The run's own final hacking rate: {_pct(logged)}."
    )
    return text, frame


def _hacked_section(gr: Any, root: Path) -> None:
    gr.Markdown(
        "### Hacked runs\nRuns trained against a weakened verifier (`reward.fidelity` not gold). The run "
        "logs only the share `hacking/rate`, not the completions (meters/hacking.py), so *Re-score* "
        "samples the run's final model again and judges each sample with its training verifier and with "
        "the gold one (about 10 s on a CPU)."
    )
    runs = [str(run.path) for run in hacked_runs(scan_runs(root))]
    choice = gr.Dropdown(
        choices=runs or [""],
        value=(runs or [""])[0],
        label="run with reward.fidelity != gold",
        allow_custom_value=True,
        elem_id="hacked-choice",
    )
    button = gr.Button("Re-score samples of this run")
    text = gr.Markdown(elem_id="hacked-answer")
    gr.Markdown("Completions the training verifier passed and the gold verifier failed, with gold's one-line reason:")
    table = gr.Dataframe(headers=HACK_COLUMNS, label="hacked completions", elem_id="hacked", wrap=True)
    button.click(hacked_answer, choice, [text, table], api_name="hacked")


def build_app(root: str | Path, live: LiveRuns) -> Any:
    import gradio as gr

    root = Path(root)
    with gr.Blocks(title="rlvr lab", analytics_enabled=False) as app:
        gr.Markdown("# rlvr lab\nEvery number here is measured by a real run or computed by rlvr's own estimator.")
        with gr.Tab("Knobs -> effects"):
            _effects_tab(gr, root)
        with gr.Tab("One run"):
            dropdowns, outputs = _knobs_tab(gr, root, scan_runs(root))
        with gr.Tab("Run live"):
            _live_tab(gr, live, dropdowns)
        with gr.Tab("Memory"):
            _memory_tab(gr)
        with gr.Tab("Compression or new capability?"):
            choice, text, plot, table = _passk_tab(gr, root)
        with gr.Tab("One step"):
            capture, frame = _step_tab(gr, root, live.preset)
        with gr.Tab("Paradigms compared"):
            compare_choice, compare_outputs = _paradigms_tab(gr, root)
        with gr.Tab("Where verifiers break"):
            _breaks_tab(gr, root)
        app.load(lambda *v: knobs_answer(root, list(v)), dropdowns, outputs)
        app.load(passk_answer, choice, [text, plot, table])
        app.load(capture_frame, capture, frame)
        app.load(paradigms_answer, compare_choice, compare_outputs)
    return app
