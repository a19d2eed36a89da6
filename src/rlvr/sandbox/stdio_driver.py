"""Runs INSIDE the sandbox (standard library only): runs a candidate program once per test input.

The host writes ``/sandbox/job.json`` and the candidate's source. The job holds the test INPUTS
only (each test's stdin); expected outputs never enter the sandbox: the host keeps them and
compares. This script reads and deletes the job, makes itself non-dumpable (so that the candidate,
which runs as the same uid, can neither ptrace it nor read its memory or file descriptors through
/proc: the nonce, the channel and the other tests' inputs stay out of reach), optionally checks
Python syntax or compiles the source, then runs ``job["run"]`` as a child process once per test
with that test's stdin, and writes ONE JSON frame to the result channel (``$RLVR_CHANNEL_FD``):

    {"nonce": ..., "status": "ok", "results": [{"stdout_b64", "exit", "timed_out", "over_cap",
                                                 "stderr_tail", "elapsed_s"} | {"not_run": true}, ...]}
    {"nonce": ..., "status": "syntax_error", "detail": "..."}
    {"nonce": ..., "status": "compile_error" | "compile_timeout", "stderr": "..."}

Each child gets its stdin from a file and writes stdout and stderr to files in a private
directory (no pipes, so no deadlock and no busy loop here); RLIMIT_FSIZE and the tmpfs size bound
them, and only ``max_stdout + 1`` bytes are read back. A child that outlives its per-test timeout
is SIGKILLed with its process group; after a timeout the remaining tests are not run (the
completion has failed already). Anything a child leaves behind dies with the sandbox.
"""

import base64
import json
import os
import signal
import subprocess
import sys
import time

STDERR_TAIL = 512
PR_SET_DUMPABLE = 4


def make_undumpable():
    """prctl(PR_SET_DUMPABLE, 0): same-uid processes lose ptrace and /proc/<pid>/{mem,fd} access."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def run_child(argv, stdin_path, out_path, err_path, timeout_s, env):
    """Run one child; returns (exit status or None, timed_out, elapsed seconds)."""
    started = time.monotonic()
    with open(stdin_path, "rb") as stdin, open(out_path, "wb") as out, open(err_path, "wb") as err:
        child = subprocess.Popen(
            argv, stdin=stdin, stdout=out, stderr=err, cwd="/sandbox", env=env, close_fds=True, start_new_session=True
        )
    try:
        status = child.wait(timeout=max(0.01, timeout_s))
        timed_out = False
    except subprocess.TimeoutExpired:
        status, timed_out = None, True
    try:  # the whole group: a child's own children go too (setsid escapees die with the sandbox)
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if timed_out:
        child.wait()
    return status, timed_out, time.monotonic() - started


def read_head(path, limit):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


def read_tail(path, limit):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read(limit)
    except OSError:
        return b""


def main():
    with open("/sandbox/job.json", "rb") as handle:
        job = json.loads(handle.read())
    os.unlink("/sandbox/job.json")
    make_undumpable()
    channel = os.fdopen(int(os.environ.pop("RLVR_CHANNEL_FD")), "w", encoding="utf-8")
    nonce = job["nonce"]
    deadline = time.monotonic() + job["budget_s"]
    private = "/tmp/driver-" + os.urandom(8).hex()  # not derived from the nonce
    os.mkdir(private, 0o700)
    paths = {name: os.path.join(private, name) for name in ("stdin", "stdout", "stderr")}
    env = dict(os.environ)

    def frame(body):
        body["nonce"] = nonce
        channel.write(json.dumps(body))
        channel.flush()

    if job.get("python_syntax"):
        with open(job["python_syntax"], encoding="utf-8", errors="replace") as handle:
            source = handle.read()
        try:
            compile(source, "solution.py", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            return frame({"status": "syntax_error", "detail": "%s: %s" % (type(error).__name__, error)})
    if job.get("compile"):
        with open(paths["stdin"], "wb"):
            pass
        status, timed_out, _ = run_child(
            job["compile"]["argv"], paths["stdin"], paths["stdout"], paths["stderr"], job["compile"]["timeout_s"], env
        )
        if timed_out or status != 0:
            stderr = read_head(paths["stderr"], 4096).decode("utf-8", "replace")
            return frame({"status": "compile_timeout" if timed_out else "compile_error", "stderr": stderr})
    results = []
    stop = False
    for stdin_text in job["stdins"]:
        remaining = deadline - time.monotonic()
        if stop or remaining <= 0.05:
            results.append({"not_run": True})
            stop = True
            continue
        with open(paths["stdin"], "wb") as handle:
            handle.write(stdin_text.encode("utf-8"))
        status, timed_out, elapsed = run_child(
            job["run"], paths["stdin"], paths["stdout"], paths["stderr"], min(job["timeout_s"], remaining), env
        )
        stdout = read_head(paths["stdout"], job["max_stdout"] + 1)
        results.append(
            {
                "stdout_b64": base64.b64encode(stdout[: job["max_stdout"]]).decode("ascii"),
                "over_cap": len(stdout) > job["max_stdout"],
                "exit": status,
                "timed_out": timed_out,
                "stderr_tail": read_tail(paths["stderr"], STDERR_TAIL).decode("utf-8", "replace"),
                "elapsed_s": elapsed,
            }
        )
        stop = timed_out
        for path in paths.values():
            try:
                os.unlink(path)
            except OSError:
                pass
    frame({"status": "ok", "results": results})


main()
sys.exit(0)
