"""A real browser (headless system Chromium driven by Playwright) against the real lab on localhost."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
from pathlib import Path

import pytest

playwright = pytest.importorskip("playwright.sync_api", reason="browser tests need rlvr[dev] (playwright)")
pytest.importorskip("gradio", reason="the lab needs rlvr[lab]")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs the system chromium (setup.sh: apt-get install chromium)"),
]

from rlvr.lab import run_lab  # noqa: E402
from rlvr.lab.effects import load_atlas  # noqa: E402
from rlvr.lab.effects_page import page_data, render  # noqa: E402
from rlvr.lab.runs import measured, read_run  # noqa: E402

from .test_app import free_port  # noqa: E402


def _spread(xs: list[float], scale: float = 1.0) -> list[float]:
    """Mean and, over 2+ runs, sample standard deviation: the numbers a cell shows (in its unit)."""
    return [scale * statistics.fmean(xs)] + ([scale * statistics.stdev(xs)] if len(xs) > 1 else [])


def _expected_cells(atlas: dict, knob: str) -> dict[str, dict[str, list[float]]]:
    """Per value, the numbers each cell must show, recomputed here from the atlas file's run cards."""
    out = {}
    for entry in atlas["knobs"][knob]:
        cards = [atlas["runs"][run] for run in entry["runs"]]
        gold = [c["evals"]["gold_pass@1"] for c in cards]
        greedy = [c["evals"]["gold_greedy"] for c in cards]
        out[entry["value"]] = {
            "pass1": _spread([g[0] for g in gold], 100) + _spread([g[-1] for g in gold], 100),
            "greedy": _spread([g[0] for g in greedy], 100) + _spread([g[-1] for g in greedy], 100),
            "wall": _spread([c["wall_s"] for c in cards]),
            "memory": [statistics.fmean(c["memory"]["peak_total"] for c in cards) / 2**20],
            "runs": [len(cards), *(c["seed"] for c in cards), atlas["steps"]],
        }
    return out


def _shows(shown: str, expected: list[float]) -> bool:
    """The cell's leading numbers equal the expected ones to the digits it prints (within half a
    unit of the last printed digit: JavaScript and Python may round a tie differently)."""
    printed = re.findall(r"-?\d+(?:\.(\d+))?", shown)
    values = [float(m.group(0)) for m in re.finditer(r"-?\d+(?:\.\d+)?", shown)][: len(expected)]
    digits = [len(decimals) for decimals in printed][: len(expected)]
    return len(values) == len(expected) and all(
        abs(v - e) <= 0.5 * 10**-d + 1e-9 for v, e, d in zip(values, expected, digits, strict=True)
    )


def _estimate_gib(cli, model: str, beta: str) -> str:
    """`rlvr memory`'s peak for the default algorithm and G at this beta, as the page writes it."""
    done = cli("memory", "--model", model, "--algorithm", "grpo", "--group", "8", "--beta", beta, "--json")
    return f"{json.loads(done.stdout)['components']['peak_total']['bytes'] / 2**30:.1f} GiB"


def test_first_page_shows_every_knob_from_the_shipped_atlas(tmp_path: Path, cli) -> None:
    """A fresh lab folder (no run of yours): every knob's values side by side, numbers as in the file."""
    atlas = load_atlas()
    app, url = run_lab(tmp_path / "runs", free_port(), block=False)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(url)
            frame = page.frame_locator("#effects-frame")
            playwright.expect(frame.locator("#provenance")).to_contain_text(atlas["made"]["machine"], timeout=60_000)
            playwright.expect(frame.locator("#provenance")).to_contain_text(atlas["command"])
            for knob in atlas["knobs"]:
                frame.locator(f"#knob-{knob}").click()
                playwright.expect(frame.locator(f"#knob-{knob}")).to_have_attribute("aria-pressed", "true")
                expected = _expected_cells(atlas, knob)
                rows = frame.locator("#effects-table tr[data-value]")
                playwright.expect(rows).to_have_count(len(expected))
                for value, cells in expected.items():
                    row = frame.locator(f'#effects-table tr[data-value="{value}"]')
                    for column, numbers in cells.items():
                        shown = row.locator(f'td[data-col="{column}"]').inner_text()
                        assert _shows(shown, numbers), (knob, value, column, shown, numbers)
                # one line per effect, and every curve chart drawn with one line per value
                assert frame.locator("#readings li").count() >= 4
                lines = frame.locator('.chart[data-metric="reward"] polyline')
                playwright.expect(lines).to_have_count(len(expected))
                page.screenshot(path=str(tmp_path / f"effects-{knob}.png"), full_page=True)
            # the memory estimate follows the chosen real model, as `rlvr memory` computes it
            frame.locator("#knob-beta").click()
            frame.locator("#model").select_option("Llama-3-8B")
            for beta in ("0.0", "0.4"):
                cell = frame.locator(f'#effects-table tr[data-value="{beta}"] td[data-col="estimate"]')
                playwright.expect(cell).to_contain_text(_estimate_gib(cli, "Llama-3-8B", beta))
            kl = frame.locator('.chart[data-metric="kl"] polyline[data-value="0.0"]')
            playwright.expect(kl).to_have_count(0)  # β = 0 holds no reference: no KL line, not a line at 0
            browser.close()
    finally:
        app.close()
    assert errors == []
    assert all((tmp_path / f"effects-{knob}.png").stat().st_size > 10_000 for knob in atlas["knobs"])
    _keep_screenshots(tmp_path)


DRAWN = "['readings', 'legend', 'charts', 'table'].map(id => document.getElementById(id).innerHTML)"
"""What the first page draws for a knob: readings, legend, charts and table, as HTML."""


def test_your_runs_are_drawn_only_on_request_each_named(your_runs: Path, tmp_path: Path) -> None:
    """The first page, opened over a folder with runs of yours, draws exactly what it draws over an
    empty folder until "your runs" is ticked; then your runs are rows and dashed curves of their own."""
    atlas = load_atlas()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        errors: list[str] = []
        drawn: dict[tuple[str, str], list[str]] = {}
        for name, root in (("none", tmp_path / "empty"), ("yours", your_runs)):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})  # a fresh page: its script declares D
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.set_content(render(page_data(root)))
            for knob in atlas["knobs"]:
                page.locator(f"#knob-{knob}").click()
                drawn[name, knob] = page.evaluate(DRAWN)
        for knob in atlas["knobs"]:
            assert drawn["yours", knob] == drawn["none", knob], knob
        page.locator("#your-runs").check()
        page.locator("#knob-beta").click()
        yours = page.locator('#effects-table tr[data-source="yours"]')
        playwright.expect(yours).to_have_count(3)
        playwright.expect(page.locator("#effects-table tr[data-source=shipped]")).to_have_count(
            len(atlas["knobs"]["beta"])
        )
        cut = page.locator(
            '#effects-table tr[data-value="yours: grpo, β 0.04, seed 0, running/interrupted at step 2 of 5"]'
        )
        playwright.expect(cut).to_contain_text("unfinished: running/interrupted at step 2 of 5")
        assert "n/a → n/a" not in page.locator("#effects-table").inner_text()
        legend = page.locator("#legend span").all_inner_texts()
        assert len(legend) == len(atlas["knobs"]["beta"]) + 3 and all(text.strip() for text in legend)
        dashed = page.locator('.chart[data-metric="reward"] polyline[stroke-dasharray]')
        playwright.expect(dashed).to_have_count(3)  # your runs' curves, apart from the atlas's
        page.locator("#knob-algorithm").click()
        playwright.expect(page.locator("#readings li.yours").first).to_contain_text("your 3-step runs: ")
        page.screenshot(path=str(tmp_path / "effects-yours.png"), full_page=True)
        browser.close()
    assert errors == []
    _keep_screenshots(tmp_path)


def _pass_at_1(runs_root: Path, beta: str) -> str:
    return f"{100 * measured(read_run(runs_root / 'sweep' / f'beta{beta}'))['pass@1'][1]:.1f}%"


def test_views_in_a_browser(
    runs_root: Path, eval_json: Path, capture_html: Path, compare_dir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    shutil.copytree(runs_root, root)  # the live run lands here, not among the shared runs
    (root / "compare").mkdir()  # the comparison's outputs only: its runs would add knob values
    for name in ("compare.json", "compare.png"):
        shutil.copy(compare_dir / name, root / "compare" / name)
    app, url = run_lab(root, free_port(), block=False)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.get_by_role("tab", name="One run").click()
            answer = page.locator("#knobs-answer")
            # the first value of every knob is the beta=0.0 run
            playwright.expect(answer).to_contain_text("beta=0.0 ", timeout=60_000)
            playwright.expect(answer).to_contain_text(_pass_at_1(runs_root, "0.0"))
            page.screenshot(path=str(tmp_path / "knobs-beta0.0.png"), full_page=True)
            page.locator("#knob-beta input").click()
            page.get_by_role("option", name="0.04").click()
            playwright.expect(answer).to_contain_text("beta=0.04 ", timeout=30_000)
            playwright.expect(answer).to_contain_text(_pass_at_1(runs_root, "0.04"))
            page.screenshot(path=str(tmp_path / "knobs-beta0.04.png"), full_page=True)
            page.get_by_role("tab", name="Run live").click()
            page.get_by_role("button", name="Run live").click()  # the knobs chosen above: a 2-step run
            status = page.locator("#live-status")
            playwright.expect(status).to_contain_text("running", timeout=30_000)
            playwright.expect(status).to_contain_text("ended (exit code 0); 2 steps logged", timeout=180_000)
            page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
            page.get_by_role("tab", name="Memory").click()
            playwright.expect(page.locator("#memory")).to_contain_text("peak_total", timeout=30_000)
            page.screenshot(path=str(tmp_path / "memory.png"), full_page=True)
            page.get_by_role("tab", name="Compression or new capability?").click()
            playwright.expect(page.locator("#passk-answer")).to_contain_text("n=4 samples", timeout=30_000)
            playwright.expect(page.locator("#passk-answer")).to_contain_text("paired 95% interval")
            playwright.expect(page.locator("#passk-table")).to_contain_text("model - base", timeout=30_000)
            for regime in ("sharpening", "expansion"):  # both sides of the debate, as measured and shipped
                playwright.expect(page.locator(f"#regime-{regime}")).to_contain_text("k=256", timeout=30_000)
                playwright.expect(page.locator(f"#regime-plot-{regime}")).to_be_visible()
            page.screenshot(path=str(tmp_path / "passk.png"), full_page=True)
            page.get_by_role("tab", name="One step").click()
            playwright.expect(page.frame_locator("#capture-frame").locator("body")).to_contain_text(
                "query 0:",
                timeout=30_000,  # drawn by the page's script: it ran without an error
            )
            page.locator("#replay-button").click()  # the chosen capture, replayed with the default controls
            playwright.expect(page.locator("#replay-text")).to_contain_text("gradient norm", timeout=60_000)
            playwright.expect(page.frame_locator("#replay-frame").locator("body")).to_contain_text(
                "query 0:",
                timeout=30_000,  # drawn by the page's script: it ran without an error
            )
            page.screenshot(path=str(tmp_path / "one-step.png"), full_page=True)
            page.get_by_role("tab", name="Paradigms compared").click()
            playwright.expect(page.locator("#compare-answer")).to_contain_text("grpo, ppo, dpo", timeout=30_000)
            playwright.expect(page.locator("#paradigm-estimate")).to_contain_text("critic_weights", timeout=30_000)
            page.screenshot(path=str(tmp_path / "paradigms.png"), full_page=True)
            page.get_by_role("tab", name="Where verifiers break").click()
            page.get_by_role("button", name="Run the hostile completions").click()
            playwright.expect(page.locator("#hostile")).to_contain_text("protocol_violation", timeout=60_000)
            page.screenshot(path=str(tmp_path / "verifiers.png"), full_page=True)
            browser.close()
    finally:
        app.close()
    assert all(
        (tmp_path / name).stat().st_size > 10_000
        for name in (
            "knobs-beta0.0.png",
            "knobs-beta0.04.png",
            "live.png",
            "memory.png",
            "passk.png",
            "one-step.png",
            "paradigms.png",
            "verifiers.png",
        )
    )
    [live_run] = [path for path in root.glob("lab-*") if (path / "summary.json").is_file()]
    assert "beta: 0.04" in (live_run / "config.yaml").read_text()
    _keep_screenshots(tmp_path)


SCREENSHOTS = {"effects-beta.png": "effects-beta.png", "effects-algorithm.png": "effects-algorithm.png",
               "effects-yours.png": "effects-yours.png",
               "effects-fidelity.png": "effects-fidelity.png", "knobs-beta0.04.png": "one-run.png", "live.png": "live.png", "memory.png": "memory.png",
               "passk.png": "passk.png", "one-step.png": "one-step.png", "paradigms.png": "paradigms.png",
               "verifiers.png": "verifiers.png"}  # fmt: skip
"""This test's screenshots -> the names docs/lab.md shows."""


def _keep_screenshots(taken: Path) -> None:
    """With RLVR_LAB_SCREENSHOTS=DIR (e.g. docs/lab), the screenshots this run took are copied
    there: how docs/lab.md's pictures are made, from the lab as it is."""
    keep = os.environ.get("RLVR_LAB_SCREENSHOTS")
    if keep:
        for name, saved_as in SCREENSHOTS.items():
            if (taken / name).is_file():  # each test keeps the pictures it took
                shutil.copy(taken / name, Path(keep) / saved_as)
