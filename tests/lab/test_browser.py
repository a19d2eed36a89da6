"""A real browser (headless system Chromium driven by Playwright) against the real lab on localhost."""

from __future__ import annotations

import os
import shutil
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
from rlvr.lab.runs import measured, read_run  # noqa: E402

from .test_app import free_port  # noqa: E402


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


SCREENSHOTS = {"knobs-beta0.04.png": "knobs.png", "live.png": "live.png", "memory.png": "memory.png",
               "passk.png": "passk.png", "one-step.png": "one-step.png", "paradigms.png": "paradigms.png",
               "verifiers.png": "verifiers.png"}  # fmt: skip
"""This test's screenshots -> the names docs/lab.md shows."""


def _keep_screenshots(taken: Path) -> None:
    """With RLVR_LAB_SCREENSHOTS=DIR (e.g. docs/lab), the screenshots this run took are copied
    there: how docs/lab.md's pictures are made, from the lab as it is."""
    keep = os.environ.get("RLVR_LAB_SCREENSHOTS")
    if keep:
        for name, saved_as in SCREENSHOTS.items():
            shutil.copy(taken / name, Path(keep) / saved_as)
