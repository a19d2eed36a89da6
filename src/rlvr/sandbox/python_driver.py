"""Runs INSIDE the sandbox (standard library only): calls a candidate's function on each test input.

The host writes ``job.json`` ({"nonce", "entry_point", "args": [[...], ...]}) and ``solution.py``
(the candidate's code) into the working directory: ``/sandbox`` in a fresh sandbox, the job's own
directory in a pooled one (``pool_worker.py`` runs this file in a forked child). Expected outputs
are never written: the host keeps them and compares. This script reads and deletes the job, opens the result channel
(``$RLVR_CHANNEL_FD``, a pipe to the host), runs the candidate, and writes ONE JSON frame there:

    {"nonce": ..., "status": "ok", "results": [{"value": v} | {"raised": "ValueError"} | {"bad_type": "MyStr"}, ...]}
    {"nonce": ..., "status": "syntax_error" | "import_raised" | "no_entry_point", "detail": "..."}

Values are rebuilt from exact built-in types only (a ``str`` subclass with a rigged ``__eq__`` is
``bad_type``, never a string). The candidate shares this interpreter, so it could in principle dig
the nonce out of memory and write its own frame; all it can forge that way is its own return values,
which the host judges against expectations the sandbox never saw.
"""

import json
import math
import os
import sys
import types

MAX_DEPTH = 100
MAX_INT_BITS = 12000  # about 3,600 digits, under Python's default int/str conversion limit


class NotPlain(Exception):
    """A returned value that is not plain JSON data."""


def plain(value, depth=0):
    """A fresh copy of ``value`` built from exact JSON types; NotPlain names the first odd type."""
    kind = type(value)
    if depth > MAX_DEPTH:
        raise NotPlain("nesting deeper than %d" % MAX_DEPTH)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        if value.bit_length() > MAX_INT_BITS:
            raise NotPlain("int too large")
        return value
    if kind is float:
        if not math.isfinite(value):
            raise NotPlain("non-finite float")
        return value
    if kind is list or kind is tuple:  # JSON has no tuples; a tuple is returned as a list
        return [plain(item, depth + 1) for item in value]
    if kind is dict:
        out = {}
        for key, item in dict.items(value):
            if type(key) is not str:
                raise NotPlain("dict key of type %s" % type(key).__name__)
            out[key] = plain(item, depth + 1)
        return out
    raise NotPlain(kind.__name__)


def main():
    with open("job.json", "rb") as handle:
        job = json.loads(handle.read())
    os.unlink("job.json")
    channel = os.fdopen(int(os.environ["RLVR_CHANNEL_FD"]), "w", encoding="utf-8")
    nonce, entry_point, all_args = job["nonce"], job["entry_point"], job["args"]
    del job
    emit = channel.write

    def frame(body):
        body["nonce"] = nonce
        emit(json.dumps(body, allow_nan=False))
        channel.flush()

    with open("solution.py", encoding="utf-8", errors="replace") as handle:
        source = handle.read()
    try:
        code = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError) as error:
        return frame({"status": "syntax_error", "detail": "%s: %s" % (type(error).__name__, error)})
    module = types.ModuleType("solution")
    sys.modules["solution"] = module
    try:
        exec(code, module.__dict__)
    except BaseException as error:  # SystemExit too: exiting at import is not an answer
        return frame({"status": "import_raised", "detail": type(error).__name__})
    function = module.__dict__.get(entry_point)
    if not callable(function):
        return frame({"status": "no_entry_point", "detail": "no function named %r" % entry_point})
    results = []
    for args_json in all_args:
        try:
            value = function(*json.loads(args_json))  # fresh args: one test cannot mutate the next
        except BaseException as error:
            results.append({"raised": type(error).__name__})
            continue
        try:
            results.append({"value": plain(value)})
        except NotPlain as error:
            results.append({"bad_type": str(error)})
        except RecursionError:
            results.append({"bad_type": "nesting too deep"})
    frame({"status": "ok", "results": results})


main()
