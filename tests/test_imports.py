"""Imports flow one way: no module of src/rlvr imports one that imports it back, and no package
imports one above it in the layering below. A deferred import inside a function counts, and so
does an import only for type checking: it does not run, but a reader still has to hold both
modules in their head at once.

Read from the source with `ast`, so a new import is checked the moment it is written.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: dict[str, int] = {
    # the bottom: depends on nothing else of rlvr (algos: pure math)
    "errors": 0,
    "algos": 0,
    "types": 1,
    "rundir": 1,
    "workers": 1,
    "sandbox": 2,
    "tasks": 2,
    "eval": 2,
    "config": 3,  # validates task names and a task's settings against tasks/registry.py
    "models": 3,
    "verifiers": 3,
    "rollout": 4,
    "meters": 4,
    "engine": 5,
    "bases": 5,  # resolves model.name for the engine's builders; its warm-up reports use rollout/heldout.py
    "integrations": 5,
    "diagnostics": 6,
    "studies": 6,
    "lab": 7,
    "cli": 8,
}
"""A package may import its own layer's packages and those below; never one above."""
SAME_LAYER_FORBIDDEN = {("algos", "errors")}  # algos imports nothing else from rlvr
"""meters/ hold what the training step reads while it runs; diagnostics/ the tools that drive whole
steps (inspect, grad-variance) and sit above engine/; studies/ run whole trainings on top of the engine."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, *, type_checking: bool = True) -> set[str]:
    """rlvr modules this file imports, top-level or deferred; those under `if TYPE_CHECKING:` too
    unless `type_checking` is False."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("rlvr"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("rlvr"):
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)  # `from rlvr.x import y` may be a module
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in SRC.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports_of(path):
            while imported and imported not in modules:  # `from rlvr.x import name`: the module is rlvr.x
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def package_of(module: str) -> str:
    parts = module.split(".")[1:]  # drop "rlvr"
    return parts[0] if parts else "rlvr"


def test_no_import_cycles_among_the_modules_of_rlvr() -> None:
    assert cycles(import_graph()) == []


def test_packages_import_only_their_own_layer_and_below() -> None:
    upward = []
    for module, targets in import_graph().items():
        source = package_of(module)
        if source not in LAYERS:
            continue
        for target in targets:
            destination = package_of(target)
            if destination == source or destination not in LAYERS:
                continue
            if LAYERS[destination] > LAYERS[source] or (source, destination) in SAME_LAYER_FORBIDDEN:
                upward.append(f"{module} -> {target}")
    assert sorted(upward) == []


def test_no_two_packages_import_each_other() -> None:
    """Within one layer too: a package that imports another which imports it back is one package
    split in two (a picture of the packages would draw an arrow back up)."""
    edges = {
        (package_of(module), package_of(target))
        for module, targets in import_graph().items()
        for target in targets
        if package_of(module) != package_of(target)
    }
    assert sorted((a, b) for a, b in edges if (b, a) in edges and a < b) == []


def test_the_checker_sees_deferred_and_type_checking_imports(tmp_path: Path) -> None:
    graph = {"rlvr.a": {"rlvr.b"}, "rlvr.b": {"rlvr.c"}, "rlvr.c": {"rlvr.a"}, "rlvr.d": set()}
    assert cycles(graph) == [["rlvr.a", "rlvr.b", "rlvr.c"]]
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rlvr.train import loop\n"
        "def f():\n    from rlvr.engine.step import run_step\n"
    )
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        assert imports_of(source, type_checking=False) == {"rlvr.engine.step", "rlvr.engine.step.run_step"}
        assert imports_of(source) == {"rlvr.engine.step", "rlvr.engine.step.run_step", "rlvr.train", "rlvr.train.loop"}
    finally:
        SRC = saved
