r"""The LaTeX that math-verify reads, and the answers it would read only in part.

math-verify (latex2sympy underneath) parses the longest prefix it can and drops the rest, restarts
after some commands, and drops commands it does not know with their argument: "42@43", "42-",
"42é", "43~42", "42\pi\foo" and "\cancel{43} 42" all passed for 42. ``malformed`` finds what in
an answer math-verify would not read whole, before math-verify sees it. The tables below were
found by running math-verify 0.9 on "43\X 42", "42\pi\X" and "42\pi\X 3" for each command X.

Standard library only: this runs in the trainer's process.
"""

from __future__ import annotations

import re

# A number is one token: ASCII digits, an optional decimal part, and "1,000,000"-style thousands
# groups (math-verify reads "1,000" as 1000, not as the list 1, 0).
TOKEN = re.compile(
    r"(?P<number>[1-9][0-9]{0,2}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]*\.[0-9]+|[0-9]+\.?)"
    r"|(?P<command>\\(?:[A-Za-z]+|.))"
    r"|(?P<word>[A-Za-z]+)"
    r"|(?P<space>\s+)"
    r"|(?P<char>.)",
    re.DOTALL,
)

_RELATIONS = (
    "lt gt le leq leqq leqslant ge geq geqq geqslant ne neq not nless ngtr nleq ngeq lesssim gtrsim "
    "ll gg approx approxeq sim simeq cong equiv propto doteq coloneqq prec succ preceq succeq "
    "notin ni subset subseteq supset supseteq subsetneq supsetneq to rightarrow Rightarrow "
    "longrightarrow Longrightarrow leftarrow Leftarrow gets leftrightarrow Leftrightarrow iff "
    "implies impliedby mapsto mid parallel perp colon"
).split()  # \in is judged with "=": "x \in [0, 1)" is an assignment when the gold is a set
STRUCTURE_OF_COMMAND: dict[str, str] = {
    **dict.fromkeys(["lor", "vee", "bigvee"], "disjunction"),
    **dict.fromkeys(["land", "wedge", "bigwedge", "&"], "conjunction"),
    **dict.fromkeys(_RELATIONS, "relation"),
    **dict.fromkeys(["pm", "mp"], "plus_minus"),
    **dict.fromkeys(["\\", "newline", "cr", "linebreak"], "line_break"),
    **dict.fromkeys(["dots", "ldots", "cdots", "dotsc", "dotsb"], "ellipsis"),
    **dict.fromkeys(
        ["{", "}", "lbrace", "rbrace", "cup", "cap", "setminus", "emptyset", "varnothing", "mathbb"], "set"
    ),
}
STRUCTURE_OF_CHAR: dict[str, str] = {
    "∨": "disjunction", "∧": "conjunction", "±": "plus_minus", "∓": "plus_minus", "&": "alignment",
    "…": "ellipsis", **dict.fromkeys("<>≤≥≠≈∈∉≡∼≅≪≫⊂⊆⊃⊇∝→⇒⇔↔⟹⟺", "relation"),
}  # fmt: skip
STRUCTURE_OF_WORD = {"or": "disjunction", "and": "conjunction"}

GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi omicron "
    "rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma "
    "Upsilon Phi Psi Omega"
).split()  # not \pi: a constant
_FUNCTIONS = set(
    "sin cos tan cot sec csc arcsin arccos arctan arccot sinh cosh tanh coth log ln lg exp int sum prod "
    "lim liminf limsup max min gcd lcm det dim ker sup inf arg deg mod bmod".split()
)
"""Commands that need an operand after them (a power or an index may come first: "\\sin^2 x")."""
_RESTARTING_FUNCTIONS = set("lg sum prod lim liminf limsup max min gcd lcm det dim ker sup inf arg deg bmod".split())
_JOINING_COMMANDS = (
    set("pi varpi Pi infty nabla prime angle triangle ell hbar Re Im neg lnot cdot times div pmod".split())
    | set(GREEK)
    | (_FUNCTIONS - _RESTARTING_FUNCTIONS)
)
"""Commands that math-verify reads as a value or an operation joining its neighbours: "2\\pi 3" is
one product."""
RESTARTING_COMMANDS = _RESTARTING_FUNCTIONS | set(
    "ast star oplus otimes cap cup setminus emptyset circ degree partial aleph dagger checkmark therefore because "
    "textstyle limits vert Vert big Big bigg Bigg bigl bigr Bigl Bigr".split()
)
"""Commands that math-verify knows but restarts at, dropping what came before: "42\\pi\\max 3"
was 3 and "43\\circ 42" was 42. A value may not stand right before one (``_dropped_before``)."""
ARGUMENT_COMMANDS = set(
    "frac dfrac tfrac cfrac sqrt binom dbinom tbinom text textbf textit textrm textup mbox mathrm mathbf "
    "mathit mathsf mathtt mathbb mathcal boldsymbol operatorname textnormal boxed fbox overline underline bar hat "
    "vec tilde widehat widetilde dot ddot pmod begin end".split()
)
"""Commands whose ``{…}`` argument is part of the value. math-verify drops any other command WITH its
argument: "\\foo{43} 42", "\\cancel{43} 42" and "42\\hphantom{43}" passed for 42 (a "hidden" number)."""
SPACING = {",", ";", ":", "!", " ", "quad", "qquad", "enspace", "thinspace", "medspace", "thickspace", "displaystyle"}

_KNOWN_COMMANDS = (
    _JOINING_COMMANDS
    | RESTARTING_COMMANDS
    | ARGUMENT_COMMANDS
    | set(STRUCTURE_OF_COMMAND)
    | SPACING
    | {
        "in",
        "left",
        "right",
        "langle",
        "rangle",
        "lvert",
        "rvert",
        "lVert",
        "rVert",
        "lfloor",
        "rfloor",
        "lceil",
        "rceil",
        "lbrack",
        "rbrack",
        "%",
        "$",
        "#",
        "&",
        "_",
        "|",
    }
)
"""Commands an answer may use; math-verify stops reading at any other ("42\\pi\\foo" was 42)."""

PAIR_OF = {
    "(": "()", "[": "()", ")": "()", "]": "()",  # intervals mix them: [0, 1)
    "{": "{}", "}": "{}", "\\{": "set", "\\}": "set", "\\lbrace": "set", "\\rbrace": "set",
    "\\langle": "angle", "\\rangle": "angle", "\\lvert": "vert", "\\rvert": "vert",
    "\\lVert": "Vert", "\\rVert": "Vert", "\\lfloor": "floor", "\\rfloor": "floor",
    "\\lceil": "ceil", "\\rceil": "ceil", "\\lbrack": "()", "\\rbrack": "()", "\\left": "left", "\\right": "left",
}  # fmt: skip
OPENERS = {
    "(",
    "[",
    "{",
    "\\{",
    "\\lbrace",
    "\\lbrack",
    "\\langle",
    "\\lvert",
    "\\lVert",
    "\\lfloor",
    "\\lceil",
    "\\left",
}
CLOSERS = set(PAIR_OF) - OPENERS

_MATH_UNICODE = set("π°×÷−") | set(STRUCTURE_OF_CHAR)
"""The characters outside printable ASCII that an answer may hold: math-verify stops reading at
others ("42·43" was 42, "42 ∞" was 42)."""
_STRAY_ASCII = set('@?"`#~\\')
"""ASCII that means nothing in math (an escaped ``\\#`` is a command token, not this). "~" is a
LaTeX space, but math-verify stops reading at it: "43~42" was 43, "42!~" was 42."""
_BINARY = {"*", "/", "^", "_", ":", "×", "÷", "\\cdot", "\\times", "\\div", "\\cup", "\\cap", "\\setminus"}
_PERCENT = {"%", "\\%"}
ASSIGNMENTS = ("=", "\\in")
"""The relations an answer may start with: ``x = 42``, and ``x \\in [0, 1)`` where the gold is a set."""
_NO_LEFT_OPERAND = _BINARY | _PERCENT | {"!"}
_NO_RIGHT_OPERAND = _BINARY | {"+", "-", "−"}


_NUMBER_SUBSCRIPT = re.compile(r"[0-9.]\s*_")
"""A base written as a subscript (``204_5``): an answer may write one where its gold does."""


def blank(kind: str | None, token: str) -> bool:
    """Spacing, and ``$``."""
    return kind == "space" or token == "$" or (kind == "command" and token[1:] in SPACING)


def group_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` that closes a group opened right before ``start``."""
    depth = 1
    for match in TOKEN.finditer(text, start):
        depth += {"{": 1, "}": -1}.get(match.group(), 0)  # "\{" is one command token, not a brace
        if depth == 0:
            return match.end()
    return None


def malformed(text: str, gold: str) -> str | None:
    """What in ``text`` is not math that math-verify reads, or None. math-verify parses up to
    what it cannot read and drops the rest: "42@43", "42\\x1b", "42é", "42-" and "42\\pi\\foo"
    all passed for 42. Whatever the gold itself writes is allowed."""
    if re.search(r"[^\S \t\n\r]", text):  # e.g. "\xa0" or "\x1c": they split math-verify's parse
        return "whitespace other than spaces, tabs and newlines"
    known = _KNOWN_COMMANDS | set(re.findall(r"\\([A-Za-z]+|.)", gold))
    tokens = [m for m in TOKEN.finditer(text) if not blank(m.lastgroup, m.group())]
    for match in tokens:
        kind, token = match.lastgroup, match.group()
        if token in ("\\(", "\\)", "\\[", "\\]"):
            return f"a math delimiter ({token!r}) inside the answer"
        if kind == "command" and token[1:] not in known:
            return f"an unknown command ({token!r}), which math-verify drops with what follows"
        if (
            kind == "char"
            and token not in gold
            and (
                token in _STRAY_ASCII or not token.isprintable() or (not token.isascii() and token not in _MATH_UNICODE)
            )
        ):
            return f"a character that is not math ({token!r}, U+{ord(token):04X})"
        if token == "'" and not re.search(r"[A-Za-z'})\]]$", text[: match.start()]):
            return "a prime (') that follows no symbol"
        if token == "_" and re.search(r"[0-9.]\s*$", text[: match.start()]) and not _NUMBER_SUBSCRIPT.search(gold):
            return "a subscript on a number, which math-verify drops"
        if token == "°" and not re.search(r"[0-9]\s*$", text[: match.start()]):
            return "a degree sign (°) that follows no number"
    texts = [m.group() for m in tokens]
    return _unpaired(text, texts) or _missing_operand(texts) or _dropped_before(texts)


def _unpaired(text: str, tokens: list[str]) -> str | None:
    """An odd number of ``$`` or of ``|`` (not counting "\\right|"), or an empty ``||``."""
    if sum(m.group() == "$" for m in TOKEN.finditer(text)) % 2:  # "\$" is a command token
        return "an unpaired $"
    bars = [
        i for i, token in enumerate(tokens) if token == "|" and (i == 0 or tokens[i - 1] not in ("\\left", "\\right"))
    ]
    if len(bars) % 2:
        return "an unpaired |"
    if any(later == earlier + 1 for earlier, later in zip(bars, bars[1:], strict=False)):
        return "an empty |...|"
    return None


def _missing_operand(tokens: list[str]) -> str | None:
    """An operator or function without an operand: "42-", "*42", "42^/K", "(42+)", "\\% 42", "2\\sin"."""
    no_value_before = _NO_RIGHT_OPERAND | OPENERS | _PERCENT | {",", ";", "=", "the start"}
    no_value_after = _NO_LEFT_OPERAND | CLOSERS | {",", ";", "=", "the end"}
    for before, after in zip(["the start", *tokens], [*tokens, "the end"], strict=True):
        function_alone = before[1:] in _FUNCTIONS and after in no_value_after - {"^", "_"}
        if (
            function_alone
            or (before in no_value_before and after in _NO_LEFT_OPERAND)
            or (before in _NO_RIGHT_OPERAND and after in no_value_after)
        ):
            return f"an operator without an operand ({before!r} then {after!r})"
    return None


def _dropped_before(tokens: list[str]) -> str | None:
    """A value right before a command at which math-verify restarts: "42\\pi\\max 3" was read as 3.

    Not after an operator, a bracket or a comma (nothing to drop), not before a bracket ("2\\max(1, 3)"
    is read whole), and a degree sign may follow a number ("30\\circ")."""
    no_value = _NO_RIGHT_OPERAND | OPENERS | {",", ";", "=", "^", "the start"}
    for before, command, after in zip(["the start", *tokens], tokens, [*tokens[1:], "the end"], strict=False):
        if command[1:] not in RESTARTING_COMMANDS or before in no_value or after in OPENERS:
            continue
        if command in ("\\circ", "\\degree") and re.fullmatch(r"[0-9.,]+", before):
            continue
        return f"a value before {command!r}, which math-verify would drop"
    return None
