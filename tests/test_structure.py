"""The structure a newcomer can hold in their head, checked on the source as written:

- the engine knows no task by name: what a task adds is looked up in the task registry;
- files in the engine, the studies, the CLI and the config stay short enough to read whole, and no
  function outside the sandbox drivers runs past one screen;
- nothing in src/ starts the `rlvr` command line: a child process starts a library entry point.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rlvr"

TASK_WORDS = ("arith", "funcsynth", "proofs", "reasoning_gym", "gsm8k", "jsonl")
"""Built-in task names (and the GSM8K format): none may appear in engine/, not even in a comment."""

SHORT_PACKAGES = ("engine", "studies", "cli", "config")
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60
LONG_FUNCTIONS_ALLOWED = ("sandbox/pool_worker.py",)
"""Besides sandbox/*_driver.py: the code that runs inside a sandbox is one straight script each."""


def _sources(*packages: str) -> list[Path]:
    roots = [SRC / p for p in packages] if packages else [SRC]
    return sorted(path for root in roots for path in root.rglob("*.py"))


def _long_functions(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({length} lines)")
    return found


def _exempt(path: Path) -> bool:
    relative = path.relative_to(SRC).as_posix()
    return relative in LONG_FUNCTIONS_ALLOWED or re.fullmatch(r"sandbox/\w+_driver\.py", relative) is not None


def test_the_engine_names_no_task() -> None:
    pattern = re.compile(r"\b(" + "|".join(TASK_WORDS) + r")\b")
    hits = []
    for path in _sources("engine"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == "verifiers":  # the environment adapter's task
                hits.append(f"{path.relative_to(SRC)}:{node.lineno}: the task name 'verifiers'")
    assert hits == []


@pytest.mark.parametrize("package", SHORT_PACKAGES)
def test_files_of_the_engine_studies_cli_and_config_are_short(package: str) -> None:
    assert (SRC / package).is_dir(), f"src/rlvr/{package}/ is one of the packages this test holds short"
    long_files = [
        f"{path.relative_to(SRC)} ({n} lines)"
        for path in _sources(package)
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    ]
    assert long_files == []


def test_no_function_outside_the_sandbox_drivers_runs_past_sixty_lines() -> None:
    found = [hit for path in _sources() if not _exempt(path) for hit in _long_functions(path)]
    assert found == []


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "    return x\n")
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        assert [hit.split()[1] for hit in _long_functions(source)] == ["f"]
        assert not _exempt(source)
    finally:
        SRC = saved
    assert _exempt(SRC / "sandbox" / "python_driver.py") and _exempt(SRC / "sandbox" / "pool_worker.py")
