"""`rlvr train --supervise`: training in a child process, restarted from its last checkpoint when
it crashes, at most `train.max_restarts` times.

The supervisor writes the run's resolved config beside the run (``SUPERVISED``) and starts
``python -c "from rlvr.engine.supervisor import child; child()" OUT [--resume]``: the library's
entry point, not the CLI, so nothing the CLI would add (linting, a fresh-directory check) runs
twice. A child that ends with 0 ends the supervision. Exit code 2 (a user error) and 3 (a health
alarm with ``train.on_alarm=stop``) end it too: a restart would meet the same cause. Any other end
(a crash, a kill, a signal) is restarted with ``--resume`` from the run's checkpoint (from scratch
when none was written yet) and logged, in the console and as a line of the run's supervisor log
(``rundir.SUPERVISOR_LOG``:
``{"event": "start" | "exit", "attempt", "pid", "resume", "exit_code", "time"}``). The run saves a
checkpoint every ``train.save_every`` steps (1 by default), so a restart repeats at most those
steps, and a resumed run logs the numbers an uninterrupted one does (tests/engine/test_supervisor.py).

This module imports neither torch nor the engine at the top: the supervising process stays small.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from rlvr import rundir
from rlvr.config import RunConfig, config_from_dict

SUPERVISED = ".supervised-config.yaml"
"""The resolved config the supervisor hands each child (the run's own config.yaml is the trainer's)."""
LOG = rundir.SUPERVISOR_LOG
ENTRY = "from rlvr.engine.supervisor import child; child()"
FINAL = (0, 2, 3)
"""Exit codes that end the supervision: done, a user error, a health alarm that stopped the run."""


def child() -> None:
    """The training process: `python -c ENTRY OUT [--resume] [--quiet]`."""
    out = Path(sys.argv[1])
    flags = set(sys.argv[2:])
    cfg = config_from_dict(yaml.safe_load((out / SUPERVISED).read_text()))
    from rlvr.engine.loop import train
    from rlvr.errors import RunFailure, UserError, report
    from rlvr.verifiers.registry import close_verifiers

    try:
        train(cfg, out, resume="--resume" in flags, progress="--quiet" not in flags)
    except (UserError, RunFailure) as err:  # as the CLI ends on them: one line, the same exit codes
        raise SystemExit(report(err)) from None
    finally:
        close_verifiers()


def _log(out: Path, entry: dict) -> None:
    with open(out / LOG, "a") as log:
        log.write(json.dumps({**entry, "time": round(time.time(), 3)}) + "\n")


def supervise(cfg: RunConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> int:
    """Train `cfg` into `out` in a child process, restarting it after a crash; the last exit code."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SUPERVISED).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    restarts = 0
    for attempt in range(1, cfg.train.max_restarts + 2):
        command = [sys.executable, "-c", ENTRY, str(out), *(["--resume"] if resume else []),
                   *([] if progress else ["--quiet"])]  # fmt: skip
        process = subprocess.Popen(command)
        _log(out, {"event": "start", "attempt": attempt, "pid": process.pid, "resume": resume})
        code = process.wait()
        _log(out, {"event": "exit", "attempt": attempt, "pid": process.pid, "exit_code": code})
        if code in FINAL:
            return code
        if restarts == cfg.train.max_restarts:
            break
        restarts += 1
        resume = rundir.find_checkpoint(out) is not None
        where = "its last checkpoint" if resume else "the start (no checkpoint yet)"
        print(
            f"rlvr supervisor: the training process ended with code {code}; restart {restarts} of "
            f"{cfg.train.max_restarts} from {where} (log: {out / LOG})",
            file=sys.stderr,
            flush=True,
        )
    print(
        f"rlvr supervisor: the training process ended with code {code} after {restarts} restart(s), "
        f"train.max_restarts={cfg.train.max_restarts}; its log: {out / LOG}",
        file=sys.stderr,
    )
    return code if code > 0 else 1
