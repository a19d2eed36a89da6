"""`rlvr lab`: a local web page over run directories and rlvr's library functions (needs `rlvr[lab]`)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from rlvr.errors import UserError

INSTALL_HINT = "pip install 'rlvr[lab]'  (or: pip install gradio)"


def _import_gradio():
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a local lab
    try:
        import gradio
    except ImportError:
        raise UserError(f"rlvr lab needs Gradio, which is not installed; install it with: {INSTALL_HINT}") from None
    return gradio


def run_lab(runs: str | Path = "runs", port: int = 7860, *, block: bool = True):
    """Serve the lab on http://127.0.0.1:PORT, reading and writing run directories under `runs`.

    With block=False the server runs in a thread and (app, url) is returned; close with app.close().
    """
    _import_gradio()
    from rlvr.lab.app import build_app
    from rlvr.lab.live import LiveRuns

    if not 0 < port < 65536:
        raise UserError(f"--port {port}: pick a port between 1 and 65535 (default 7860)")
    live = LiveRuns(runs)
    app = build_app(runs, live)
    try:
        _, url, _ = app.launch(
            server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, show_error=True
        )
    except OSError:
        raise UserError(f"--port {port} is in use; pick another with --port N") from None
    print(f"rlvr lab: serving {Path(runs)} at {url} (Ctrl-C stops it and any run started from the page)", flush=True)
    if not block:
        return app, url
    # `kill PID` must also end the runs started from the page: turn SIGTERM into an orderly exit
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        app.block_thread()
    finally:
        live.stop_all()
        app.close()
    return app, url
