"""Coq's sentences, found as Coq finds them: a reimplementation of the sentence-level part of
Coq 8.16's lexer (``parsing/cLexer.ml``) and of the grammar rules that end a sentence without a
period (``vernac/g_vernac.mlg``: ``subprf``; ``plugins/ltac/g_ltac.mlg``: ``tactic_mode``).

Pure text functions, no Coq needed: the coq verifier screens every proof with them before Coq sees
it, and afterwards checks that Coq's own report of the sentences it ran (``coqtop -time``: one
``Chars START - END [...]`` line per sentence) matches these boundaries exactly.

What ends a sentence in Coq, and so here:

- a period followed by a blank or the end (``.`` and ``...``; ``..`` and ``.(`` are other tokens, a
  period followed by a letter starts a qualified name's field: ``Z.le_elim`` is one name);
- a bullet (a run of one of ``-``, ``+``, ``*``) or a brace ``{`` / ``}`` met where a sentence
  starts (the lexer's ``between_commands``: at the start, after a period, after a bullet or brace);
- a ``{`` right after a goal selector that starts a sentence (``1: {``, ``1-2, 4: {``, ``[g]: {``,
  ``!: {``, ``all: {``), valid or not: the grammar rule ``OPT toplevel_selector; "{"`` matches
  before the selector is looked up.

Comments ``(* ... *)`` nest and contain strings (a ``*)`` inside a string does not close them);
strings double ``""`` to write a quote. Neither can end a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

BLANKS = " \t\n\r"
"""What Coq's lexer skips (``next_token``); anything else is part of a token."""

BANNED_TACTICS = frozenset(
    {"admit", "give_up", "exact_no_check", "vm_cast_no_check", "native_cast_no_check", "change_no_check",
     "native_compute"}
)  # fmt: skip
"""Tactics that close a goal without a proof (``admit``, ``give_up``) or that skip the kernel's check
or trust compiled code; refused wherever they appear outside comments and strings."""


class CoqSyntaxRefused(ValueError):
    """The text cannot be split as Coq would without an error Coq also raises (an unterminated
    comment or string) or it holds a quotation that swallows sentences (``name:{{ ... }}``)."""


@dataclass(frozen=True)
class Token:
    kind: str
    """``ident``, ``field`` (``.name`` after a name), ``number``, ``string``, ``end`` (``.`` or
    ``...`` before a blank), ``bullet``, ``brace`` (``{``/``}`` where a sentence starts), ``sym``."""
    text: str
    start: int
    """Character offsets into the text; ``Sentence`` converts them to bytes, as Coq counts."""
    end: int


@dataclass(frozen=True)
class Sentence:
    tokens: tuple[Token, ...]
    start: int
    """Byte offset of the first token (Coq's ``Chars START``)."""
    end: int
    """Byte offset just past the last token (Coq's ``END``)."""

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(token.text for token in self.tokens)


def _ident_start(char: str) -> bool:
    return char == "_" or char.isalpha()


def _ident_tail(char: str) -> bool:
    return char in "_'" or char.isalnum()


def _skip_string(text: str, at: int) -> int:
    """``text[at]`` is a quote; the index just past the closing one (``""`` is an escaped quote)."""
    index = at + 1
    while True:
        close = text.find('"', index)
        if close < 0:
            raise CoqSyntaxRefused("unterminated string")
        if text.startswith('"', close + 1):
            index = close + 2
            continue
        return close + 1


def _skip_comment(text: str, at: int) -> int:
    """``text[at:at+2]`` is ``(*``; the index just past the matching ``*)`` (nested comments and
    strings inside comments, as ``cLexer.comment``)."""
    depth, index = 1, at + 2
    while depth:
        if index >= len(text):
            raise CoqSyntaxRefused("unterminated comment")
        if text.startswith("(*", index):
            depth, index = depth + 1, index + 2
        elif text.startswith("*)", index):
            depth, index = depth - 1, index + 2
        elif text[index] == '"':
            index = _skip_string(text, index)
        else:
            index += 1
    return index


def _number_end(text: str, at: int) -> int:
    """End of the number at ``at`` (``NumTok.Unsigned.parse``: digits and ``_``, an optional
    fraction whose first character is a digit, an optional exponent)."""

    def digits(index: int) -> int:
        while index < len(text) and (text[index].isascii() and text[index].isdigit() or text[index] == "_"):
            index += 1
        return index

    index = digits(at)
    if text.startswith(".", index) and index + 1 < len(text) and text[index + 1] in "0123456789_":
        index = digits(index + 1)
    if index < len(text) and text[index] in "eE":
        sign = 1 if text[index + 1 : index + 2] in ("+", "-") else 0
        if text[index + 1 + sign : index + 2 + sign].isdigit():
            index = digits(index + 1 + sign)
    return index


def _after_dot(text: str, at: int) -> tuple[str, int]:
    """The kind and end of the token that starts with the period at ``at``."""
    nxt = text[at + 1 : at + 2]
    if nxt and _ident_start(nxt):
        end = at + 2
        while end < len(text) and _ident_tail(text[end]):
            end += 1
        return "field", end
    dots = 3 if text.startswith("...", at) else 2 if text.startswith("..", at) else 1
    end = at + dots
    if dots != 2 and (end == len(text) or text[end] in BLANKS):
        return "end", end
    # Glued to something else: ``..``, ``.(``, a notation's token (``x.1``, ``n.+1``) or, where no
    # keyword matches, an error in Coq; never the end of a sentence.
    return "sym", end


def lex(text: str, *, lenient: bool = False) -> list[Token]:
    """Coq's tokens of ``text`` as far as sentence boundaries need them (comments dropped);
    ``lenient``: the tokens before an error instead of raising CoqSyntaxRefused."""
    try:
        return _lex(text)
    except _Partial as partial:
        if lenient:
            return partial.tokens
        raise partial.error from None


class _Partial(Exception):
    def __init__(self, tokens: list[Token], error: CoqSyntaxRefused) -> None:
        self.tokens, self.error = tokens, error


def _lex(text: str) -> list[Token]:
    tokens: list[Token] = []
    between = True  # cLexer's between_commands: where bullets and braces are sentences
    index = 0
    while index < len(text):
        try:
            if text[index] in BLANKS:
                index += 1
            elif text.startswith("(*", index):
                index = _skip_comment(text, index)
            else:
                token, between = _token(text, index, between)
                tokens.append(token)
                index = token.end
        except CoqSyntaxRefused as error:
            raise _Partial(tokens, error) from None
    return tokens


def _token(text: str, start: int, between: bool) -> tuple[Token, bool]:
    """The token at ``start`` (not a blank, not a comment), and ``between`` after it: true after a
    period that ends a sentence, kept by a bullet or brace, false after anything else."""
    char = text[start]
    if char == ".":
        kind, end = _after_dot(text, start)
        return Token(kind, text[start:end], start, end), kind == "end"
    if char in "-+*" and between:
        end = start
        while end < len(text) and text[end] == char:
            end += 1
        return Token("bullet", text[start:end], start, end), True
    if char in "{}" and between:
        return Token("brace", char, start, start + 1), True
    if _ident_start(char):
        end = start + 1
        while end < len(text) and _ident_tail(text[end]):
            end += 1
        if text.startswith(":{{", end):
            raise CoqSyntaxRefused(f"{text[start:end]}:{{{{ starts a quotation that swallows sentences")
        return Token("ident", text[start:end], start, end), False
    if char.isascii() and char.isdigit():
        end = _number_end(text, start)
        return Token("number", text[start:end], start, end), False
    if char == '"':
        end = _skip_string(text, start)
        return Token("string", text[start:end], start, end), False
    return Token("sym", char, start, start + 1), False


def _selector_length(tokens: list[Token] | tuple[Token, ...]) -> int:
    """How many leading tokens form a goal selector with its colon (``2:``, ``1-2, 4:``, ``[g]:``,
    ``!:``, ``all:``, ``par:``), or 0."""
    words = [token.text for token in tokens[:4]]
    kinds = [token.kind for token in tokens[:4]]
    if words[:2] in (["!", ":"], ["all", ":"], ["par", ":"]):
        return 2
    if words[:1] == ["["] and kinds[1:2] == ["ident"] and words[2:4] == ["]", ":"]:
        return 4
    index = 0
    while index < len(tokens) and tokens[index].kind == "number":
        index += 1
        if index + 1 < len(tokens) and tokens[index].text == "-" and tokens[index + 1].kind == "number":
            index += 2
        if index < len(tokens) and tokens[index].text == ",":
            index += 1
            continue
        break
    if index and index < len(tokens) and tokens[index].text == ":" and tokens[index - 1].kind == "number":
        return index + 1
    return 0


def split(text: str) -> list[Sentence]:
    """The sentences of ``text`` in Coq's boundaries; raises CoqSyntaxRefused when text is left
    after the last sentence (a sentence must end: Coq would read on into whatever follows)."""
    tokens = lex(text)
    to_byte = list(accumulate((len(char.encode()) for char in text), initial=0))
    sentences: list[Sentence] = []
    current: list[Token] = []

    def close() -> None:
        sentences.append(Sentence(tuple(current), to_byte[current[0].start], to_byte[current[-1].end]))
        current.clear()

    for token in tokens:
        current.append(token)
        if token.kind in ("end", "bullet") or (token.kind == "brace" and len(current) == 1):
            close()
        elif token.text == "{" and len(current) > 1 and _selector_length(current[:-1]) == len(current) - 1:
            close()  # SELECTOR: {  (the grammar's `OPT toplevel_selector; "{"`)
    if current:
        raise CoqSyntaxRefused(f"the proof ends inside a sentence: {' '.join(t.text for t in current)[:40]!r}")
    return sentences


def sentence_kind(tokens: tuple[Token, ...] | list[Token], tactics: frozenset[str] = frozenset()) -> str:
    """``structural`` (a bullet, a brace, ``SELECTOR: {``), ``tactic`` or ``command``.

    A tactic sentence, after an optional selector, starts with a name whose first letter is not an
    ASCII capital (every tactic of Coq and its plugins), a qualified name (``Z.swap_greater``: a
    capital, then a field), a name in ``tactics`` (capitalised tactics the row's preamble defines),
    ``(`` or ``[>``. Every vernacular command starts with a capital keyword (``Qed``,
    ``Unset``, ``Fixpoint``, ``Local``, ``Time``, ``Fail``) or an attribute ``#[``, so anything
    else is a command."""
    if len(tokens) == 1 and tokens[0].kind in ("bullet", "brace"):
        return "structural"
    skip = _selector_length(tokens)
    rest = tokens[skip:]
    if skip and [token.text for token in rest] == ["{"]:
        return "structural"
    if not rest:
        return "command"
    first = rest[0]
    if first.kind == "ident" and (not "A" <= first.text[0] <= "Z" or first.text in tactics):
        return "tactic"
    if first.kind == "ident" and len(rest) > 1 and rest[1].kind == "field" and rest[1].start == first.end:
        return "tactic"
    if first.text == "(" or first.text == "[" and len(rest) > 1 and rest[1].text == ">" and rest[1].start == first.end:
        return "tactic"  # ( ... ) or [> ... ]: no command or selector starts so
    return "command"


def printed_kind(printed: str, tactics: frozenset[str] = frozenset()) -> str:
    """``sentence_kind`` of a sentence as ``coqtop -time`` prints what it parsed (``[1:~{]``,
    ``[(intros~n).]``, ``[Unset~Guard~Checking.]``; blanks shown as ``~``, cut after 30
    characters). A named selector prints without its brackets (``[g]: {`` as ``g:~{``)."""
    tokens = lex(printed.replace("~", " "), lenient=True)
    if len(tokens) == 3 and tokens[0].kind == "ident" and [t.text for t in tokens[1:]] == [":", "{"]:
        return "structural"
    return sentence_kind(tokens, tactics)


def defined_tactics(preamble: str) -> frozenset[str]:
    """Names of the tactics ``preamble`` defines with ``Ltac NAME`` or ``Tactic Notation ... "NAME"``
    (a row's preamble is trusted; a proof may call its capitalised tactics)."""
    try:
        sentences = split(preamble)
    except CoqSyntaxRefused:
        return frozenset()
    names = set()
    for sentence in sentences:
        words = [token for token in sentence.tokens if token.kind in ("ident", "string")]
        texts = [token.text for token in words]
        if "Ltac" in texts[:3] and texts.index("Ltac") + 1 < len(texts):
            names.add(texts[texts.index("Ltac") + 1])
        elif texts[:2] == ["Tactic", "Notation"]:
            notation = next((token.text for token in words[2:] if token.kind == "string"), '""')
            names.update(notation.strip('"').split()[:1])
    return frozenset(names)
