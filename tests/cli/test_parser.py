"""The parser itself, before any command runs: the shared --config/--set/--seed/--out flags, the
`type=` validators, and one-line errors with exit code 2 for a bad value (nothing is loaded)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from rlvr.cli import build_parser, main
from rlvr.cli.common import run_options
from rlvr.cli.validators import int_at_least, int_list, number_above


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_int_list_keeps_order_and_repeats_and_names_the_problem():
    seeds = int_list("seed", "0,1")
    assert seeds("2, 0,2,") == [2, 0, 2]  # repeats are the command's to judge (compare refuses them)
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected comma-separated integers, e.g. 0,1; got '0,x'"):
        seeds("0,x")
    with pytest.raises(argparse.ArgumentTypeError, match="give at least one seed"):
        seeds(" , ")
    sizes = int_list("G", "2,4", minimum=2, why=" (a group of one has no baseline)")
    with pytest.raises(argparse.ArgumentTypeError, match=r"every G must be >= 2 \(a group of one has no baseline\)"):
        sizes("1,2")


def test_number_validators_refuse_out_of_range_and_nan():
    assert int_at_least(0)("0") == 0
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer >= 1; got '0'"):
        int_at_least(1)("0")
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer >= 1; got '1.5'"):
        int_at_least(1)("1.5")
    assert number_above(0)("0.5") == 0.5
    for bad in ("0", "-1", "nan", "warm"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a number > 0"):
            number_above(0)(bad)


def test_run_options_adds_only_the_flags_given():
    parent = run_options(config="c", out="o")
    assert {a.dest for a in parent._actions} == {"config", "out"}
    args = argparse.ArgumentParser(parents=[run_options(overrides="s", seed="n")]).parse_args(
        ["--set", "a.b=1", "--set", "c.d=2", "--seed", "3"]
    )
    assert args.overrides == ["a.b=1", "c.d=2"] and args.seed == 3


@pytest.mark.parametrize("command", ["train", "sweep", "compare", "inspect", "grad-variance"])
def test_commands_that_take_a_config_share_the_flags(command):
    sub = _subparsers(build_parser())[command]
    options = {option: action for action in sub._actions for option in action.option_strings}
    assert options["--config"].dest == "config" and options["--set"].dest == "overrides"
    assert options["--set"].default == [] and options["--set"].metavar == "KEY=VALUE"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["eval", "--k", "0,x"], "rlvr eval: error: argument --k: expected comma-separated integers"),
        (["eval", "--k", "0,1"], "rlvr eval: error: argument --k: every k must be >= 1"),
        (["eval", "--n", "0"], "rlvr eval: error: argument --n: expected an integer >= 1; got '0'"),
        (["eval", "--temperature", "0"], "rlvr eval: error: argument --temperature: expected a number > 0"),
        (["atlas", "--out", "a", "--seeds", "a"], "rlvr atlas: error: argument --seeds: expected comma-separated"),
        (["atlas", "--out", "a", "--jobs", "0"], "rlvr atlas: error: argument --jobs: expected an integer >= 1"),
        (["reproduce", "controls", "--jobs", "0"], "rlvr reproduce: error: argument --jobs: expected an integer >= 1"),
        (["sweep", "--grid", "a.b=1", "--out", "s", "--seeds", ""], "argument --seeds: give at least one seed"),
        (["compare", "--num-queries", "-1"], "rlvr compare: error: argument --num-queries: expected an integer >= 0"),
        (["inspect", "--step", "0"], "argument --step: expected an integer >= 1 (steps count from 1"),
        (["grad-variance", "--batches", "0"], "rlvr grad-variance: error: argument --batches: expected an integer"),
        (["eval", "--k", "1,2"], "rlvr eval: error: one of the arguments --model --run is required"),
    ],
)
def test_a_bad_flag_value_is_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_python_dash_m_runs_the_same_command():
    done = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "eval", "--k", "x"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stderr.startswith("rlvr eval: error: argument --k: ")
    assert done.stderr.count("\n") == 1
