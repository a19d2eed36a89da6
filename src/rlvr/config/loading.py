"""Loading a configuration: defaults, then a YAML file, then `--set section.key=value` overrides,
each value coerced to its field's declared type, then the checks (config/checks.py).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import re
import textwrap
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from rlvr.config.checks import validate
from rlvr.config.schema import ConfigError, RunConfig, choice_problem, sections


@cache
def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of a dataclass: the string literal right below each field."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr):
            if isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                docs[node.target.id] = " ".join(nxt.value.value.split())  # type: ignore[attr-defined]
    return docs


def _coerce(key: str, value: Any, annotation: Any) -> Any:
    """Convert a YAML/CLI value to the field's declared type, or raise ConfigError naming the key."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        problem = choice_problem(key, value, typing.get_args(annotation))
        if problem:
            raise ConfigError(problem)
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None or value == "":
            return None
        return _coerce(key, value, args[0])
    if origin is dict:  # a YAML mapping; from --set, flow style: key={a: 1, b: 2}
        if value is None or value == "":
            return {}
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{key} must be a mapping of names to values, e.g. {{a: 1, b: 2}} (got {value!r})")
        return copy.deepcopy(value)
    if origin is list:  # YAML list, or comma-separated text from --set
        items = [x.strip() for x in value.split(",") if x.strip()] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ConfigError(f"{key} must be a list, e.g. [a, b] (got {value!r})")
        return [_coerce(key, item, typing.get_args(annotation)[0]) for item in items]
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key} must be true or false (got {value!r})")
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} must be an integer (got {value!r})")
        return value
    if annotation is float:
        if isinstance(value, str):  # YAML 1.1 reads "1e-3" (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} must be a number (got {value!r})")
        return float(value)
    if annotation is str:
        return "" if value is None else str(value)
    raise ConfigError(f"{key}: unsupported type {annotation}")


def _apply(cfg: RunConfig, section: str, name: str, value: Any) -> None:
    key = f"{section}.{name}"
    secs = sections()
    if section not in secs:
        raise ConfigError(f"unknown config section '{section}' in '{key}'; sections: {', '.join(secs)}")
    cls = secs[section]
    hints = typing.get_type_hints(cls)
    if name not in hints:
        raise ConfigError(
            f"unknown config key '{key}'; keys of '{section}': {', '.join(hints)} (see rlvr train --help)"
        )
    value = _coerce(key, value, hints[name])
    choices = {f.name: f for f in dataclasses.fields(cls)}[name].metadata.get("choices")
    problem = choices and choice_problem(key, value, choices())  # e.g. task.name: the registered tasks
    if problem:
        raise ConfigError(problem)
    setattr(getattr(cfg, section), name, value)


def apply_mapping(cfg: RunConfig, data: Any, source: str) -> RunConfig:
    if data is None:
        return cfg
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of sections (model:, task:, ...), got {type(data).__name__}")
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: section '{section}' must be a mapping of key: value")
        for name, value in values.items():
            _apply(cfg, str(section), str(name), value)
    return cfg


class _ConfigLoader(yaml.SafeLoader):
    """YAML as the safe loader reads it, minus YAML 1.1's base-60 numbers: `4:30` stays the text
    "4:30" (a task.train_mix entry) instead of becoming the integer 270."""


_SEXAGESIMAL = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _SEXAGESIMAL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def read_yaml(text: str) -> Any:
    """A config file's or a --set value's YAML, read without base-60 numbers."""
    return yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 (a SafeLoader subclass)


def parse_override(text: str) -> tuple[str, str, Any]:
    """'algo.beta=0.1' -> ('algo', 'beta', 0.1); the value is read as YAML (numbers, true/false, strings)."""
    if "=" not in text:
        raise ConfigError(f"--set expects section.key=value, got '{text}'")
    key, raw = text.split("=", 1)
    if key.count(".") != 1:
        raise ConfigError(f"--set key must look like section.key (e.g. algo.beta), got '{key}'")
    section, name = key.split(".")
    try:
        value = read_yaml(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return section, name, value


def load_config(
    path: str | Path | None = None, overrides: list[str] = (), *, base: RunConfig | None = None
) -> RunConfig:
    """Defaults (or `base`), then the YAML file, then `--set` overrides, then validation."""
    cfg = copy.deepcopy(base) if base is not None else RunConfig()
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            data = read_yaml(p.read_text())
        except yaml.YAMLError as err:
            raise ConfigError(f"{p}: not valid YAML ({err})") from None
        apply_mapping(cfg, data, str(p))
    for text in overrides:
        _apply(cfg, *parse_override(text))
    return validate(cfg)


def config_from_dict(data: dict[str, Any]) -> RunConfig:
    return validate(apply_mapping(RunConfig(), data, "config"))


def describe_fields() -> str:
    """Every settable key with its default and docstring, for --help."""
    lines = []
    for section, cls in sections().items():
        lines.append(f"{section}:")
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else None
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            lines.append(f"  {section}.{f.name} = {default!r}\n      {docs.get(f.name, '')}")
    return "\n".join(lines)
