"""How long the lab's first page takes to redraw when a knob changes, measured in a real browser.

    .venv/bin/python benchmarks/lab_redraw.py            # the shipped atlas, 5 rounds over the 5 knobs
    .venv/bin/python benchmarks/lab_redraw.py --runs runs --rounds 10

Starts the real `rlvr lab` on a free localhost port, opens it in headless Chromium (Playwright), and
clicks every knob of the first page in turn. Two times per click:
- in the page: from the click event to the frame painted after the redraw (``window.rlvrRedraw``);
- outside: from Playwright's click to seeing the redrawn page (adds the driver's round trips).
The baseline, measured in the same run: "Re-read your runs", which asks the server to read the
runs and the atlas again and send the page anew (what a redraw would cost if the server drew it).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frame(page):
    return page.locator("#effects-frame").element_handle().content_frame()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=None, help="the lab's run folder (default: an empty one)")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the knobs (default 5)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from rlvr.lab import run_lab

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("needs the system chromium (setup.sh installs it)", file=sys.stderr)
        return 2
    runs = Path(args.runs) if args.runs else Path(tempfile.mkdtemp()) / "runs"
    app, url = run_lab(runs, _free_port(), block=False)
    in_page: dict[str, list[float]] = {}
    outside: list[float] = []
    baseline: list[float] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.wait_for_selector("#effects-frame")
            frame = _frame(page)
            frame.wait_for_function("window.rlvrRedraw !== undefined", timeout=60_000)
            knobs = frame.eval_on_selector_all("nav button", "bs => bs.map(b => b.dataset.knob)")
            for _ in range(args.rounds):
                for knob in [*knobs[1:], knobs[0]]:
                    frame.evaluate("window.rlvrRedraw = undefined")
                    start = time.perf_counter()
                    frame.click(f"#knob-{knob}")
                    frame.wait_for_function(f"window.rlvrRedraw && window.rlvrRedraw.drawn.startsWith('{knob}|')")
                    outside.append(1000 * (time.perf_counter() - start))
                    in_page.setdefault(knob, []).append(frame.evaluate("window.rlvrRedraw.ms"))
                frame.evaluate("window.stale = true")  # the page before the re-read; the new one lacks this
                # the page says when it read the runs, to the second: a re-read in the same second sends
                # the same page, which Gradio does not redraw, so wait for the next second
                time.sleep(1.05 - time.time() % 1)
                start = time.perf_counter()
                page.get_by_role("button", name="Re-read your runs").click()
                page.wait_for_function(
                    "() => { const f = document.querySelector('#effects-frame'), w = f && f.contentWindow;"
                    " return w && !w.stale && w.rlvrRedraw !== undefined; }",
                    timeout=60_000,
                )
                baseline.append(1000 * (time.perf_counter() - start))
                frame = _frame(page)
            browser.close()
    finally:
        app.close()
    everything = [ms for values in in_page.values() for ms in values]
    print(f"lab redraw on a knob change, {args.rounds} rounds x {len(knobs)} knobs, headless Chromium")
    print(f"{'knob':<12} {'median ms':>10} {'max ms':>8}   (click event -> next painted frame)")
    for knob, values in in_page.items():
        print(f"{knob:<12} {statistics.median(values):>10.1f} {max(values):>8.1f}")
    print(f"{'all':<12} {statistics.median(everything):>10.1f} {max(everything):>8.1f}")
    print(
        f"click to redrawn page, seen by Playwright: median {statistics.median(outside):.0f} ms, max {max(outside):.0f} ms"
    )
    print(f"baseline, the server re-reads and re-sends the page: median {statistics.median(baseline):.0f} ms")
    print(
        f"ratio baseline / redraw (medians, Playwright view): {statistics.median(baseline) / statistics.median(outside):.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
