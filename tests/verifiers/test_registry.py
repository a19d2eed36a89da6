"""The verifier registry: names to shared instances; unknown names fail loudly."""

import pytest

from rlvr.verifiers.format import FormatVerifier
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.registry import UnknownVerifierError, get_verifier, known_types, register


def test_builtin_types_resolve_to_cached_instances() -> None:
    assert {"math", "format"} <= set(known_types())
    assert isinstance(get_verifier("math"), MathVerifier)
    assert isinstance(get_verifier("format"), FormatVerifier)
    assert get_verifier("math") is get_verifier("math")


def test_unknown_type_names_itself_and_the_known_types() -> None:
    with pytest.raises(UnknownVerifierError) as caught:
        get_verifier("astrology")
    message = str(caught.value)
    assert "'astrology'" in message and "math" in message and "format" in message
    assert isinstance(caught.value, ValueError)


def test_registering_a_name_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register("math")(FormatVerifier)
