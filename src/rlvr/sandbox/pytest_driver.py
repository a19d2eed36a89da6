"""Runs INSIDE the sandbox (standard library only): runs a row's ``test_*`` functions against a candidate.

DANGER, and weaker than the python driver: the row's assertions run in the candidate's own
interpreter, so the expected values ARE in the sandbox and the candidate can defeat the tests
(an object whose ``__eq__`` is always true, a trace function that jumps over ``assert`` lines, or
reading the nonce from this script's frames and writing its own frame). docs/verifiers.md,
"pytest", says which hacks this still stops; the host decides from the frame, never from output.

The host writes ``/sandbox/job.json`` ({"nonce"}), ``/sandbox/solution.py`` (the candidate) and
``/sandbox/tests.py`` (the row's test code). This script reads and deletes the job, opens the
result channel (``$RLVR_CHANNEL_FD``), execs the candidate as module ``solution``, execs the tests,
collects the functions named ``test_*`` that ``tests.py`` itself defined, runs each once, and
writes ONE JSON frame:

    {"nonce": ..., "status": "ok", "results": [{"name", "outcome", "detail", "elapsed_s"}, ...]}
        outcome: "passed" | "failed" (AssertionError) | "skipped" (a SkipTest-like exception) | "error"
    {"nonce": ..., "status": "syntax_error" | "import_raised" | "tests_raised", "detail": "..."}

What the tests' names resolve to is fixed BEFORE the candidate runs, so that defining, assigning
or monkey-patching a name cannot rig them: the tests get a copy of the builtins, copies of the
modules their ``import`` statements name (``import math`` gives a module object of their own, so
``math.isclose = ...`` or ``sys.modules["math"] = ...`` in the candidate does not reach it), and
from the candidate only its public names that are not builtins (``from solution import *``
too; a row whose entry point has a builtin's name imports it by name: ``from solution import
pow``). The copies are shallow: the objects in them (functions, classes) are
shared, and what an entry point returns is the candidate's. The driver's own code resolves
builtins through another copy, and ``__main__`` is replaced by an empty module, so patching
``builtins.exec`` or this script's functions does not steer it either.
"""

import ast
import builtins
import json
import os
import sys
import time
import types

# Functions defined below resolve builtins through this copy (Python reads a function's builtins
# from its globals when the function is created), not through the module the candidate can patch.
__builtins__ = dict(builtins.__dict__)
quote = json.encoder.encode_basestring_ascii  # the C encoder: patching json cannot rewrite frames
monotonic = time.monotonic
FunctionType, ModuleType = types.FunctionType, types.ModuleType

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
        started = monotonic()
        try:
            function()
            outcome, detail = "passed", ""
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: leaving is not passing
            outcome, detail = outcome_of(error)
        results.append({"name": name, "outcome": outcome, "detail": detail, "elapsed_s": monotonic() - started})
    return results


def encode(value):
    """JSON text of a frame (dicts, lists, str, int, finite float) without the json package."""
    kind = type(value)
    if kind is dict:
        return "{" + ",".join(quote(key) + ":" + encode(item) for key, item in value.items()) + "}"
    if kind is list:
        return "[" + ",".join(encode(item) for item in value) + "]"
    if kind is str:
        return quote(value)
    if kind is int or kind is float:
        return repr(value)
    raise TypeError("a frame holds no %s" % kind.__name__)


def module_copies(tree, real_import):
    """Shallow copies of the modules the tests' import statements name, keyed by dotted name, with
    each copied package's submodule attributes pointing at the copies (``import os.path``)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            requests = [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            requests = [(node.module, tuple(alias.name for alias in node.names))]
        else:
            continue
        for name, fromlist in requests:
            if name.partition(".")[0] == "solution":
                continue
            try:
                real_import(name, fromlist=fromlist)
            except Exception:  # the tests' own import raises it again, after the candidate: tests_raised
                continue
            parts = name.split(".")
            found.update(
                (".".join(parts[:depth]), sys.modules.get(".".join(parts[:depth])))
                for depth in range(1, len(parts) + 1)
            )
            found.update(("%s.%s" % (name, attr), getattr(sys.modules.get(name), attr, None)) for attr in fromlist)
    copies = {}
    for dotted, module in found.items():
        if type(module) is ModuleType:
            copies[dotted] = ModuleType(module.__name__)
            copies[dotted].__dict__.update(module.__dict__)
    for dotted, copy in copies.items():
        parent, _, attr = dotted.rpartition(".")
        if parent in copies:
            copies[parent].__dict__[attr] = copy
    return copies


def tests_builtins(tree, solution_view):
    """The builtins the tests run with: a copy, whose ``__import__`` hands out the module copies
    and, for ``solution``, the view holding the candidate's exported names."""
    real_import = builtins.__import__
    copies = module_copies(tree, real_import)

    def import_for_tests(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name == "solution":
            return solution_view
        if level == 0 and name in copies:
            return copies[name] if fromlist else copies[name.partition(".")[0]]
        return real_import(name, globals, locals, fromlist, level)

    return dict(builtins.__dict__, __import__=import_for_tests)


def main():
    with open("/sandbox/job.json", "rb") as handle:
        nonce = json.loads(handle.read())["nonce"]
    os.unlink("/sandbox/job.json")
    channel = os.fdopen(int(os.environ["RLVR_CHANNEL_FD"]), "w", encoding="utf-8")
    # Bound before the candidate runs, so that patching json or the channel's class cannot reach
    # them. This stops only the lazy forgery: the candidate can still read ``nonce`` from this
    # frame (see the module docstring).
    write, flush = channel.write, channel.flush

    def frame(body):
        body["nonce"] = nonce
        write(encode(body))
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
    solution_view = ModuleType("solution")
    namespace = {"__name__": "tests", "__builtins__": tests_builtins(ast.parse(test_source), solution_view)}
    module = ModuleType("solution")
    module.__dict__["__builtins__"] = builtins  # the real ones: the candidate may patch its own world
    sys.modules["solution"] = module
    sys.modules["__main__"] = ModuleType("__main__")  # `import __main__` must not reach this script
    try:
        exec(code, module.__dict__)
    except BaseException as error:  # SystemExit too: exiting at import is not an answer
        return frame({"status": "import_raised", "detail": type(error).__name__})
    public = {name: value for name, value in module.__dict__.items() if type(name) is str and not name.startswith("_")}
    # Names that would shadow a builtin reach the tests only when they ask for them by name
    # (``from solution import pow``), never through the namespace or ``from solution import *``.
    exported = {name: value for name, value in public.items() if name not in namespace["__builtins__"]}
    solution_view.__dict__.update(public, __all__=list(exported))
    namespace.update(exported)
    try:
        exec(test_code, namespace)
    except BaseException as error:
        return frame({"status": "tests_raised", "detail": type(error).__name__})
    collected = [
        (name, value)
        for name, value in list(namespace.items())
        if type(name) is str
        and name.startswith("test_")
        and type(value) is FunctionType
        and value.__code__.co_filename == "tests.py"
    ]
    frame({"status": "ok", "results": run_tests(collected)})


main()
