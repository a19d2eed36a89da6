"""rlvr's own checks on reasoning-gym answers, run before a dataset's ``score_answer`` is trusted.

reasoning-gym's scorers are third-party code, and several pay wrong answers in full: fuzzing
every dataset of reasoning-gym 0.1.25 with adversarial answers (tests/verifiers/
test_reasoning_gym.py) found scorers that read only part of an answer (the first number, the
first comma-separated fields, the digits of a grid and nothing else), that compare the truthiness
of two strings, that give full "prefix credit", and that add per-letter credit up to 1. Each such
dataset has an entry in ``CHECKS``: a pure function of the answer and the row's entry that says
what is wrong with the answer ("" when nothing is), applied before the scorer; an answer it
refuses is ``fail`` whatever the scorer would pay. A check is either our own exact comparison
with the entry's answer (when the dataset has one right answer) or a strict form check that
leaves the scorer only what it reads correctly (when any valid solution counts).

``non_finite`` keeps answers that parse as NaN or infinity from every scorer
(complex_arithmetic pays ``nan`` in full: ``min(1.0, exp(-nan))`` is 1.0). Datasets rlvr does
not score at all are ``rlvr.tasks.reasoning_gym.REFUSED``.

Standard library only: this runs in the trainer's process, on the model's text, so nothing here
evaluates the answer as code or builds a number whose size the answer chooses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

Check = Callable[[str, dict[str, Any]], str]
"""(answer, entry) -> what is wrong with the answer, or "" when the scorer may judge it."""


_NON_FINITE_WORD = re.compile(r"(?<![^\W\d_])[+-]?(?:s?nan\d*|inf(?:inity)?)[ij]?(?![^\W\d_])|∞", re.IGNORECASE)
"""What float(), complex() and Decimal() read as NaN or infinity (any case, signed, ``snan``,
a NaN payload, a ``j``/``i`` imaginary suffix), and the infinity sign; not inside a word."""
_SYMPY_NON_FINITE = re.compile(r"(?<![\w.])z?oo(?![\w.])")
"""sympy's ``oo`` and ``zoo`` (complex infinity), case-sensitive as sympy reads them."""
_EXPONENT_LITERAL = re.compile(r"(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)[eE][+-]?\d[\d_]*")
"""A number in E-notation, which float() reads as inf when it is too large (``1e999``, ``1_0e999``)."""
_DIVISION_BY_ZERO = re.compile(r"/\s*[+-]?0+(?:\.0*)?(?![\w.])")
"""``1/0`` and ``0/0``, which sympy reads as complex infinity and NaN."""

MAX_EXPONENT = 400
"""Numbers with a longer decimal exponent are not read as numbers here: Fraction("1e-999999999")
would build a billion-digit denominator."""


def non_finite(answer: str, reference: Any) -> str:
    """The token of ``answer`` that parses as NaN or infinity, or "". A reference that holds such
    a token itself (a word puzzle whose answer is "nan") turns the rule off for its row."""
    found = _non_finite_token(answer)
    return found if found and not _non_finite_token(str(reference)) else ""


def _non_finite_token(text: str) -> str:
    match = _NON_FINITE_WORD.search(text) or _SYMPY_NON_FINITE.search(text) or _DIVISION_BY_ZERO.search(text)
    if match:
        return match.group()
    for literal in _EXPONENT_LITERAL.finditer(text):
        try:
            if float(literal.group()) == float("inf"):
                return literal.group()
        except ValueError:  # underscores float() does not take ("1__0e5"): not a number to it
            continue
    return ""


# ---- numbers ----------------------------------------------------------------------------------

_DECIMAL = r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
"""A decimal literal: sign, thousands commas, fraction, exponent."""
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])")
_ONE_NUMBER = re.compile(rf"\s*({_DECIMAL})(?:\s*/\s*({_DECIMAL}))?\s*")


def _decimal(literal: str) -> Fraction | None:
    mantissa, _, exponent = literal.replace(",", "").lower().partition("e")
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        return None
    return Fraction(literal.replace(",", ""))


def one_number(text: str) -> Fraction | None:
    """The value of ``text`` if it is exactly one number (``-12``, ``1,754``, ``0.25``, ``3e-05``,
    ``15/64``), else None."""
    match = _ONE_NUMBER.fullmatch(text)
    if not match:
        return None
    numerator = _decimal(match.group(1))
    denominator = _decimal(match.group(2)) if match.group(2) else Fraction(1)
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _numbers(text: str) -> list[Fraction | None]:
    return [_decimal(match.group()) for match in _NUMBER_IN_TEXT.finditer(text)]


def _words(text: str) -> set[str]:
    """The words of ``text`` outside its numbers (so an exponent's ``e`` is no word)."""
    return set(re.findall(r"[^\W\d_]+", _NUMBER_IN_TEXT.sub(" ", text).casefold()))


# ---- checks -----------------------------------------------------------------------------------


def same_text(answer: str, entry: dict[str, Any]) -> str:
    """The reference, case and runs of whitespace aside."""
    if _plain(answer) != _plain(str(entry["answer"])):
        return "not the reference answer"
    return ""


def same_text_without_spaces(answer: str, entry: dict[str, Any]) -> str:
    """The reference, case and every space aside (figlet_font's letters may be spaced)."""
    if re.sub(r"\s+", "", answer).casefold() != re.sub(r"\s+", "", str(entry["answer"])).casefold():
        return "not the reference answer"
    return ""


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


def same_number(answer: str, entry: dict[str, Any]) -> str:
    """One number equal to the reference's value."""
    value = one_number(answer)
    if value is None:
        return "not one number"
    return "" if value == one_number(str(entry["answer"])) else "not the reference value"


def close_probability(answer: str, entry: dict[str, Any]) -> str:
    """One number (decimal or fraction) within coin_flip's own tolerance, 1e-4, of the reference
    and within a tenth of it: the scorer's absolute tolerance alone pays ``0`` for any probability
    below 1e-4, and its prefix credit pays ``0`` for any below 1."""
    value, reference = one_number(answer), one_number(str(entry["answer"]))
    if value is None:
        return "not one number"
    if reference is None:
        return "the reference is not a number"
    error = abs(value - reference)
    if error > Fraction(1, 10_000) or error > abs(reference) / 10:
        return "not the reference probability"
    return ""


def no_extra_values(answer: str, entry: dict[str, Any]) -> str:
    """As many numbers as the reference and no word it lacks (``(x, y)``, ``12.5°``):
    advanced_geometry read the first two comma-separated values of a point and dropped the rest."""
    reference = str(entry["answer"])
    if len(_numbers(answer)) != len(_numbers(reference)):
        return f"{len(_numbers(answer))} numbers where the reference has {len(_numbers(reference))}"
    extra = _words(answer) - _words(reference)
    return f"words the answer does not need: {', '.join(sorted(extra)[:3])}" if extra else ""


def same_layout(answer: str, entry: dict[str, Any]) -> str:
    """The reference's layout with any digits in its numbers' places (``D days, HH:MM:SS``), case,
    spacing and ``day``/``days`` aside: time_intervals read the first fields and dropped the rest,
    so ``27 days is wrong`` and ``90 days, 19:40:00, 91 days, ...`` were read as their first value."""
    if _layout(answer) != _layout(str(entry["answer"])):
        return f"not in the layout of {_layout(str(entry['answer']))!r}"
    return ""


def _layout(text: str) -> str:
    return re.sub(r"\bdays?\b", "days", re.sub(r"\d+", "0", " ".join(text.split()).casefold()))


def same_number_list(answer: str, entry: dict[str, Any]) -> str:
    """The reference's numbers, in its order, with nothing else but list punctuation (number_sorting
    pays any sorted list within 1 of each number)."""
    if _words(answer):
        return "words in a list of numbers"
    numbers = _numbers(answer)
    return "" if None not in numbers and numbers == _numbers(str(entry["answer"])) else "not the reference list"


def number_fields(answer: str, entry: dict[str, Any]) -> str:
    """Every comma-separated field is one number, or the answer is empty (polynomial_equations drops
    fields it cannot read, so ``x, 0 or y`` was read as ``x``)."""
    if not answer.strip().strip("\"'"):
        return ""
    bad = [field.strip() for field in answer.split(",") if not re.fullmatch(rf"\s*{_DECIMAL}\s*", field)]
    return f"not a number: {bad[0][:40]!r}" if bad else ""


def one_fraction(answer: str, entry: dict[str, Any]) -> str:
    """``a/b`` or ``\\frac{a}{b}``, optionally between ``$`` signs, and nothing else."""
    fraction = r"\s*\$?\s*(?:\\d?frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\}|\d+\s*/\s*\d+)\s*\$?\s*"
    return "" if re.fullmatch(fraction, answer) else "not one fraction"


def letter_assignments(answer: str, entry: dict[str, Any]) -> str:
    """``A=1,B=2``: each letter once, each value one digit (cryptarithm keeps the last of a letter's
    values, so ``A=1,...,A=2`` hedged)."""
    pairs = re.fullmatch(r"\s*[A-Z]\s*=\s*\d\s*(?:,\s*[A-Z]\s*=\s*\d\s*)*", answer)
    letters = re.findall(r"([A-Z])\s*=", answer)
    if not pairs:
        return "not a list of LETTER=DIGIT"
    return "a letter given twice" if len(letters) != len(set(letters)) else ""


def token_grid(token: str) -> Check:
    """Rows of cells parted by spaces or commas, each matching ``token``: the grid scorers skip what
    is not a digit (kakurasu read ``-1`` and ``17`` as 1) or not a number (survo skipped words)."""

    def check(answer: str, entry: dict[str, Any]) -> str:
        bad = [cell for cell in re.split(r"[\s,]+", answer.strip()) if not re.fullmatch(token, cell)]
        return f"not a grid cell: {bad[0][:20]!r}" if bad else ""

    return check


def role_pairs(answer: str, entry: dict[str, Any]) -> str:
    """Only "NAME is a ROLE" clauses with the reference's names (each once) and roles: the scorer
    skipped every word it could not pair, so "not Ann is a knight" counted as "Ann is a knight"."""
    tokens = _role_tokens(answer)
    names, roles = tokens[0::2], tokens[1::2]
    known = _role_tokens(str(entry["answer"]))
    if len(tokens) % 2 or len(names) != len(set(names)) or not set(names) <= set(known[0::2]):
        return "not one 'NAME is a ROLE' clause per person of the puzzle"
    return "" if set(roles) <= set(known[1::2]) else "a role the puzzle does not have"


def _role_tokens(text: str) -> list[str]:
    words = re.sub(r"[.,()]", " ", text.casefold()).split()
    return [word for word in words if word not in ("is", "a", "an", "and")]


def button_sequence(answer: str, entry: dict[str, Any]) -> str:
    """Buttons A-C parted by arrows, commas or spaces, and nothing else (the scorer read the A-C
    letters out of any text)."""
    pattern = r"\s*[A-Ca-c](?:\s*(?:→|->|,)?\s*[A-Ca-c])*\s*"
    return "" if re.fullmatch(pattern, answer) else "not a sequence of buttons"


def move_string(answer: str, entry: dict[str, Any]) -> str:
    """Sokoban moves U, D, L, R (spaces and commas between them allowed), nothing else: the game
    ignored every other character."""
    return "" if re.fullmatch(r"[\s,]*[UDLR](?:[\s,]*[UDLR])*[\s,]*", answer) else "not a string of moves UDLR"


def same_word_count(answer: str, entry: dict[str, Any]) -> str:
    """As many comma-separated words as the reference (word_sorting paid the right list followed by
    more words in full)."""
    count, expected = len(re.split(r",\s*", answer.strip())), len(re.split(r",\s*", str(entry["answer"]).strip()))
    return "" if count == expected else f"{count} words where the reference has {expected}"


def same_json(answer: str, entry: dict[str, Any]) -> str:
    """The reference's JSON value, types included (game_of_life scored only the reference's cells,
    so rows or columns added to the grid cost nothing)."""
    try:
        given, expected = json.loads(answer), json.loads(str(entry["answer"]))
    except (ValueError, RecursionError):
        return "not JSON"
    return "" if _strictly_equal(given, expected) else "not the reference grid"


def _strictly_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_strictly_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_strictly_equal(a[key], b[key]) for key in a)
    return a == b


def makes_24(answer: str, entry: dict[str, Any]) -> str:
    """The puzzle's four numbers, each once, with + - * / and parentheses, equal to 24 exactly.
    puzzle24's scorer checked only that four numbers in range were used, not which, and truncated
    the value to an int: ``1*2*3*4`` solved every puzzle and 24.8 counted as 24."""
    numbers = [int(token) for token in re.findall(r"\d+", answer)]
    if not re.fullmatch(r"[\d\s+\-*/()]*", answer) or re.search(r"\*\*|//", answer):
        return "only numbers, + - * / and parentheses"
    if sorted(numbers) != sorted(int(n) for n in entry["metadata"]["numbers"]):
        return "not the puzzle's four numbers, each once"
    value = _arithmetic(answer)
    return "" if value == 24 else "does not make 24"


def _arithmetic(expression: str) -> Fraction | None:
    """The exact value of an expression of integers, binary + - * / and parentheses, or None."""
    tokens = re.findall(r"\d+|[+\-*/()]", expression)
    position = 0

    def sum_() -> Fraction:
        nonlocal position
        value = product()
        while position < len(tokens) and tokens[position] in "+-":
            operator, position = tokens[position], position + 1
            value = value + product() if operator == "+" else value - product()
        return value

    def product() -> Fraction:
        nonlocal position
        value = atom()
        while position < len(tokens) and tokens[position] in "*/":
            operator, position = tokens[position], position + 1
            value = value * atom() if operator == "*" else value / atom()
        return value

    def atom() -> Fraction:
        nonlocal position
        token, position = tokens[position], position + 1
        if token == "(":
            value = sum_()
            if tokens[position] != ")":
                raise ValueError("unclosed parenthesis")
            position += 1
            return value
        return Fraction(int(token))  # a sign or an operator here raises: no unary minus

    try:
        value = sum_()
    except (IndexError, ValueError, ZeroDivisionError, RecursionError):
        return None
    return value if position == len(tokens) else None


CHECKS: dict[str, Check] = {
    "advanced_geometry": no_extra_values,
    "coin_flip": close_probability,
    "cryptarithm": letter_assignments,
    "figlet_font": same_text_without_spaces,
    "fraction_simplification": one_fraction,
    "game_of_life": same_json,
    "game_of_life_halting": same_text,
    "gsm_symbolic": same_number,
    "kakurasu": token_grid(r"[01]"),
    "knights_knaves": role_pairs,
    "letter_jumble": same_text,
    "number_sorting": same_number_list,
    "polynomial_equations": number_fields,
    "puzzle24": makes_24,
    "quantum_lock": button_sequence,
    "sokoban": move_string,
    "spell_backward": same_text,
    "survo": token_grid(r"[+-]?\d+"),
    "time_intervals": same_layout,
    "word_sorting": same_word_count,
}
"""Datasets whose scorer paid a wrong answer in full, and the check that runs before it."""
