r"""One answer, one value: the form check a math answer passes before any comparison.

math-verify keeps ONE element of what it parses and compares that. For gold ``42`` it passed
``x = 43 \lor x = 42``, ``43 \\ 42``, ``\lbrace 43, 42 \rbrace``, ``\begin{cases}43\\42\end{cases}``
and ``x = 43 = 42``: it kept the last disjunct, line or element, or the right-hand side of the
chain. A policy that lists its candidates would be paid for hedging. So, before math-verify sees
anything:

- an answer that math-verify would read only in part is refused (``math_latex.malformed``);
- an answer may hold a structure of ``REASONS`` (a disjunction, a list, a relation, ...) only
  where the gold holds it too: a gold ``\{1, 2\}`` admits a set, a gold ``42`` admits none;
- what is judged is the one value: inside one ``$…$`` and one ``\boxed{}``, right of ``symbol =``.

Standard library only, and plain strings out (error classes as ``ErrorClass`` values): this runs
in the trainer's process, in microseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlvr.verifiers.math_latex import (
    ARGUMENT_COMMANDS,
    ASSIGNMENTS,
    CLOSERS,
    GREEK,
    OPENERS,
    PAIR_OF,
    RESTARTING_COMMANDS,
    STRUCTURE_OF_CHAR,
    STRUCTURE_OF_COMMAND,
    STRUCTURE_OF_WORD,
    TOKEN,
    blank,
    group_end,
    malformed,
)

REASONS = {
    "disjunction": "a disjunction",
    "conjunction": "a conjunction",
    "relation": "a relation other than symbol = value",
    "plus_minus": "\\pm, which gives two values",
    "line_break": "a line break",
    "alignment": "an alignment tab (&)",
    "ellipsis": "an ellipsis",
    "side_by_side": "numbers side by side",
    "top_comma": "several values separated by commas or semicolons",
    "nested_comma": "a set, tuple or interval of several values",
    "set": "a set or set operation",
    "hidden": "a number that math-verify would drop",
}
"""Why an answer is not one value, by structure; the detail reads "answer is not one value: ..."."""
_COMPOUND = {"top_comma", "nested_comma", "set"}
"""A gold with one of these is a set, tuple, interval or list, and so may the answer be."""

_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{\s*([A-Za-z*]+)\s*\}")
_COMMAND_GROUP = re.compile(r"\\([A-Za-z]+)\s*\{")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_SYMBOL = rf"(?:[A-Za-z]|\\(?:{'|'.join(GREEK)})(?![A-Za-z]))(?:_(?:[A-Za-z0-9]|\{{[A-Za-z0-9]+\}}))?'*"
"""One variable: a letter or a Greek letter, a subscript, primes."""
_LHS = re.compile(rf"\s*(?:{_SYMBOL}(?:\(\s*{_SYMBOL}\s*\))?|\(\s*{_SYMBOL}(?:\s*,\s*{_SYMBOL})+\s*\))\s*")
"""What may stand left of ``=``: ``x``, ``a_1``, ``f(x)``, ``\\theta'``, or a tuple ``(x, y)``."""


@dataclass(frozen=True)
class Rejection:
    """Why an answer is not judged: ``error_class`` is an ErrorClass value."""

    error_class: str
    detail: str


@dataclass(frozen=True)
class Shape:
    """The structures found in one answer (or gold), and where its relations are."""

    structures: dict[str, str]
    """Structure key (see ``REASONS``, or "environment:NAME") -> the first token that wrote it."""
    relations: list[tuple[str, int, int, int]]
    """``=`` and ``\\in`` tokens: (operator, bracket depth, start, end)."""
    balanced: bool
    """Every bracket closes, in order, with its own kind (``[0, 1)`` counts as one kind)."""


def one_value(answer: str, gold: str) -> str | Rejection:
    r"""The part of ``answer`` to compare with ``gold``, or why there is none.

    Outer ``$…$``, ``\(…\)``, ``\[…\]``, one ``$…$`` span or ``\boxed{}`` among words, and a leading
    ``x =`` (when the gold has no ``=``) are removed.
    """
    text, gold = unwrap(answer), unwrap(gold)
    unread = malformed(text, gold)
    if unread:
        return Rejection("unparseable", f"answer holds {unread}")
    shape, gold_shape = shape_of(text), shape_of(gold)
    if not shape.balanced:
        return Rejection("unparseable", "answer has unbalanced brackets")
    allowed = set(gold_shape.structures)
    if "plus_minus" in allowed:  # "\pm 3" is the two values 3, -3
        allowed |= _COMPOUND
    elif allowed & _COMPOUND:  # a bracketed set for a bare list and back; several top-level values never
        allowed |= _COMPOUND - {"top_comma"}
    for key, token in shape.structures.items():
        if key not in allowed:
            reason = REASONS.get(key) or ("a case list" if "cases" in key else "an environment")
            return Rejection("bad_format", f"answer is not one value: {reason} ({token!r})")
    if len(shape.relations) > max(1, len(gold_shape.relations)):
        return Rejection("bad_format", "answer is not one value: a chain of relations")
    for take_inside in (_math_span, _unbox):
        text, rejection = take_inside(text)
        if rejection:
            return rejection
    if not text:
        return Rejection("no_answer", "answer holds no value")
    return _assigned_value(text, gold, gold_shape)


def shape_of(text: str) -> Shape:
    """Structures written in ``text``, found in one pass over its LaTeX tokens."""
    structures = {f"environment:{name}": f"\\begin{{{name}}}" for name in _ENVIRONMENT.findall(text)}
    for command in _COMMAND_GROUP.finditer(text):
        inside = text[command.end() : group_end(text, command.end()) or len(text)]
        if command.group(1) not in ARGUMENT_COMMANDS and re.search(r"[0-9]", inside):
            structures.setdefault("hidden", f"\\{command.group(1)}")
    if "..." in text:
        structures["ellipsis"] = "..."
    relations: list[tuple[str, int, int, int]] = []
    stack: list[str] = []  # the kinds of the open brackets; "_" marks a subscript group
    balanced, ends_value, delimiter_of, previous = True, False, "", ""
    for match in TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "space" and ("\n" in token or "\r" in token):
            structures.setdefault("line_break", "newline")
        if _invisible(kind, token):
            continue
        if kind == "number" and ends_value:  # "43 42", "(43)42", "\frac{1}{2}3"; not "\log_2 8"
            structures.setdefault("side_by_side", token)
        key = _structure(kind, token, len(stack))
        in_index = any(opened.endswith("_") for opened in stack)  # \lim_{x \to 0}, \sum_{i=1}^{n}
        if key and not in_index:
            structures.setdefault(key, token)
        if token in ASSIGNMENTS and not in_index:
            relations.append((token, len(stack), match.start(), match.end()))
        ends_value = (kind == "number" and previous != "_") or delimiter_of == "\\right"
        if delimiter_of:  # the delimiter after \left or \right, whatever it is: "\left.", "\right|"
            delimiter_of = ""
        elif token in OPENERS:
            stack.append(PAIR_OF[token] + ("_" if previous == "_" else ""))
            delimiter_of = token if token == "\\left" else ""
        elif token in CLOSERS:
            opened = stack.pop() if stack else ""
            balanced = balanced and opened.rstrip("_") == PAIR_OF[token]
            ends_value = token != "\\right" and not opened.endswith("_")
            delimiter_of = token if token == "\\right" else ""
        previous = token
    return Shape(structures, relations, balanced and not stack)


def _invisible(kind: str | None, token: str) -> bool:
    """Nothing that joins two numbers: "43 42", "43\\quad 42", "43\\max 42"."""
    return blank(kind, token) or (kind == "command" and token[1:] in RESTARTING_COMMANDS - set(STRUCTURE_OF_COMMAND))


def _structure(kind: str | None, token: str, depth: int) -> str | None:
    if token in (",", ";"):
        return "top_comma" if depth == 0 else "nested_comma"
    if kind == "command":
        return STRUCTURE_OF_COMMAND.get(token[1:])
    if kind == "word":
        return STRUCTURE_OF_WORD.get(token.lower())
    return STRUCTURE_OF_CHAR.get(token) if kind == "char" else None


def unwrap(text: str) -> str:
    r"""``text`` without math delimiters around all of it: ``$$…$$``, ``$…$``, ``\(…\)``, ``\[…\]``."""
    text = text.strip()
    for opening, closing in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(text) >= len(opening) + len(closing) and text.startswith(opening) and text.endswith(closing):
            inner = text[len(opening) : len(text) - len(closing)]
            if opening not in inner and closing not in inner:  # "$43$ or $42$" is two spans, not one
                return inner.strip()
    return text


def _math_span(text: str) -> tuple[str, Rejection | None]:
    """The content of the one ``$…$`` in ``text`` ("The answer is $42$."), or ``text``, or why not."""
    spans = list(re.finditer(r"\$\$(.*?)\$\$|\$(.*?)\$", text, re.DOTALL))
    if not spans:
        return text, None
    if len(spans) > 1:
        return text, Rejection("bad_format", "answer is not one value: several $...$ spans")
    if re.search(r"[0-9]", text[: spans[0].start()] + text[spans[0].end() :]):
        return text, Rejection("bad_format", "answer is not one value: a number outside $...$")
    return unwrap(spans[0].group(1) or spans[0].group(2) or ""), None


def _unbox(text: str) -> tuple[str, Rejection | None]:
    r"""The content of the one ``\boxed{}`` in ``text``, or ``text``, or why not."""
    boxes = list(_BOX.finditer(text))
    if not boxes:
        return text, None
    if len(boxes) > 1:
        return text, Rejection("bad_format", "answer is not one value: several \\boxed{} answers")
    end = group_end(text, boxes[0].end()) or len(text)  # shape_of found the brackets balanced
    if re.search(r"[0-9]", text[: boxes[0].start()] + text[end:]):
        return text, Rejection("bad_format", "answer is not one value: a number outside \\boxed{}")
    return unwrap(text[boxes[0].end() : end - 1]), None


def _assigned_value(text: str, gold: str, gold_shape: Shape) -> str | Rejection:
    """``42`` for ``x = 42`` when the gold is not itself an equation; checks the left side."""
    relations = shape_of(text).relations
    if not relations:
        return text
    (operator, depth, _, end), lhs = relations[0], text[: relations[0][2]]
    gold_is_equation = bool(gold_shape.relations) and not _LHS.fullmatch(gold[: gold_shape.relations[0][2]])
    if depth != 0 or (not gold_is_equation and not _LHS.fullmatch(lhs)):
        return Rejection("bad_format", f"answer is not one value: {operator!r} whose left side is not one symbol")
    set_like = bool(set(gold_shape.structures) & _COMPOUND) or any(op == "\\in" for op, *_ in gold_shape.relations)
    if operator == "\\in" and not set_like:
        return Rejection("bad_format", f"answer is not one value: {REASONS['relation']} ('\\\\in')")
    if gold_shape.relations:  # the gold is an equation or assignment: math-verify compares both sides
        return text
    value = text[end:].strip()
    return value if value else Rejection("bad_format", f"answer is not one value: nothing right of {operator!r}")
