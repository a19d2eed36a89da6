"""Command-line front end. Each subcommand parses arguments and calls one library function; one
module per command group, common.py for what they share (`add_command` with the --config/--set/
--seed/--out flags, UsageError) and validators.py for the `type=` checks of flag values.

Errors a user can cause (bad flag values, bad config, missing files, malformed rows) print one
line that says what is wrong and what to do, and exit with code 2; no traceback.
"""

from __future__ import annotations

import sys

from rlvr.cli import build_base, data, evaluate, grad_variance, inspect_cmd, lab, memory, plan, studies, train, verify
from rlvr.cli.common import Parser
from rlvr.errors import RunFailure, UserError, report

__all__ = ["build_parser", "main"]

SUBCOMMANDS = (
    train.add_parser,
    evaluate.add_parser,
    build_base.add_parser,
    verify.add_parser,
    data.add_parser,
    memory.add_parser,
    plan.add_parser,
    inspect_cmd.add_parser,
    grad_variance.add_parser,
    studies.add_sweep_parser,
    studies.add_atlas_parser,
    studies.add_reproduce_parser,
    studies.add_compare_parser,
    lab.add_parser,
)
"""In the order `rlvr --help` lists them."""


def build_parser() -> Parser:
    parser = Parser(prog="rlvr", description="Reinforcement learning with verifiable rewards.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UserError, RunFailure) as err:
        return report(err)
    except KeyboardInterrupt:
        print("rlvr: interrupted; a run with a checkpoint continues with --resume DIR", file=sys.stderr)
        return 130
