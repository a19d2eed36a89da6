r"""One spelling for what readers write several ways, before any check reads a math answer.

Written answers spell the same thing differently, and the form check (``math_form``) and
math-verify each read only one spelling: ``\( 9 \)`` and ``$9$``, ``32,\! 349`` and ``32349``,
``\$10`` and ``10``, ``x <= 3`` and ``x \le 3``, ``1e3`` and ``1000``. ``canonical`` rewrites an
answer (and the gold, the same way) into the spelling they read, so an honest answer is not
refused for its spelling, and no rewrite can join or split values:

- ``\( … \)`` is ``$ … $`` and ``\[ … \]`` is ``$$ … $$`` (inline and display math);
- ``\$`` is a dollar sign, and so is a lone ``$`` touching a number (``$1,000.99``); a lone ``$``
  at the start or end is a delimiter without its partner: all dropped;
- ``<=``, ``>=`` are ``\le``, ``\ge``; ``!=`` is ``\ne`` where the gold states a ``≠`` relation,
  and a factorial followed by ``=`` elsewhere (``5!=120``);
- a number with thousands separators is its digits: ``32,\! 349``, ``14{,}916`` (``14 {, }916``
  too), ``10\,000`` and,
  outside brackets only, ``1,000`` (three digits after each comma, no space): ``(2,500)`` stays a
  pair and ``1, 000`` stays a list, as math-verify reads them;
- ``\mathrm{e}`` is ``e`` (an upright letter is the letter: math-verify read
  ``1 - \frac{1}{\mathrm{e}}`` as 1), and a base ``204_{5}`` is ``204_5``;
- ``{1, 2, 3}`` alone is the set ``\{1, 2, 3\}``;
- E-notation is a power of ten: ``1e3`` = 1000, ``-4.4e+5`` = -440000, ``2.5E-3`` = 0.0025 (a
  mantissa, ``e`` or ``E``, an optional sign and digits, touching; ``2e``, ``e^{2}`` and ``2 e 3``
  stay Euler's number).

Standard library only: this runs in the trainer's process.
"""

from __future__ import annotations

import re
from decimal import Decimal, localcontext

from rlvr.verifiers.math_latex import TOKEN

_DELIMITERS = {"\\(": "$", "\\)": "$", "\\[": "$$", "\\]": "$$"}
_ASCII_RELATIONS = {"<=": "\\le ", ">=": "\\ge "}
_NOT_EQUAL_GOLD = re.compile(r"\\ne(?:q)?(?![A-Za-z])|≠|!=")

_GROUPED = re.compile(
    r"(?<![0-9.])([1-9][0-9]{0,2})((?:(?:\s*\{\s*,\s*\}\s*|,\\!\s*|\\,|,)[0-9]{3})+)(?![0-9])(\.[0-9]+)?"
)  # 32,\! 349 / 14{,}916 / 10\,000 / 1,000 (the plain comma only outside brackets: _plain_comma_ok)
_SEPARATOR = re.compile(r"\s*\{\s*,\s*\}\s*|,\\!\s*|\\,|,")
_E_NOTATION = re.compile(r"(?<![0-9A-Za-z.\\])([0-9]+\.?[0-9]*|\.[0-9]+)[eE]([+-]?[0-9]{1,4})(?![0-9A-Za-z])")
_LARGEST_EXPONENT = 100
"""Beyond 10^±100 a number is written as ``m \\cdot 10^{n}``, not as its digits."""


_UPRIGHT_LETTER = re.compile(r"\\mathrm\s*\{\s*([A-Za-z])\s*\}")
_BASE_SUBSCRIPT = re.compile(r"(?<=[0-9])_\{\s*([0-9]+)\s*\}(?![0-9])")


def canonical(text: str, gold: str = "") -> str:
    """``text`` in the one spelling the form check and math-verify read (see the module doc)."""
    text = _UPRIGHT_LETTER.sub(r" \1 ", text)  # spaced: "2\mathrm{e}3" is no 2e3
    text = _BASE_SUBSCRIPT.sub(r"_\1", text)
    text = _tokens_rewritten(text, gold)
    text = _lone_dollar_dropped(text)
    text = _E_NOTATION.sub(_power_of_ten, text)
    return _braces_as_set(_thousands_joined(text))


def _braces_as_set(text: str) -> str:
    r"""``{1, 2, 3}`` written alone is the set ``\{1, 2, 3\}`` (math-verify reads it so too)."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")) or _group_closes_early(inner):
        return text
    return "\\{" + inner[1:-1] + "\\}" if "," in inner else text


def _group_closes_early(text: str) -> bool:
    """Whether the ``{`` that opens ``text`` closes before its last character ("{1}{2}")."""
    depth = 0
    for match in TOKEN.finditer(text):
        depth += {"{": 1, "}": -1}.get(match.group(), 0)
        if depth == 0:
            return match.end() < len(text)
    return True


def same_text(answer: str, gold: str) -> bool:
    """Whether two texts are the same LaTeX up to spaces ("204_5" and " 204_5 ")."""
    return _visible_tokens(answer) == _visible_tokens(gold)


def _visible_tokens(text: str) -> list[str]:
    return [m.group() for m in TOKEN.finditer(text.strip()) if m.lastgroup != "space"]


def _tokens_rewritten(text: str, gold: str) -> str:
    r"""Delimiters, ``\$`` and ASCII relations, token by token (``\\[2pt]`` is a line break, not ``\[``)."""
    not_equal = bool(_NOT_EQUAL_GOLD.search(gold))
    out: list[str] = []
    tokens = [m.group() for m in TOKEN.finditer(text)]
    i = 0
    while i < len(tokens):
        token, following = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else ""
        pair = token + following
        if token in _DELIMITERS:
            out.append(_DELIMITERS[token])
        elif token == "\\$":
            out.append(" ")  # a dollar sign: "\$10" is 10; a space, so that "4\$2" joins nothing
        elif pair in _ASCII_RELATIONS:
            out.append(_ASCII_RELATIONS[pair])
            i += 1
        elif pair == "!=" and not_equal:
            out.append("\\ne ")
            i += 1
        else:
            out.append(token)
        i += 1
    return "".join(out)


def _lone_dollar_dropped(text: str) -> str:
    """One ``$`` alone: a currency sign touching a number (``$1,000.99``, ``2,74 $``), or a
    delimiter whose partner is missing at the start or end (``$\\boxed{28}``): dropped."""
    if text.count("$") != 1:
        return text
    dollar = text.index("$")
    before, after = text[:dollar], text[dollar + 1 :]
    at_an_end = not before.strip() or not after.strip(" \t\n.,;")
    touching = re.match(r"\s?[0-9.]", after) or re.search(r"[0-9]\s?\Z", before)
    return before + " " + after if at_an_end or touching else text  # a space: "4$2" joins nothing


def _power_of_ten(match: re.Match[str]) -> str:
    """``2.5E-3`` -> ``0.0025``, exactly (decimal arithmetic, no binary float on the way)."""
    mantissa, exponent = match.group(1), int(match.group(2))
    if abs(exponent) > _LARGEST_EXPONENT:
        return f"({mantissa} \\cdot 10^{{{exponent}}})"
    with localcontext() as context:
        context.prec = len(mantissa) + 1  # exact: scaleb only moves the point
        digits = format(Decimal(mantissa).scaleb(exponent), "f")
    return digits.rstrip("0").rstrip(".") if "." in digits else digits


def _thousands_joined(text: str) -> str:
    """Numbers with thousands separators as their digits; a plain comma only outside brackets."""
    inside = _bracket_depths(text)
    out, last = [], 0
    for match in _GROUPED.finditer(text):
        if "," in _SEPARATOR.findall(match.group(2)) and inside[match.start()]:
            continue  # "(2,500)" is the pair 2, 500, as math-verify reads it
        digits = match.group(1) + re.sub(r"[^0-9]", "", match.group(2)) + (match.group(3) or "")
        out += [text[last : match.start()], digits]
        last = match.end()
    return "".join([*out, text[last:]])


def _bracket_depths(text: str) -> list[bool]:
    r"""For each character, whether it stands inside a bracket that lists values: ``( [ \{ \langle``
    or a bare ``{`` (a set to math-verify); not a command's argument (``\boxed{1,000}``)."""
    inside = [False] * (len(text) + 1)
    stack: list[bool] = []  # True for a listing bracket, False for an argument group
    previous = ""
    for match in TOKEN.finditer(text):
        token = match.group()
        if token in ("(", "[", "\\{", "\\lbrace", "\\langle", "\\lbrack"):
            stack.append(True)
        elif token == "{":
            stack.append(not (previous.startswith("\\") or previous in ("^", "_", "}")))
        elif token in (")", "]", "\\}", "\\rbrace", "\\rangle", "\\rbrack", "}") and stack:
            stack.pop()
        if any(stack):
            inside[match.start() : match.end()] = [True] * (match.end() - match.start())
        if match.lastgroup != "space":
            previous = token
    return inside
