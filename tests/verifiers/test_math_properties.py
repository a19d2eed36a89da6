r"""Properties of the math verifier on random answers: a pass is always the gold, in some form.

Strings come from hypothesis: arbitrary text, and text built from math-ish tokens (digits, ``x``,
``=``, ``,``, ``\lor``, ``\{``, ``\}``, ``\\``, ``or``, ``and``, ``<``, spaces, newlines), which is
where hedges live. Whether a passed string IS the gold is decided here, independently of the
verifier and of math-verify (STYLE.md habit 7): ``value_of`` reads a small LaTeX arithmetic
(numbers, ``+ - * /``, ``\frac``, ``\cdot``, ``|…|``, parentheses) with Python's own parser and
exact fractions, after the wrappers every verifier accepts (``$…$``, a lone ``$`` at either end,
``\boxed{}``, ``x =``) and a
trailing unit, percent sign or degree mark, which math-verify drops.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Iterator
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.types import Query, Verdict
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.math_form import REASONS, Rejection, one_value, shape_of

TOKENS_42 = ["4", "2", "42", "43", "0", "x", "=", ",", ";", "\\lor", "\\{", "\\}", "\\\\", "or", "and", "<",
             " ", "\n", "\\boxed{", "}", "$"]  # fmt: skip
TOKENS_TWO_THIRDS = ["2/3", "4/6", "\\frac{2}{3}", "0.6666667", "0.67", "1", "x = ", "=", ",", ";", "\\lor",
                     " or ", "\\{", "\\}", "\\\\", "\n", " ", "<", "+", "-"]  # fmt: skip

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
"""Strategies whose strings are mostly judged in-process: well under a millisecond an example."""
POOLED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
"""Strategies whose strings mostly reach the math-verify workers: milliseconds an example."""

ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def tokens(alphabet: list[str], max_size: int = 8) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), max_size=max_size).map("".join)


def value_of(text: str) -> Fraction | None:
    """The exact value of ``text`` in the small LaTeX arithmetic above, or None outside it."""
    text = text.replace("~", " ").strip()
    if text.count("$") == 1 and (text.startswith("$") or text.endswith("$")):
        text = text.strip("$").strip()  # a delimiter without its partner, which every verifier drops
    # "The answer is $42$.": one span between equal runs of $ ($, $$, or a run math-verify strips alike)
    one_span = re.fullmatch(r"([A-Za-z ]*)(\$+)([^$]*)\2([A-Za-z .]*)", text)
    text = one_span.group(3).strip() if one_span else text
    text = re.sub(r"^\\boxed\{(.*)\}$", r"\1", text, flags=re.DOTALL).strip()
    text = re.sub(r"^[A-Za-z]\s*=", "", text)
    text = re.sub(r"\s*(?:°|\^?\\circ)*\s*(?:\\?%|(?!(?:or|and)$)[A-Za-z]+)?$", "", text)  # 42 cm, 42\%, 42^\circ
    while re.search(r"\\[dt]?frac\{", text):
        unchanged, text = text, re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", text)
        if text == unchanged:
            return None
    text = re.sub(r"\|([^|]*)\|", r"abs(\1)", text.replace("\\cdot", "*"))
    text = re.sub(r"(?<![0-9.])0+(?=[0-9])", "", text)  # "042" is 42 here; Python rejects the literal
    try:
        return _evaluate(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def _evaluate(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return Fraction(str(node.value))  # "0.6666667" exactly, not the nearest binary float
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        return _evaluate(node.operand) * (1 if isinstance(node.op, ast.UAdd) else -1)
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        return ARITHMETIC[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "abs" and len(node.args) == 1:
        return abs(_evaluate(node.args[0]))
    raise ValueError(f"outside the small arithmetic: {ast.dump(node)}")


@pytest.mark.parametrize(("text", "value"), [
    ("42", 42), ("x = 042", 42), ("$\\boxed{42}$", 42), ("42 cm", 42), ("42^\\circ", 42), ("|-42|", 42),
    ("\\frac{84}{2}", 42), ("++\\frac{4}{6}", Fraction(2, 3)), ("0.6666667", Fraction(6666667, 10**7)),
    ("$$$42$$$", 42), ("$$42$", None), ("42 or", None), ("43, 42", None), ("43 \\lor 42", None), ("x = 43 = 42", None),
])  # fmt: skip
def test_the_oracle_reads_values_and_nothing_else(text: str, value: Fraction | None) -> None:
    assert value_of(text) == value


@pytest.fixture(scope="module")
def verifier() -> Iterator[MathVerifier]:
    with MathVerifier(kill_after_s=5.0) as shared:
        yield shared


def passes(verifier: MathVerifier, gold: str, answer: str) -> bool:
    query = Query("q", "", {"type": "math", "answer": gold})
    return verifier.verify(query, f"<answer>{answer}</answer>").verdict is Verdict.PASS


@FAST
@given(answer=tokens(TOKENS_42))
def test_token_strings_pass_gold_42_only_when_they_are_42(verifier: MathVerifier, answer: str) -> None:
    if passes(verifier, "42", answer):
        assert value_of(answer) == 42, answer


@FAST
@given(before=tokens(TOKENS_42, 4), after=tokens(TOKENS_42, 4))
def test_tokens_around_42_pass_only_when_the_whole_is_42(verifier: MathVerifier, before: str, after: str) -> None:
    answer = before + "42" + after
    if passes(verifier, "42", answer):
        assert value_of(answer) == 42, answer


@FAST
@given(answer=tokens(TOKENS_TWO_THIRDS, 6))
def test_token_strings_pass_gold_two_thirds_only_when_exactly_two_thirds(verifier: MathVerifier, answer: str) -> None:
    if passes(verifier, "\\frac{2}{3}", answer):
        assert value_of(answer) == Fraction(2, 3), answer


@POOLED
@given(before=st.text(max_size=6), after=st.text(max_size=6))
def test_random_text_around_42_passes_only_when_the_whole_is_42(
    verifier: MathVerifier, before: str, after: str
) -> None:
    answer = before + "42" + after
    if passes(verifier, "42", answer):
        assert value_of(answer) == 42, answer


@POOLED
@given(answer=st.text(max_size=12))
def test_random_text_passes_gold_42_only_when_it_is_42(verifier: MathVerifier, answer: str) -> None:
    if passes(verifier, "42", answer):
        assert value_of(answer) == 42, answer


@FAST
@given(
    values=st.lists(st.integers(0, 99).map(str), min_size=2, max_size=4),  # "0 -1" would be 0 - 1
    separator=st.sampled_from([",", ";", " \\lor ", " or ", " and ", " \\wedge ", " \\\\ ", "\n", " = ", " "]),
)
def test_several_values_are_never_one_value(values: list[str], separator: str) -> None:
    """Whatever the values and the separator, several of them are refused before any comparison."""
    for gold in ("42", "\\frac{2}{3}"):
        assert isinstance(one_value(separator.join(values), gold), Rejection)


def test_every_structure_has_a_reason() -> None:
    """Each structure key the scanner can produce reads as a reason in the detail."""
    samples = ["a \\lor b", "a \\land b", "a < b", "a \\pm b", "a \\\\ b", "a & b", "a \\dots b", "4 2", "4, 2",
               "(4, 2)", "\\{4\\}", "\\cancel{4} 2"]  # fmt: skip
    found = {key for sample in samples for key in shape_of(sample).structures}
    assert found == set(REASONS)


LATEX_BITS = ["4", "2", "x", "=", ",", "\\lor", "\\{", "\\}", "{", "}", "(", ")", "[", "]", "\\\\", "<", " ", "\n", "$",
              "\\boxed{", "\\frac{", "}{", "\\left(", "\\right)", "\\left", "+", "-", "^", "_", "|", "\\max", "\\circ",
              "\\sin", "\\in", "\\%", "~", "\\", ".", "'", "\\foo"]  # fmt: skip


@FAST
@given(
    answer=st.one_of(st.text(max_size=16), tokens(LATEX_BITS, 10)),
    gold=st.one_of(st.sampled_from(["42", "\\{1, 2\\}", "[0, 1)", "x = 1", "y = 2x + 3"]), tokens(LATEX_BITS, 5)),
)
def test_the_form_check_never_raises(answer: str, gold: str) -> None:
    """Any text, against any gold, is one value or a rejection with a class and a reason."""
    form = one_value(answer, gold)
    assert isinstance(form, str) or (form.error_class in ("bad_format", "unparseable", "no_answer") and form.detail)


@pytest.mark.parametrize(("answer", "gold", "value"), [
    ("x = 42", "42", "42"), ("$\\boxed{x = 42}$", "42", "42"), ("The answer is $42$.", "42", "42"),
    ("x \\in [0, 1)", "[0,1)", "[0, 1)"), ("(x, y) = (1, 2)", "(1,2)", "(1, 2)"), ("y = 2x", "y = 2x", "y = 2x"),
    ("\\log_{2} 8", "3", "\\log_{2} 8"), ("\\lim_{x \\to 0} x", "0", "\\lim_{x \\to 0} x"), ("1,000", "1000", "1000"),
])  # fmt: skip
def test_the_one_value_is_what_gets_compared(answer: str, gold: str, value: str) -> None:
    assert one_value(answer, gold) == value
