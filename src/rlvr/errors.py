"""Errors a user can cause. The CLI turns each into one line on stderr and exit code 2.

Kept free of heavy imports so that a bad flag is reported at once, before torch loads.
"""


class UserError(ValueError):
    """Bad input from a user (config, data, paths); the message says what is wrong and what to do."""


class RunFailure(RuntimeError):
    """A run stopped by something that is not the user's input (a part of the run died); the message
    says what happened and how to continue. The CLI prints it as one line and exits with code 1."""
