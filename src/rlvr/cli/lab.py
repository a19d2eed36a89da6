"""`rlvr lab`: the local web page of knobs and measured effects."""

from __future__ import annotations

import argparse

from rlvr.cli.common import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "lab",
        run,
        help="a local web page: turn knobs and see measured effects from real runs (needs rlvr[lab])",
        description="Serve the lab on localhost. Its first page shows each knob's values side by side from the "
        "atlas of real runs the package ships (made by `rlvr atlas`), with your runs under --runs beside or "
        "instead of them; other tabs: single runs, live training runs started from the page, the memory "
        "estimator, pass@k, one update opened up, paradigms compared, verifiers attacked. Needs Gradio: "
        "pip install 'rlvr[lab]'.",
    )
    p.add_argument("--runs", default="runs", help="folder of run directories to read and write (default runs/)")
    p.add_argument("--port", type=int, default=7860, help="localhost port (default 7860)")


def run(args: argparse.Namespace) -> int:
    from rlvr.lab import run_lab

    run_lab(args.runs, args.port)
    return 0
