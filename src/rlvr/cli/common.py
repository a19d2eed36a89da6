"""What every subcommand shares: the parser class, the parent parser of --config/--set/--seed/--out,
`type=` validators for flag values, and the error a bad combination of flags raises.

A bad flag value is refused while parsing: argparse prints `rlvr CMD: error: argument --FLAG: ...`
on one line and exits with code 2, before any model or dataset is loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from rlvr.errors import UserError

USAGE_ERROR = 2
"""The exit code of every mistake a user can make on the command line."""


class UsageError(UserError):
    """A bad combination of command-line flags."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, like every other rlvr error (`--help` shows
    the usage); its subcommand parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


@dataclass(frozen=True)
class Flag:
    """One of the shared flags as a subcommand words it: its help, and a default or required."""

    help: str
    default: Any = None
    required: bool = False


def run_options(
    *,
    config: str | Flag | None = None,
    overrides: str | Flag | None = None,
    seed: str | Flag | None = None,
    out: str | Flag | None = None,
) -> argparse.ArgumentParser:
    """The parent parser (argparse `parents=[...]`) of the flags most subcommands share, in this
    order: --config PRESET, --set KEY=VALUE (repeatable, into `overrides`), --seed N and --out.
    Each flag given a help text (or a Flag) is added; the others are left out."""
    parent = argparse.ArgumentParser(add_help=False)

    def add(name: str, flag: str | Flag | None, **kwargs: Any) -> None:
        if flag is None:
            return
        flag = flag if isinstance(flag, Flag) else Flag(flag)
        if flag.required:
            kwargs["required"] = True
        if flag.default is not None:
            kwargs["default"] = flag.default
        parent.add_argument(name, help=flag.help, **kwargs)

    add("--config", config)
    add("--set", overrides, dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    add("--seed", seed, type=int)
    add("--out", out)
    return parent


def add_quiet(parser: argparse.ArgumentParser, help: str = "no progress bar") -> None:
    parser.add_argument("--quiet", action="store_true", help=help)


def int_at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """A `type=` for an integer flag that must be >= minimum; `why` (" (...)") says why."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}{why}; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}{why}; got {text!r}")
        return value

    return parse


def number_above(bound: float, why: str = "") -> Callable[[str], float]:
    """A `type=` for a number flag that must be > bound; `why` (" (...)") says why."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number > {bound:g}{why}; got {text!r}") from None
        if not value > bound:  # NaN too
            raise argparse.ArgumentTypeError(f"expected a number > {bound:g}{why}; got {text!r}")
        return value

    return parse


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


def quiet_hugging_face() -> None:
    """rlvr shows its own progress; HF's bars for every save and load are noise."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
