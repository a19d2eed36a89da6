"""The reasoning-gym scoring job that runs inside ``WorkerPool`` processes (never in the trainer's).

Imports reasoning-gym, sympy and the standard library only (no ``rlvr.types``, which would pull
torch into every worker). Results are plain tuples; ``rlvr.verifiers.reasoning_gym`` turns them
into ``VerifierResult``s.

Several of reasoning-gym's ``score_answer`` functions hand the model's answer to ``eval``: Python's
own (string_insertion, spiral_matrix, binary_matrix, n_queens read a list literal that way) or
sympy's ``parse_expr`` (puzzle24, countdown, the integration and polynomial tasks), which builds
Python source from the answer and evals it. Unguarded, an answer is code that runs in the scorer:
``__import__('sys')._getframe(1).f_locals['entry']['answer']`` reads the reference answer out of
the caller, and anything else the process may do is open to it. So while a scorer runs, this worker
replaces ``builtins.eval`` with ``guarded_eval`` (only then: the standard library's own uses, such
as namedtuple's, must keep the real one while modules load): an expression evaluates only
if it is plain data, or arithmetic over names the caller handed to eval that are sympy numbers,
symbols, classes or functions, with no attribute access, subscript, lambda or dunder anywhere. What
the scorers are meant to read still reads; anything else raises, which the scorers treat as a wrong
answer. The pool's address-space cap and wall-clock kill bound what a permitted expression can
cost (``factorial(10**9)``).
"""

from __future__ import annotations

import ast
import builtins
import json
import math
import types
from typing import Any

REAL_EVAL = builtins.eval

PLAIN_BUILTINS = frozenset({"int", "float", "abs", "min", "max", "round", "pow", "True", "False", "None"})
"""Builtin names an evaluated expression may use when the caller passes its own namespace."""

_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Call, ast.keyword, ast.Tuple, ast.List,
    ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
)  # fmt: skip
"""Everything else (Attribute, Subscript, Lambda, comprehensions, f-strings, walrus, ...) is refused,
``and``/``or`` and comparisons too: no scorer's answer needs them, and ``x or y`` is one of two
values (the integration and polynomial scorers paid ``RIGHT or WRONG`` in full)."""

_SYMPY_SAFE_MODULES = ("sympy.functions.", "sympy.core.numbers", "sympy.core.symbol", "sympy.core.singleton")


class RefusedExpression(ValueError):
    """An answer that would have run as code in the scorer."""


def _sympy_value_ok(value: Any) -> bool:
    """A sympy number, symbol or expression, a class deriving from sympy's Basic (Integer, Symbol,
    Function, Add, ...) or a function from sympy.functions (sqrt, factorial, ...): nothing that
    reads strings, files or the caller."""
    import sympy

    if isinstance(value, sympy.Basic) or (isinstance(value, type) and issubclass(value, sympy.Basic)):
        return True
    if isinstance(value, types.FunctionType):
        return value.__module__.startswith(_SYMPY_SAFE_MODULES)
    return isinstance(value, (int, float)) and not isinstance(value, bool) or value is None


def _names(source: str | types.CodeType) -> set[str]:
    """The names an expression (source, or code compiled from one) refers to; refuses any that
    is not a plain expression of calls, operators and literals."""
    if isinstance(source, types.CodeType):
        if any(isinstance(const, types.CodeType) for const in source.co_consts):
            raise RefusedExpression("nested code (lambda or comprehension)")
        return set(source.co_names) | set(source.co_varnames)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise RefusedExpression(f"not an expression: {type(error).__name__}") from None
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise RefusedExpression(f"{type(node).__name__} is not allowed in an answer")
        if isinstance(node, ast.Name):
            names.add(node.id)
        if isinstance(node, ast.keyword) and node.arg is None:
            raise RefusedExpression("**kwargs is not allowed in an answer")
    return names


def guarded_eval(source: Any, globals: dict | None = None, locals: Any = None) -> Any:  # noqa: A002
    """``eval`` as reasoning-gym's scorers may use it. Without a namespace the expression may hold
    no names at all: literals and operators (the list and string answers scorers read so, the hex
    arithmetic bitwise_arithmetic checks against); with one, every
    name must be a key the caller passed (or a plain builtin such as ``int``) whose value is a
    sympy object, class or function. Raises ``RefusedExpression`` for anything else."""
    if not isinstance(source, (str, types.CodeType)):
        raise RefusedExpression(f"eval of {type(source).__name__}")
    names = _names(source)
    if globals is None and locals is None:  # literals and arithmetic on them, no names at all
        if names - {"True", "False", "None"}:
            raise RefusedExpression(f"names {sorted(names)[:3]} are not allowed in a literal answer")
        return REAL_EVAL(source, {"__builtins__": {}}, {})
    for name in names:
        if name.startswith("_"):
            raise RefusedExpression(f"name {name!r} is not allowed in an answer")
        for scope in (locals, globals):
            if isinstance(scope, dict) and name in scope:
                if not _sympy_value_ok(scope[name]):
                    raise RefusedExpression(f"name {name!r} is not a sympy value")
                break
        else:
            if name not in PLAIN_BUILTINS:
                raise RefusedExpression(f"name {name!r} is not defined for answers")
    return REAL_EVAL(source, globals, locals)


import reasoning_gym  # noqa: E402  (here so that the guard above stays beside the docstring that explains it)

TUPLE_TAG, ITEMS_TAG = "__tuple__", "__items__"
"""How a row's entry keeps tuples and maps with non-string keys (rlvr.tasks.reasoning_gym.encode)."""

_DATASETS: dict[str, Any] = {}


def decode(value: Any) -> Any:
    """A row's entry as reasoning-gym made it: tagged lists back to tuples (its ARC grids are) and
    tagged pairs back to maps with their own keys (graph_color's are ints)."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get(TUPLE_TAG), list):
            return tuple(decode(item) for item in value[TUPLE_TAG])
        if len(value) == 1 and isinstance(value.get(ITEMS_TAG), list):
            return {decode(key): decode(item) for key, item in value[ITEMS_TAG]}
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value


def dataset(name: str, config: dict[str, Any]) -> Any:
    """The dataset object whose ``score_answer`` judges rows made with ``config`` (cached): some
    scorers read their config (puzzle24's value range, decimal_arithmetic's precision)."""
    key = json.dumps([name, config], sort_keys=True)
    if key not in _DATASETS:
        _DATASETS[key] = reasoning_gym.create_dataset(name, seed=0, size=1, **config)
    return _DATASETS[key]


def score(name: str, config: dict[str, Any], entry: dict[str, Any], answer: str) -> tuple[str, Any]:
    """("ok", score), ("row_error", why) when the row names no dataset this version can build, or
    ("raised", class name) when the scorer raised on this answer."""
    try:
        scorer = dataset(name, decode(config))
    except Exception as error:  # a bad row: unknown dataset, config the dataset refuses
        return "row_error", f"reasoning-gym cannot build {name!r} with {config}: {type(error).__name__}: {error}"
    entry = decode(entry)
    builtins.eval = guarded_eval  # every eval the scorer makes, its own or sympy's, is this one
    try:
        value = scorer.score_answer(answer, entry)
    except RefusedExpression as error:
        return "raised", f"RefusedExpression: {error}"
    except Exception as error:
        return "raised", type(error).__name__
    finally:
        builtins.eval = REAL_EVAL
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "bad_score", repr(value)[:80]
    return "ok", float(value)
