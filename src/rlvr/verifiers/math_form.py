r"""One answer, one value: the form check a math answer passes before any comparison.

math-verify keeps ONE element of what it parses and compares that. For gold ``42`` it passed
``x = 43 \lor x = 42``, ``43 \\ 42``, ``\lbrace 43, 42 \rbrace``, ``\begin{cases}43\\42\end{cases}``
and ``x = 43 = 42``: it kept the last disjunct, line or element, or the right-hand side of the
chain. A policy that lists its candidates would be paid for hedging. So, before math-verify sees
anything:

- an answer that math-verify would read only in part is refused (``math_latex.malformed``);
- an answer may hold a structure of ``REASONS`` (a disjunction, a list, a relation, ...) only
  where the gold holds it too: a gold ``\{1, 2\}`` admits a set or a bare list, a gold ``42``
  admits none, a tuple or an interval admits no bare list;
- what is judged is the one value: inside one ``$…$`` and one ``\boxed{}`` among words, right of
  ``symbol =``; for a gold that lists values, several boxes list their contents.

Both sides are read in one spelling first (``math_normal.canonical``), and a gold of several
boxes or ``$…$`` spans is the list of their contents (``gold_value``).

Standard library only, and plain strings out (error classes as ``ErrorClass`` values): this runs
in the trainer's process, in under a millisecond (0.2-0.3 ms for a boxed fraction).
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
from rlvr.verifiers.math_normal import canonical

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
_LISTS = _COMPOUND | {"conjunction", "disjunction", "plus_minus"}
"""A gold with one of these holds several values ("6 and 8" too), and the answer may list them."""
_MATRICES = {"matrix", "pmatrix", "bmatrix", "Bmatrix", "smallmatrix", "array"}
"""Bracket styles of one matrix: a ``pmatrix`` answer for a ``bmatrix`` gold is the same matrix.
Not ``vmatrix``/``Vmatrix``: those write a determinant or a norm, a number."""

_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{\s*([A-Za-z*]+)\s*\}")
_COMMAND_GROUP = re.compile(r"\\([A-Za-z]+)\s*\{")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_WORDS = re.compile(r"[A-Za-z\s.,:;!?%'\"]*")
_PROSE_GROUP = re.compile(r"\\(?:text|textbf|textit|textrm|textnormal|mbox)\s*\{[A-Za-z\s.,:;!?'\"]*\}|\\%")
"""Words in a text group, and a percent sign: prose too ("$42$ \\text{ cm}", "$28$ \\%")."""
_SPAN = re.compile(r"\$\$(.*?)\$\$|\$(.*?)\$", re.DOTALL)
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

    Both are read in their canonical spelling (``math_normal.canonical``). Outer ``$…$``,
    ``\(…\)``, ``\[…\]``, one ``$…$`` span or ``\boxed{}`` among words, and a leading ``x =``
    (when the gold has no ``=``) are removed.
    """
    gold = gold_value(gold)
    gold_shape = shape_of(gold)
    text = unwrap(canonical(answer, gold))
    unread = malformed(text, gold)
    if unread:
        return Rejection("unparseable", f"answer holds {unread}")
    if set(gold_shape.structures) & _LISTS:  # "\boxed{1}, \boxed{2}" lists its boxes' contents
        text = _contents_listed(text) or text
    text, rejection = _math_span(text)
    if rejection:
        return rejection
    text = _boxed_among_words(text)
    shape = shape_of(text)
    if not shape.balanced:
        return Rejection("unparseable", "answer has unbalanced brackets")
    rejection = _structure_not_in_gold(shape, gold_shape)
    if rejection:
        return rejection
    if len(shape.relations) > max(1, len(gold_shape.relations)):
        return Rejection("bad_format", "answer is not one value: a chain of relations")
    text, rejection = _unbox(text)
    if rejection:
        return rejection
    if not text:
        return Rejection("no_answer", "answer holds no value")
    return _assigned_value(text, gold, gold_shape)


def gold_value(gold: str) -> str:
    r"""The gold as its one expression: canonical, without delimiters, inside its one ``$…$`` span
    or ``\boxed{}``. A gold of several spans or boxes (``\boxed{1}, \boxed{2}``, ``$1$ and $2$``)
    is the list of their contents."""
    text = unwrap(canonical(gold, gold))
    listed = _contents_listed(text)
    if listed:
        return listed
    for take_inside in (_math_span, _unbox):
        inside, rejection = take_inside(text)
        text = text if rejection else inside
    return text


def _contents_listed(text: str) -> str | None:
    r"""``"a, b"`` for ``\boxed{a} and \boxed{b}`` or ``$a$, $b$``: several boxes (or several
    ``$…$`` spans) with no number between or around them; None otherwise."""
    parts = [
        (m.start(), end, text[m.end() : end - 1]) for m in _BOX.finditer(text) if (end := group_end(text, m.end()))
    ]
    if len(parts) < 2:
        parts = [(m.start(), m.end(), m.group(1) or m.group(2) or "") for m in _SPAN.finditer(text)]
    if len(parts) < 2 or any(later[0] < earlier[1] for earlier, later in zip(parts, parts[1:], strict=False)):
        return None  # fewer than two, or one inside another
    edges = [0, *(edge for start, end, _ in parts for edge in (start, end)), len(text)]
    outside = "".join(text[start:end] for start, end in zip(edges[::2], edges[1::2], strict=True))
    if re.search(r"[0-9]", outside):
        return None
    return ", ".join(unwrap(content) for _, _, content in parts)


def _structure_not_in_gold(shape: Shape, gold_shape: Shape) -> Rejection | None:
    """The first structure of the answer that the gold does not have, as a rejection."""
    gold, answer = set(gold_shape.structures), set(shape.structures)
    allowed = set(gold)
    if gold & _COMPOUND:  # a bracketed set for a bare list; a tuple or an interval is no list
        allowed |= _COMPOUND - {"top_comma"}
    if gold & (_LISTS - {"nested_comma", "set"}):  # a list: "1, 2", "\pm 3", "6 and 8"
        allowed |= _COMPOUND | {"conjunction"}
    elif "set" in gold and not answer & {"nested_comma", "set"}:  # "1, 2" lists the set \{1, 2\}
        allowed |= {"top_comma", "conjunction"}
    if "relation" in gold:  # "x > 5" is the set (5, \infty): an interval or set answers it
        allowed |= {"nested_comma", "set"}
    for key, token in shape.structures.items():
        if key not in allowed:
            reason = REASONS.get(key) or ("a case list" if "cases" in key else "an environment")
            return Rejection("bad_format", f"answer is not one value: {reason} ({token!r})")
    return None


def shape_of(text: str) -> Shape:
    """Structures written in ``text``, found in one pass over its LaTeX tokens."""
    structures = {
        f"environment:{'matrix' if name in _MATRICES else name}": f"\\begin{{{name}}}"
        for name in _ENVIRONMENT.findall(text)
    }
    for command in _COMMAND_GROUP.finditer(text):
        inside = text[command.end() : group_end(text, command.end()) or len(text)]
        if command.group(1) not in ARGUMENT_COMMANDS and re.search(r"[0-9]", inside):
            structures.setdefault("hidden", f"\\{command.group(1)}")
    if "..." in text:
        structures["ellipsis"] = "..."
    relations: list[tuple[str, int, int, int]] = []
    if _newline_between_values(text):
        structures["line_break"] = "newline"
    stack: list[str] = []  # the kinds of the open brackets; "_" marks a subscript group
    balanced, ends_value, delimiter_of, previous, joined = True, False, "", "", False
    for match in TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if _invisible(kind, token):
            continue
        # "19, 46, \text{ and } 82": the word joins the values, and the conjunction rule judges it
        joined = (joined or _structure(kind, token, 0) in ("conjunction", "disjunction")) and kind != "number"
        if kind == "number" and ends_value:  # "43 42", "(43)42", "\frac{1}{2}3"; not "\log_2 8"
            structures.setdefault("side_by_side", token)
        key = _structure(kind, token, len(stack))
        in_index = any(opened.endswith("_") for opened in stack)  # \lim_{x \to 0}, \sum_{i=1}^{n}
        if key and not in_index:
            structures.setdefault(key, token)
        if token in ASSIGNMENTS and not in_index:
            relations.append((token, len(stack), match.start(), match.end()))
        # a value after "%" is one LaTeX hides (a comment) and math-verify multiplies: "42 % 43"
        ends_value = (kind == "number" and previous != "_") or delimiter_of == "\\right" or token in ("%", "\\%")
        if delimiter_of:  # the delimiter after \left or \right, whatever it is: "\left.", "\right|"
            delimiter_of = ""
        elif token in OPENERS:
            stack.append(PAIR_OF[token] + ("_" if previous == "_" else ""))
            delimiter_of = token if token == "\\left" else ""
        elif token in CLOSERS:
            opened = stack.pop() if stack else ""
            balanced = balanced and opened.rstrip("_") == PAIR_OF[token]
            ends_value = token != "\\right" and not opened.endswith("_") and not joined
            delimiter_of = token if token == "\\right" else ""
        previous = token
    return Shape(structures, relations, balanced and not stack)


def _newline_between_values(text: str) -> bool:
    r"""A newline with something on both sides: "43\n42", not "$$\n 9 \n$$" or "\boxed{\n …\n}"."""
    visible = [
        m for m in TOKEN.finditer(text) if not blank(m.lastgroup, m.group()) or m.group() == "$" or "\n" in m.group()
    ]
    for before, newline, after in zip(visible, visible[1:], visible[2:], strict=False):
        if newline.lastgroup != "space" or before.lastgroup == "space" or after.lastgroup == "space":
            continue
        opened = before.group() in OPENERS or re.search(r"\\begin\s*\{[A-Za-z*]+\}\Z", text[: before.end()])
        closed = after.group() in CLOSERS or after.group() == "\\end"
        if not (opened or closed or "$" in (before.group(), after.group())):
            return True
    return False


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
    spans = list(_SPAN.finditer(text))
    if not spans:
        return text, None
    if len(spans) > 1:
        return text, Rejection("bad_format", "answer is not one value: several $...$ spans")
    if not _words_only(text[: spans[0].start()] + text[spans[0].end() :]):
        return text, Rejection("bad_format", "answer is not one value: a number or math outside $...$")
    return unwrap(spans[0].group(1) or spans[0].group(2) or ""), None


def _words_only(text: str) -> bool:
    """Prose around the answer ("Thus, the answer is"): words and punctuation, no number, command,
    operator or joining word ("or", "and"), so nothing there can be a second value."""
    prose = _PROSE_GROUP.sub(" ", text)
    return bool(_WORDS.fullmatch(prose)) and not any(word.lower() in STRUCTURE_OF_WORD for word in prose.split())


def _boxed_among_words(text: str) -> str:
    r"""The content of one ``\boxed{}`` with only words around it, else ``text`` as it is."""
    boxes = list(_BOX.finditer(text))
    end = group_end(text, boxes[0].end()) if len(boxes) == 1 else None
    if end is None or not _words_only(text[: boxes[0].start()] + text[end:]):
        return text
    return unwrap(text[boxes[0].end() : end - 1])


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
    set_like = bool(set(gold_shape.structures) & (_COMPOUND | {"relation"})) or any(
        op == "\\in" for op, *_ in gold_shape.relations
    )  # a set gold, or an inequality (the set of x where it holds)
    if operator == "\\in" and not set_like:
        return Rejection("bad_format", f"answer is not one value: {REASONS['relation']} ('\\\\in')")
    if gold_shape.relations:  # the gold is an equation or assignment: math-verify compares both sides
        return text
    value = text[end:].strip()
    return value if value else Rejection("bad_format", f"answer is not one value: nothing right of {operator!r}")
