"""The only place untrusted code runs: a bubblewrap sandbox (``run_untrusted``) and its limits."""

from rlvr.sandbox.bwrap import SandboxLimits, SandboxRun, SandboxUnavailable, run_untrusted, sandbox_python

__all__ = ["SandboxLimits", "SandboxRun", "SandboxUnavailable", "run_untrusted", "sandbox_python"]
