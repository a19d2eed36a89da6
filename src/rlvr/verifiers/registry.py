"""Verifiers by name: a row's ``verifier["type"]`` (or a reward component) -> a Verifier.

Factories import their module when first called, so a verifier's dependencies (math-verify now;
z3, a sandbox later) load only if a dataset uses it. Instances are cached: one math worker pool
per process, not one per batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rlvr.errors import UserError
from rlvr.types import ErrorClass, Query
from rlvr.verifiers.base import Verifier

VerifierFactory = Callable[[], Verifier]

_FACTORIES: dict[str, VerifierFactory] = {}
_INSTANCES: dict[str, Verifier] = {}
_INSTANCES_LOCK = threading.Lock()  # two threads must not build two math worker pools


class UnknownVerifierError(UserError):
    """A verifier type nobody registered; the message lists the known ones."""

    def __init__(self, type_name: object) -> None:
        known = ", ".join(known_types())
        super().__init__(f"unknown verifier type {type_name!r}; known types: {known}")
        self.type_name = type_name


def register(type_name: str) -> Callable[[VerifierFactory], VerifierFactory]:
    """Decorator: ``@register("smt")`` on a zero-argument function that builds the verifier."""

    def decorate(factory: VerifierFactory) -> VerifierFactory:
        if type_name in _FACTORIES:
            raise ValueError(f"verifier type {type_name!r} is already registered")
        _FACTORIES[type_name] = factory
        return factory

    return decorate


def known_types() -> list[str]:
    return sorted(_FACTORIES)


def get_verifier(type_name: str) -> Verifier:
    """The shared instance for ``type_name``, built on first use."""
    with _INSTANCES_LOCK:
        if type_name not in _INSTANCES:
            if type_name not in _FACTORIES:
                raise UnknownVerifierError(type_name)
            _INSTANCES[type_name] = _FACTORIES[type_name]()
        return _INSTANCES[type_name]


def criteria_problem(query: Query) -> str | None:
    """What is wrong with a row's criteria as its own verifier reads them (a math row without an
    answer, a checklist without items), or None: the verifier judges an empty completion, which every
    verifier answers from the criteria alone, without running anything."""
    result = get_verifier(query.verifier["type"]).verify(query, "")
    return result.detail if result.error_class == ErrorClass.BAD_CRITERIA else None


def close_verifiers() -> None:
    """Close every cached verifier (stopping worker pools) and forget them."""
    with _INSTANCES_LOCK:
        for verifier in _INSTANCES.values():
            close = getattr(verifier, "close", None)
            if close is not None:
                close()
        _INSTANCES.clear()


@register("math")
def _math() -> Verifier:
    from rlvr.verifiers.math import MathVerifier

    return MathVerifier()


@register("format")
def _format() -> Verifier:
    from rlvr.verifiers.format import FormatVerifier

    return FormatVerifier()


@register("reasoning")
def _reasoning() -> Verifier:
    from rlvr.verifiers.reasoning import ReasoningVerifier

    return ReasoningVerifier()


@register("reasoning_gym")
def _reasoning_gym() -> Verifier:
    from rlvr.verifiers.reasoning_gym import ReasoningGymVerifier

    return ReasoningGymVerifier()


@register("verifiers")
def _verifiers() -> Verifier:
    from rlvr.verifiers.vf_rubric import VerifiersRubricVerifier

    return VerifiersRubricVerifier()


@register("python")
def _python() -> Verifier:
    from rlvr.verifiers.python import PythonVerifier

    return PythonVerifier()


@register("stdio")
def _stdio() -> Verifier:
    from rlvr.verifiers.stdio import StdioVerifier

    return StdioVerifier()


@register("c")
def _c() -> Verifier:
    from rlvr.verifiers.c import CVerifier

    return CVerifier()


@register("smt")
def _smt() -> Verifier:
    from rlvr.verifiers.smt import SmtVerifier

    return SmtVerifier()


@register("lean")
def _lean() -> Verifier:
    from rlvr.verifiers.lean import LeanVerifier

    return LeanVerifier()


@register("coq")
def _coq() -> Verifier:
    from rlvr.verifiers.coq import CoqVerifier

    return CoqVerifier()


@register("checklist")
def _checklist() -> Verifier:
    from rlvr.verifiers.checklist import ChecklistVerifier

    return ChecklistVerifier()


@register("pytest")
def _pytest() -> Verifier:
    from rlvr.verifiers.pytest_style import PytestVerifier

    return PytestVerifier()
