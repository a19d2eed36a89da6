"""Errors a user can cause. The CLI turns each into one line on stderr and exit code 2.

Kept free of heavy imports so that a bad flag is reported at once, before torch loads.
"""

USAGE_ERROR = 2
"""The exit code of every error a user can cause."""


class UserError(ValueError):
    """Bad input from a user (config, data, paths); the message says what is wrong and what to do."""


class RunFailure(RuntimeError):
    """A run stopped by something that is not the user's input (a part of the run died); the message
    says what happened and how to continue. The CLI prints it as one line and exits with its
    `exit_code`: 1, or 3 for a health alarm that stopped the run."""

    exit_code = 1


def report(err: UserError | RunFailure) -> int:
    """Print `err` as the one line a user sees and return the process's exit code: 2 for a user's
    error, the failure's own code otherwise (the CLI, and the supervised training process)."""
    import sys

    print(f"rlvr: error: {err}", file=sys.stderr)
    return USAGE_ERROR if isinstance(err, UserError) else err.exit_code
