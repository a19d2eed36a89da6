"""Runs `rlvr ...` command lines in forks of one process that has imported rlvr, torch and
transformers once, so a page's fifty commands do not pay those imports (3-4 s) fifty times.

A fork is a fresh `rlvr` process in every way the commands see: its own working directory,
environment, process group, stdin (/dev/null), and stdout/stderr (the files it is told); it calls
the console script's function (`rlvr.cli:main`), runs the exit handlers and exits with the code a
process would (SystemExit's code; 1 and the traceback for an uncaught exception). What it cannot
show is an import that only fails when rlvr is imported in another order; `rlvr --help` and the
subprocess tests of the CLI keep that covered.

Protocol, one JSON object a line: the caller writes {"argv", "cwd", "env", "stdout", "stderr"}; the
server answers {"pid"} once the fork runs (its process group, to kill on a timeout), then {"code"}.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import traceback

PRELOAD = (
    "torch",
    "transformers",
    "rlvr.cli",
    "rlvr.bases",
    "rlvr.engine.loop",
    "rlvr.diagnostics.memory_estimate",
    "rlvr.studies.reproduce",
)


def _exit_code(err: SystemExit) -> int:
    if err.code is None or isinstance(err.code, int):
        return err.code or 0
    print(err.code, file=sys.stderr)
    return 1


def _child(request: dict, protocol: list[int]) -> None:
    """In the fork: become the command's process, run it, exit with its code. Never returns."""
    code = 1
    try:
        for fd in protocol:
            os.close(fd)
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for source, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
        sys.argv = ["rlvr", *request["argv"]]
        from rlvr.cli import main

        try:
            code = main(request["argv"])
        except SystemExit as exit_:
            code = _exit_code(exit_)
        except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
            traceback.print_exc()
            code = 1
        for thread in threading.enumerate():  # the interpreter waits for non-daemon threads
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    for name in PRELOAD:
        __import__(name)
    requests = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    protocol = [requests.fileno(), answers.fileno()]
    print(json.dumps({"ready": True}), file=answers, flush=True)
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, protocol)
        print(json.dumps({"pid": pid}), file=answers, flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), file=answers, flush=True)


if __name__ == "__main__":
    serve()
