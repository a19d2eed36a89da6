"""Runs INSIDE the sandbox (standard library only): runs a row's ``test_*`` functions against a candidate.

DANGER, and weaker than the python driver: the row's assertions run in the candidate's own
interpreter, so the expected values ARE in the sandbox and the candidate can defeat the tests
(an object whose ``__eq__`` is always true, a trace function that jumps over ``assert`` lines, or
reading the nonce from this script's frames and writing its own frame). docs/verifiers.md,
"pytest", says which hacks this still stops; the host decides from the frame, never from output.

The host writes ``/sandbox/job.json`` ({"nonce"}), ``/sandbox/solution.py`` (the candidate) and
``/sandbox/tests.py`` (the row's test code). This script reads and deletes the job, opens the
result channel (``$RLVR_CHANNEL_FD``), execs the candidate as module ``solution``, execs the tests
in a namespace holding the candidate's public names (``from solution import f`` works too),
collects the functions named ``test_*`` that ``tests.py`` itself defined, runs each once, and
writes ONE JSON frame:

    {"nonce": ..., "status": "ok", "results": [{"name", "outcome", "detail", "elapsed_s"}, ...]}
        outcome: "passed" | "failed" (AssertionError) | "skipped" (a SkipTest-like exception) | "error"
    {"nonce": ..., "status": "syntax_error" | "import_raised" | "tests_raised", "detail": "..."}
"""

import builtins
import json
import os
import sys
import time
import types

SKIP_NAMES = ("SkipTest", "Skipped", "SkipException")
"""unittest.SkipTest, pytest's Skipped, and look-alikes: a skip is never a pass."""


def outcome_of(error):
    """(outcome, detail) for an exception a test raised; only type names, never the candidate's str()."""
    names = [cls.__name__ for cls in type(error).__mro__]
    if any(name in SKIP_NAMES for name in names):
        return "skipped", names[0]
    if isinstance(error, AssertionError):
        return "failed", "AssertionError"
    return "error", names[0]


def run_tests(collected):
    results = []
    for name, function in collected:
        started = time.monotonic()
        try:
            function()
            outcome, detail = "passed", ""
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: leaving is not passing
            outcome, detail = outcome_of(error)
        results.append({"name": name, "outcome": outcome, "detail": detail,
                        "elapsed_s": time.monotonic() - started})
    return results


def main():
    with open("/sandbox/job.json", "rb") as handle:
        nonce = json.loads(handle.read())["nonce"]
    os.unlink("/sandbox/job.json")
    channel = os.fdopen(int(os.environ["RLVR_CHANNEL_FD"]), "w", encoding="utf-8")
    # Bound before the candidate runs, so that patching json.dumps or the channel's class cannot
    # reach them. This stops only the lazy forgery: the candidate can still read ``nonce`` from
    # this frame (see the module docstring).
    dumps, write, flush = json.dumps, channel.write, channel.flush

    def frame(body):
        body["nonce"] = nonce
        write(dumps(body, allow_nan=False))
        flush()

    with open("/sandbox/solution.py", encoding="utf-8", errors="replace") as handle:
        source = handle.read()
    with open("/sandbox/tests.py", encoding="utf-8") as handle:
        test_source = handle.read()
    try:
        code = compile(source, "solution.py", "exec", optimize=0)
    except (SyntaxError, ValueError) as error:
        return frame({"status": "syntax_error", "detail": "%s: %s" % (type(error).__name__, error)})
    # optimize=0 keeps every assert whatever flags the interpreter got; the host compiled the tests already.
    test_code = compile(test_source, "tests.py", "exec", optimize=0)
    module = types.ModuleType("solution")
    sys.modules["solution"] = module
    try:
        exec(code, module.__dict__)
    except BaseException as error:  # SystemExit too: exiting at import is not an answer
        return frame({"status": "import_raised", "detail": type(error).__name__})
    namespace = {name: value for name, value in module.__dict__.items() if not name.startswith("_")}
    namespace.update({"__name__": "tests", "__builtins__": builtins})
    try:
        exec(test_code, namespace)
    except BaseException as error:
        return frame({"status": "tests_raised", "detail": type(error).__name__})
    collected = [(name, value) for name, value in list(namespace.items())
                 if name.startswith("test_") and type(value) is types.FunctionType
                 and value.__code__.co_filename == "tests.py"]
    frame({"status": "ok", "results": run_tests(collected)})


main()
