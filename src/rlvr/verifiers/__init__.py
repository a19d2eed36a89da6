"""Verifiers: judge completions against a query's criteria; combine them into rewards.

Names are imported lazily (PEP 562 ``__getattr__``) because worker processes import this package
on their way to ``rlvr.verifiers._math_worker``: importing ``base`` eagerly would pull
``rlvr.types`` and with it torch (~4 s, ~300 MB) into every worker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Verifier": "base",
    "BaseVerifier": "base",
    "extract_answer": "base",
    "extract_code": "base",
    "MathVerifier": "math",
    "MathCriteria": "math",
    "normalize_integer": "math",
    "FormatVerifier": "format",
    "format_problem": "format",
    "UnknownVerifierError": "registry",
    "register": "registry",
    "get_verifier": "registry",
    "known_types": "registry",
    "close_verifiers": "registry",
    "RewardFunction": "reward",
    "ScoredCompletion": "reward",
    "DEFAULT_WEIGHTS": "reward",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from rlvr.verifiers.base import BaseVerifier, Verifier, extract_answer, extract_code
    from rlvr.verifiers.format import FormatVerifier, format_problem
    from rlvr.verifiers.math import MathCriteria, MathVerifier, normalize_integer
    from rlvr.verifiers.registry import (
        UnknownVerifierError,
        close_verifiers,
        get_verifier,
        known_types,
        register,
    )
    from rlvr.verifiers.reward import DEFAULT_WEIGHTS, RewardFunction, ScoredCompletion


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rlvr.verifiers' has no attribute {name!r}")
    return getattr(importlib.import_module(f"rlvr.verifiers.{_EXPORTS[name]}"), name)
