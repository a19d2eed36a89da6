"""DANGER: runs untrusted code. The python tool a policy calls in the middle of a rollout
(rollout.tools=python, rollout/tools.py): how a call is written and answered (``FORMATS``), and
``PythonTool.run`` executes each call's code in a slot of
its own sandbox pool (``pool.py``), with the same isolation as the verifiers' runs: no network, a
read-only root, a private tmpfs, a fresh unprivileged uid per call, rlimits and the seccomp filter.

The tool's pool is not the verifiers': a call never shares a slot, a file or a process with a
verification, and the verifier's tests and expected values are never written anywhere a call runs.
A call that hangs or floods is killed at its own limits (``ToolLimits``) and reported as an error
observation; it costs its own wall clock and nothing more.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from importlib import resources

from rlvr.sandbox.bwrap import SandboxLimits, SandboxRun, SandboxUnavailable
from rlvr.sandbox.pool import PoolJob, SandboxPool

DRIVER = resources.files("rlvr.sandbox").joinpath("tool_driver.py").read_bytes()


@dataclass(frozen=True)
class ToolFormat:
    """How a call is written and how its output is handed back."""

    call_open: str
    call_close: str
    output_open: str
    output_close: str

    def call_in(self, turn: str) -> str | None:
        """The code of the first complete call in a turn's text, or None."""
        start = turn.find(self.call_open)
        if start < 0:
            return None
        body = start + len(self.call_open)
        end = turn.find(self.call_close, max(body - 1, 0) if self.call_close.startswith("\n") else body)
        if end < 0:
            return None
        return turn[body:end]

    def observation(self, output: str) -> str:
        if self.output_close.startswith("\n") and output.endswith("\n"):
            output = output[:-1]
        return f"{self.output_open}{output}{self.output_close}"


TOOL_TAGS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
"""The tags format's markers: single tokens in the built-in tool tokenizer (models/tokenizer.py)."""
FORMATS = {
    "tags": ToolFormat(*TOOL_TAGS),
    "fenced": ToolFormat("```python\n", "\n```", "\n```output\n", "\n```\n"),
}
"""rollout.tool_format: tags (Qwen2.5's and Hermes' tag names) or fenced (ToRL's, SimpleTIR's blocks)."""


@dataclass(frozen=True)
class ToolResult:
    """What one call printed, and how it ended."""

    output: str
    """Its stdout (decoded, invalid UTF-8 replaced), followed by the error line if it failed."""
    error: str = ""
    """"" when it ran to the end; else "raised", "timeout", "output_limit" or "infrastructure"; and
    "bad_call" for a chat-format call that could not be read (rollout/tools.py; nothing ran)."""
    elapsed_s: float = 0.0


PROCESSES = 8
"""Processes (threads included) one call may run. Memory is capped per process (RLIMIT_AS, 512 MB),
so this is what bounds a call's memory as a whole: 4 GB, not the 16 GB of the default 32."""


def tool_limits(wall_s: float, output_bytes: int) -> SandboxLimits:
    """A call's limits: the verifiers' defaults with the call's own wall clock and output cap, and
    at most PROCESSES processes."""
    return SandboxLimits(
        wall_s=wall_s, cpu_s=max(1, int(wall_s + 0.999)), output_bytes=output_bytes, processes=PROCESSES
    )


class PythonTool:
    """Runs tool calls (Python source) in a pool of sandbox slots of its own."""

    def __init__(self, limits: SandboxLimits, *, slots: int | None = None) -> None:
        self.limits = limits
        self._pool = SandboxPool({"tool": DRIVER}, slots=slots)

    def run(self, calls: list[str]) -> list[ToolResult]:
        """DANGER: each call's code runs untrusted. Results in call order; raises SandboxUnavailable
        when no sandbox can run here (never a silent empty observation)."""
        if not calls:
            return []
        runs = self._pool.run_batch([PoolJob("tool", {"call.py": code}, self.limits) for code in calls])
        return [self._result(run) for run in runs]

    def close(self) -> None:
        self._pool.close()

    def _result(self, run: SandboxRun) -> ToolResult:
        stdout = run.channel.decode("utf-8", "replace")  # the driver points sys.stdout at the channel
        if run.infrastructure_error:
            return ToolResult(f"ToolError: the sandbox failed ({run.infrastructure_error})", "infrastructure")
        if run.timed_out or run.signal == signal.SIGXCPU:
            return ToolResult(f"{stdout}TimeoutError: killed after {self.limits.wall_s:g} s", "timeout", run.elapsed_s)
        if run.output_truncated:
            return ToolResult(f"{stdout}OutputLimit: killed: {run.killed_reason}", "output_limit", run.elapsed_s)
        if run.exit_code != 0:  # the driver wrote the exception's line last; a silent death says its status
            text = stdout if stdout.endswith("\n") else f"{stdout}ExitError: exit status {run.exit_code}\n"
            return ToolResult(text, "raised", run.elapsed_s)
        return ToolResult(stdout, "", run.elapsed_s)


__all__ = [
    "DRIVER",
    "FORMATS",
    "TOOL_TAGS",
    "PythonTool",
    "SandboxUnavailable",
    "ToolFormat",
    "ToolResult",
    "tool_limits",
]
