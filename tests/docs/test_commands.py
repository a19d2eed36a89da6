"""Every `rlvr` command line shown in README.md and docs/*.md code blocks is one the CLI accepts:
argparse parses it, its --config file exists, and each --set / --grid names a config key with a
value that validates. A command shown with the `rlvr: error: ...` it prints must print exactly that.

Synopsis lines (`rlvr eval --model PATH [--n N]`) are checked too: optional groups are unwrapped
and UPPER-CASE placeholders stand in for a value of the option's type.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlvr.cli import build_parser, main
from rlvr.config import RunConfig, apply_mapping, eval_set_problem, load_config, parse_override
from rlvr.errors import UserError
from rlvr.studies.sweep import parse_grid, plan

from .mdtext import DOCS, REPO, fenced_blocks, logical_lines, relative

_COMMAND = re.compile(r"^(?:\.venv/bin/)?rlvr\s+[a-z][a-z-]*(?:\s|$)")  # not output such as "rlvr eval: 200 ..."
_OPTIONAL_GROUP = re.compile(r"\[(--[^\[\]]*)\]")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(=[A-Z][A-Z0-9_]*)?$")  # PATH, N, KEY=VALUE
_ERROR_PREFIX = "rlvr: error: "
# Settings that are right but need something this machine may lack (an extra, a GPU).
_NEEDS_ENVIRONMENT = re.compile(r"needs the [\w-]+ package|needs a CUDA GPU")

# Command lines the docs show for a feature the code does not have yet: "file: command" -> the feature.
# strict: the case fails once the feature exists, so the entry is removed then.
MISSING_FEATURES: dict[str, str] = {}


@dataclass(frozen=True)
class DocCommand:
    path: str
    line: int
    text: str
    error: str | None  # the `rlvr: error: ...` message the page shows right below the command

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def doc_commands(path: Path) -> list[DocCommand]:
    commands = []
    for block in fenced_blocks(path):
        logical = logical_lines(block)
        prompted = any(text.lstrip().startswith("$ ") for _, text in logical)
        for index, (number, text) in enumerate(logical):
            text = text.strip()
            if prompted:  # a shell transcript: only `$ ` lines are commands, the rest is their output
                if not text.startswith("$ "):
                    continue
                text = text[2:].strip()
            if not _COMMAND.match(text):
                continue
            following = logical[index + 1][1].strip() if prompted and index + 1 < len(logical) else ""
            error = following[len(_ERROR_PREFIX) :] if following.startswith(_ERROR_PREFIX) else None
            commands.append(DocCommand(relative(path), number, text, error))
    return commands


def _argv(command: DocCommand) -> list[str]:
    text = _OPTIONAL_GROUP.sub(r"\1", command.text)
    tokens = [t for t in shlex.split(text, comments=True) if t != "..."]
    return tokens[1:]  # drop `rlvr` / `.venv/bin/rlvr`


def _stand_in(subparser, argv: list[str], index: int) -> str:
    """A value of the right type for the placeholder argv[index] (an option's value)."""
    option = argv[index - 1] if index else ""
    action = subparser._option_string_actions.get(option)  # argparse has no public lookup
    if action is not None and action.choices:
        return str(next(iter(action.choices)))
    if action is not None and action.type is not None:  # int, float or an rlvr.cli.validators one
        return "1"
    return argv[index]


def _subparser(parser, name: str):
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[name]


def _parse(argv: list[str]):
    """(namespace, None), (None, None) for --help, or (None, argparse's error line)."""
    parser = build_parser()
    subparser = _subparser(parser, argv[0]) if argv else None
    argv = [_stand_in(subparser, argv, i) if subparser and _PLACEHOLDER.match(t) else t for i, t in enumerate(argv)]
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
            return parser.parse_args(argv), None
    except SystemExit as exit_:
        return None, None if exit_.code == 0 else stderr.getvalue().strip().splitlines()[-1]


def _is_placeholder(value: str | None) -> bool:
    return value is not None and bool(_PLACEHOLDER.match(value))


def _config_problem(args) -> str | None:
    """What load_config (or the sweep planner) says about the command's --config/--set/--grid, or None."""
    config = getattr(args, "config", None)
    if _is_placeholder(config):
        config = None
    elif config is not None:
        if not (REPO / config).is_file():
            return f"--config {config}: no such file in the repository"
        config = str(REPO / config)
    overrides = [o for o in getattr(args, "overrides", None) or [] if not _is_placeholder(o)]
    if getattr(args, "replay", None):
        outside = [o for o in overrides if not o.startswith("algo.")]
        if outside:
            return f"--replay recomputes only algo.* settings, not {', '.join(outside)}"
    if args.command == "train" and args.seed is not None:
        overrides.append(f"train.seed={args.seed}")
    if args.command == "eval" and eval_set_problem(overrides, args.task or "arith"):
        return eval_set_problem(overrides, args.task or "arith")
    try:
        for text in overrides:  # each key exists and its value has the field's type
            section, name, value = parse_override(text)
            apply_mapping(RunConfig(), {section: {name: value}}, f"--set {text}")
        if args.command == "sweep":
            plan(config, parse_grid(args.grid), args.seeds, overrides)  # --seeds parses to a list
        else:
            load_config(config, overrides)
    except UserError as error:
        return None if _NEEDS_ENVIRONMENT.search(str(error)) else str(error)
    return None


def _memory_problem(args, argv: list[str]) -> str | None:
    """`rlvr memory` checks its choices (model preset, precision, ...) only when it runs; it is
    arithmetic, so run it. A --model path is a placeholder (path/to/config.json): left out."""
    if args.command != "memory" or "/" in args.model:
        return None
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        code = main(argv)
    return None if code == 0 else stderr.getvalue().strip()


def _case(command: DocCommand):
    feature = MISSING_FEATURES.get(f"{command.path}: {command.text}")
    marks = [pytest.mark.xfail(reason=f"the code lacks: {feature}", strict=True)] if feature else []
    return pytest.param(command, id=f"{command.path}:{command.line}", marks=marks)


def problem(command: DocCommand) -> str | None:
    """What is wrong with a documented command, or None."""
    argv = _argv(command)
    args, usage = _parse(argv)
    if usage is not None:
        return f"argparse rejects it: {usage}"
    if args is None:  # --help
        return None
    found = _config_problem(args) or _memory_problem(args, argv)
    if command.error is not None and found != command.error:
        return f"the page shows 'rlvr: error: {command.error}', but rlvr says: {found}"
    return None if command.error is not None else found


COMMANDS = [command for path in DOCS for command in doc_commands(path)]


def test_the_docs_show_commands():
    assert len(COMMANDS) > 20 and {c.path for c in COMMANDS} >= {"README.md", "docs/algorithms.md"}


@pytest.mark.parametrize("command", [_case(c) for c in COMMANDS])
def test_documented_command_is_accepted(command: DocCommand):
    found = problem(command)
    assert found is None, f"{command}\n  {found}"


@pytest.mark.parametrize(
    "text, message",
    [
        ("rlvr eval --model m --set algo.beta=0.1", "--set algo.beta=0.1: rlvr eval takes only task.operands"),
        ("rlvr eval --model m --sets task.operands=5", "unrecognized arguments: --sets task.operands=5"),
        ("rlvr train --set algo.betta=0.1", "unknown config key 'algo.betta'"),
        ("rlvr train --set algo.beta=high  # a comment", "algo.beta must be a number (got 'high')"),
        ("rlvr train --config configs/missing.yaml", "--config configs/missing.yaml: no such file"),
        ("rlvr sweep --grid reward.fidelity=gold,sloppy --out s", "reward.fidelity must be one of"),
        ("rlvr inspect --replay c.json --set train.steps=2", "--replay recomputes only algo.* settings"),
        ("rlvr memory --precision fp33", "unknown precision 'fp33'"),
        ("rlvr eval --model PATH [--n N] [--k K]", None),  # a synopsis: N stands in for an integer
        ("rlvr train --set rollout.backend=vllm", None),  # right, though this machine may lack vLLM
    ],
)
def test_a_wrong_command_is_named(text, message):
    found = problem(DocCommand("page.md", 1, text, None))
    assert found is None if message is None else message in found


def test_a_shown_error_must_be_the_one_rlvr_prints(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```\n$ rlvr train --set rollout.group_size=1\nrlvr: error: group too small\n"
        "$ rlvr train \\\n    --seed 3\n```\n"
    )
    shown, plain = doc_commands(page)
    assert shown.error == "group too small" and "rollout.group_size must be >= 2" in problem(shown)
    assert (plain.line, plain.text, plain.error) == (4, "rlvr train --seed 3", None) and problem(plain) is None
