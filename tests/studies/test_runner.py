"""The studies' one runner: typed specs that survive JSON, children that write ordinary run
directories, and no module of src/ that starts the `rlvr` CLI."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr import rundir
from rlvr.errors import UserError
from rlvr.studies.runner import PasskSpec, RunSpec, child_command, from_json, main, run, run_many, to_json

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "configs" / "smoke.yaml")
TWO_STEPS = ("train.steps=2", "train.save_every=1", "task.num_eval=4")


def test_a_spec_round_trips_through_json() -> None:
    spec = RunSpec(out="runs/a", config="configs/smoke.yaml", overrides=("algo.beta=0.0",), seed=3, threads=1)
    assert from_json(to_json(spec)) == spec
    evaluation = PasskSpec(run_dir="runs/a", out="runs/a/eval", n=4, ks=(1, 2, 4), num_queries=3)
    assert from_json(to_json(evaluation)) == evaluation
    assert RunSpec(out="x/a-seed0").log_path() == Path("x/a-seed0.log")
    assert evaluation.log_path() == Path("runs/a.eval.log")


def test_a_child_starts_the_runner_never_the_cli() -> None:
    command = child_command(RunSpec(out="runs/a"))
    assert command[1:3] == ["-m", "rlvr.studies.runner"] and from_json(command[3]) == RunSpec(out="runs/a")


def test_a_bad_job_is_one_line_and_exit_code_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown kind 'sweep'"):
        from_json('{"kind": "sweep", "out": "x"}')
    assert main([to_json(RunSpec(out=str(tmp_path / "a"), overrides=("algo.nope=1",)))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlvr: error: ") and "algo.nope" in err and "Traceback" not in err
    assert not rundir.is_run_dir(tmp_path / "a")
    assert main([]) == 2


def test_a_child_exits_with_its_exit_code_and_its_output_flushed(tmp_path: Path) -> None:
    spec = to_json(RunSpec(out=str(tmp_path / "a"), overrides=("algo.nope=1",)))
    done = subprocess.run([sys.executable, "-m", "rlvr.studies.runner", spec], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout.startswith("rlvr runner: train -> ")
    assert done.stderr.startswith("rlvr: error: ") and "algo.nope" in done.stderr


@pytest.mark.slow
def test_children_write_normal_run_directories_and_keep_finished_ones(tmp_path: Path) -> None:
    specs = [RunSpec(out=str(tmp_path / "runs" / f"smoke-seed{seed}"), config=SMOKE, overrides=TWO_STEPS, seed=seed)
             for seed in (0, 1)]  # fmt: skip
    batch = run_many(specs, jobs=2, progress=False)
    assert batch.made == 2 and batch.failed == [], specs[0].log_path().read_text()[-2000:]
    for seed, spec in enumerate(specs):
        assert rundir.is_finished(spec.out) and rundir.has_final(spec.out) and spec.log_path().is_file()
        assert rundir.read_config(spec.out)["train"]["seed"] == seed
        assert [row["step"] for row in rundir.read_metrics(spec.out) if "reward" in row] == [1, 2]
        assert rundir.read_summary(spec.out)["steps"] == 2
    assert run_many(specs, jobs=2, progress=False).made == 0  # finished runs are kept


@pytest.mark.slow
def test_an_interrupted_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "a"
    run(RunSpec(out=str(out), config=SMOKE, overrides=TWO_STEPS, seed=0))
    rundir.summary_path(out).unlink()  # as if killed after its last checkpoint
    summary = run(RunSpec(out=str(out), config=SMOKE, overrides=(*TWO_STEPS, "train.steps=3"), seed=0))
    assert summary["steps"] == 3
    steps = [row["step"] for row in rundir.read_metrics(out) if "reward" in row]
    assert steps == [1, 2, 3]  # steps 1-2 kept from before, only step 3 trained again


# ---------------------------------------------------------------------------------------------
# Nothing in src/ starts the CLI: studies and the lab go through the runner's entry point.

CLI_MODULE = re.compile(r"(-m\s+rlvr(\.cli)?\b(?!\.))|^rlvr\.(cli|__main__)$")
"""`python -m rlvr.cli ...`, `-m rlvr`, or the CLI's module name on its own (runpy, -m)."""
LAUNCHERS = {"run", "Popen", "call", "check_call", "check_output", "system", "popen", "which", "run_module",
             "create_subprocess_exec", "create_subprocess_shell", "execl", "execlp", "execv", "execvp"}  # fmt: skip
"""Calls that start (or find) a program. A command line shown to a person to type (`rlvr memory`'s
in diagnostics/memory_setup.py, the lab's `rlvr sweep` hint) starts nothing and is not counted."""


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)))
    return {
        id(node.body[0].value)
        for node in nodes
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }


def _words(node: ast.AST) -> list[str | None]:
    elements = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    return [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in elements]


def cli_launches(source: str) -> list[str]:
    """Where this source starts the `rlvr` CLI: "-m", "rlvr.cli" in an argv list, a string that says
    `-m rlvr.cli` or names the CLI's module (runpy), or a launcher handed "rlvr" as its program."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            words = _words(node)
            if any(a == "-m" and CLI_MODULE.search(b or "") for a, b in zip(words, words[1:])):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if CLI_MODULE.search(node.value.strip()):
                found.append(f"line {node.lineno}: {node.value[:80]!r}")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in LAUNCHERS:
            program = [(_words(arg)[:1] or [None])[0] for arg in node.args[:1]]
            if program and program[0] is not None and program[0].split(" ")[0] == "rlvr":
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_check_sees_every_way_of_starting_the_cli() -> None:
    assert cli_launches('subprocess.run([sys.executable, "-m", "rlvr.cli", "train", "--out", d])')
    assert cli_launches('subprocess.run(["rlvr", "eval", "--model", m])')
    assert cli_launches('os.system(f"python -m rlvr.cli train --out {d}")')
    assert cli_launches('runpy.run_module("rlvr.cli")')
    assert cli_launches('subprocess.Popen("rlvr train --quiet", shell=True)')
    assert not cli_launches('words = ["rlvr", "memory", "--model", model]')  # a hint for a person to type
    assert not cli_launches('[sys.executable, "-m", "rlvr.studies.runner", spec]')
    assert not cli_launches('def f():\n    """Like `python -m rlvr.cli train`."""\n')


def test_no_module_in_src_starts_the_cli() -> None:
    src = REPO / "src" / "rlvr"
    found = {str(path.relative_to(src)): hits for path in src.rglob("*.py") if (hits := cli_launches(path.read_text()))}
    assert found == {}
