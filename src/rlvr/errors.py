"""Errors a user can cause. The CLI turns each into one line on stderr and exit code 2.

Kept free of heavy imports so that a bad flag is reported at once, before torch loads.
"""


class UserError(ValueError):
    """Bad input from a user (config, data, paths); the message says what is wrong and what to do."""
