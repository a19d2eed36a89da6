"""`type=` validators for flag values, shared by the subcommands.

A bad flag value is refused while parsing: argparse prints `rlvr CMD: error: argument --FLAG: ...`
on one line and exits with code 2, before any model or dataset is loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _checked(convert: Callable[[str], T], ok: Callable[[T], bool], expected: str) -> Callable[[str], T]:
    """A `type=` that converts a flag's text and checks the value; either failure says what was expected."""

    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}")
        return value

    return parse


def int_at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """A `type=` for an integer flag that must be >= minimum; `why` (" (...)") says why."""
    return _checked(int, lambda value: value >= minimum, f"an integer >= {minimum}{why}")


def number_above(bound: float, why: str = "") -> Callable[[str], float]:
    """A `type=` for a number flag that must be > bound (NaN is not); `why` (" (...)") says why."""
    return _checked(float, lambda value: value > bound, f"a number > {bound:g}{why}")


def int_list(noun: str, example: str, minimum: int | None = None, why: str = "") -> Callable[[str], list[int]]:
    """A `type=` for a comma-separated list of integers ("1,2,4"), in the order given, at least one,
    each >= minimum when one is set; `noun` names one value in the errors ("every k must ...")."""

    def parse(text: str) -> list[int]:
        try:
            values = [int(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated integers, e.g. {example}; got {text!r}"
            ) from None
        if not values:
            raise argparse.ArgumentTypeError(f"give at least one {noun}, e.g. {example}")
        if minimum is not None and min(values) < minimum:
            raise argparse.ArgumentTypeError(f"every {noun} must be >= {minimum}{why}; got {text!r}")
        return values

    return parse


def name_list(text: str) -> list[str]:
    """A `type=` for a comma-separated list of names ("grpo,dpo"); blanks dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


SEEDS = int_list("seed", "0,1,2")
"""--seeds: comma-separated training seeds."""
