"""``math_normal.canonical``: one spelling for what readers write several ways, and never a join or
a split of values. Pure string functions: no worker, no math-verify."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.verifiers.math_normal import canonical, same_text


@pytest.mark.parametrize(
    ("text", "spelled"),
    [
        # delimiters: inline and display math are $ and $$; "\\[2pt]" is a line break, not "\["
        ("\\( 9 \\)", "$ 9 $"),
        ("Answer \\[ 9 \\]", "Answer $$ 9 $$"),
        ("1 \\\\[2pt] 2", "1 \\\\[2pt] 2"),
        # MATH-style thousands separators, and a plain comma only outside brackets
        ("32,\\! 349", "32349"),
        ("11,\\! 111,\\! 111,\\! 100", "11111111100"),
        ("14{,}916", "14916"),
        ("14 {, }916", "14916"),
        ("10\\,000", "10000"),
        ("1,000", "1000"),
        ("1,000,000.5", "1000000.5"),
        ("\\boxed{1,000}", "\\boxed{1000}"),  # a command's argument is no bracket
        ("1, 000", "1, 000"),  # a space after the comma: a list
        ("1,2", "1,2"),  # not three digits: a list
        ("(2,500)", "(2,500)"),  # inside brackets: the pair 2, 500
        ("\\{1,234\\}", "\\{1,234\\}"),  # the set of 1 and 234
        ("0,111", "0,111"),  # a leading 0 starts no thousands group
        # currency
        ("\\$10", " 10"),  # dropped for a space, so that nothing joins: "4\\$2" is "4 2"
        ("4\\$2", "4 2"),
        ("\\$1{,}000", " 1000"),
        ("$1,000.99", " 1000.99"),  # one $ touching a number
        ("1,000.99$", "1000.99 "),
        ("$\\boxed{28}", " \\boxed{28}"),  # one $ at the start: its partner is missing
        ("0\\)42", "0 42"),  # never "042"
        ("a $ b", "a $ b"),  # one $ between words is left for the form check to refuse
        # ASCII relations
        ("x <= 3", "x \\le  3"),
        ("x >= 3", "x \\ge  3"),
        # E-notation is a power of ten, exactly; Euler's number stays
        ("1e3", "1000"),
        ("-4.4e+5", "-440000"),
        ("2.5E-3", "0.0025"),
        ("1.50e2", "150"),
        ("3.e2", "300"),
        ("1e-100", "0." + "0" * 99 + "1"),
        ("1e999", "(1 \\cdot 10^{999})"),
        ("2e", "2e"),
        ("e^{2}", "e^{2}"),
        ("2e^{3}", "2e^{3}"),
        ("2 e 3", "2 e 3"),
        ("x1e3", "x1e3"),  # no mantissa of its own
        # upright letters, bases, a set in bare braces
        ("1 - \\frac{1}{\\mathrm{e}}", "1 - \\frac{1}{ e }"),
        ("2\\mathrm{e}3", "2 e 3"),  # not the E-notation 2e3
        ("204_{5}", "204_5"),
        ("204_{5}3", "204_{5}3"),  # not the base 53
        ("x_{12}", "x_{12}"),
        ("{1, 2, 3}", "\\{1, 2, 3\\}"),
        ("{1}{2}", "{1}{2}"),
        ("{42}^{1}_{43}", "{42}^{1}_{43}"),
    ],
)
def test_canonical_spelling(text: str, spelled: str) -> None:
    assert canonical(text) == spelled


def test_not_equal_is_read_from_the_gold() -> None:
    """ "5!=120" is a factorial and "=", unless the gold states a ≠ relation."""
    assert canonical("x != 3", "x \\ne 3") == "x \\ne  3"
    assert canonical("x != 3", "x \\neq 3") == "x \\ne  3"
    assert canonical("5!=120", "120") == "5!=120"


def test_same_text_ignores_spaces_only() -> None:
    assert same_text(" 204_5 ", "204_5")
    assert same_text("y = 2x + 3", "y=2x+3")
    assert not same_text("2 04", "204")
    assert not same_text("\\pi x", "\\pix")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789,{}\\!$e.+- ()[]x", max_size=16))
def test_canonical_is_idempotent(text: str) -> None:
    once = canonical(text)
    assert canonical(once) == once


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.integers(0, 999).map(str), min_size=2, max_size=5),
    separator=st.sampled_from([", ", "; ", " \\text{ and } ", ",\\quad ", " , "]),
)
def test_a_list_stays_a_list(values: list[str], separator: str) -> None:
    """Separators with a space or a word never join values into one number."""
    text = separator.join(values)
    assert canonical(text) == text
