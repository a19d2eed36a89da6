"""FormatVerifier: exactly <think>...</think><answer>...</answer>, whitespace allowed around."""

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.format import FormatVerifier

# Format ignores the row's criteria, so any row type works, even one with no registered verifier.
QUERY = Query("q", "prompt", {"type": "python", "entry_point": "f"})


@pytest.mark.parametrize(
    "completion",
    [
        "<think>reasoning</think><answer>42</answer>",
        "  <think>\nmulti\nline\n</think>\n\n<answer> x </answer>\n",
        "<think></think><answer>1</answer>",  # an empty think block is allowed
    ],
)
def test_well_formed_passes(completion: str) -> None:
    result = FormatVerifier().verify(QUERY, completion)
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0)
    assert result.error_class is ErrorClass.NONE and result.detail == ""


@pytest.mark.parametrize(
    ("completion", "problem"),
    [
        ("<answer>42</answer>", "exactly one <think>, found 0"),
        ("<think>a</think>", "exactly one <answer>, found 0"),
        ("<think>a</think><think>b</think><answer>1</answer>", "exactly one <think>, found 2"),
        ("<think>a</think><answer>1</answer><answer>2</answer>", "exactly one <answer>, found 2"),
        ("<answer>1</answer><think>a</think>", "out of order"),
        ("Sure! <think>a</think><answer>1</answer>", "text before <think>"),
        ("<think>a</think> so <answer>1</answer>", "text between </think> and <answer>"),
        ("<think>a</think><answer>1</answer> done.", "text after </answer>"),
        ("<think>a</think><answer>  </answer>", "empty <answer>"),
    ],
)
def test_malformed_fails_with_named_problem(completion: str, problem: str) -> None:
    result = FormatVerifier().verify(QUERY, completion)
    assert (result.verdict, result.score) == (Verdict.FAIL, 0.0)
    assert result.error_class is ErrorClass.BAD_FORMAT
    assert problem in result.detail
