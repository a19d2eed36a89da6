"""What every subcommand shares: the parser class, `add_command` (a subcommand's parser with the
shared --config/--set/--seed/--out flags it takes), and the error a bad combination of flags raises.
The `type=` validators of flag values are in validators.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from rlvr.errors import USAGE_ERROR, UserError


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


def add_command(
    sub: argparse._SubParsersAction,
    name: str,
    run: Callable[[argparse.Namespace], int] | None,
    *,
    help: str,
    description: str | None = None,
    config: str | Flag | None = None,
    overrides: str | Flag | None = None,
    seed: str | Flag | None = None,
    out: str | Flag | None = None,
    **options: Any,
) -> argparse.ArgumentParser:
    """The parser of subcommand `name`, which `run` carries out: `help` is its line in `rlvr --help`,
    `description` heads its own --help, and it takes the shared flags given a help text (see
    `run_options`) before its own. `options` go to `add_parser` (an epilog, a formatter_class)."""
    shared = run_options(config=config, overrides=overrides, seed=seed, out=out)
    parser = sub.add_parser(name, parents=[shared], help=help, description=description, **options)
    if run is not None:
        parser.set_defaults(func=run)
    return parser


def _base_names() -> str:
    from rlvr.bases import BASE_NAMES

    return ", ".join(BASE_NAMES)


def _study_names() -> str:
    from rlvr.studies.reproduce import STUDIES

    return ", ".join(STUDIES)


REGISTRY_MARKS: dict[str, Callable[[], str]] = {"{built-in bases}": _base_names, "{studies}": _study_names}
"""Marks a command's description or epilog may hold, each replaced by its registry's names when the
help is printed (`RegistryHelp`): the registries load torch, too slow to import for every command,
and a list written out by hand drifts from them."""


class RegistryHelp(argparse.HelpFormatter):
    """--help with each of REGISTRY_MARKS in the description and epilog filled in."""

    def _format_text(self, text: str) -> str:
        for mark, names in REGISTRY_MARKS.items():
            if mark in text:
                text = text.replace(mark, names())
        return super()._format_text(text)


class RawRegistryHelp(RegistryHelp, argparse.RawDescriptionHelpFormatter):
    """RegistryHelp that keeps the description's and epilog's line breaks."""


def add_quiet(parser: argparse.ArgumentParser, help: str = "no progress bar") -> None:
    parser.add_argument("--quiet", action="store_true", help=help)


def quiet_hugging_face() -> None:
    """rlvr shows its own progress; HF's bars for every save and load are noise."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
