"""Text as a reader sees it, for checks that count words or look for strings in model output.

A policy rewarded by a checklist learns to beat it with characters a reader cannot see
(https://www.unicode.org/reports/tr36/, "Visual Security Issues"). ``read`` is the one
normalisation every checklist item uses; five families matter:

* **Reordering**: the bidirectional controls (Unicode's Bidi_Control property: U+061C,
  U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) make a text show its characters in another
  order: ``P<U+202E>sira<U+202C>`` shows as "Paris", and ``<U+202E>Paris<U+202C>`` as "siraP".
  What such a text shows cannot be matched honestly against its code points, so ``read`` refuses
  it (``ReorderedText``). Right-to-left letters themselves (Arabic, Hebrew) are no control: a
  text written in them is read as it is.
* **Invisible characters**: format characters (category Cf: U+200B..U+200D, U+2060, U+FEFF, the
  soft hyphen, tags) and the rest of Default_Ignorable_Code_Point (U+034F, variation selectors,
  U+180E ...). They render as nothing, so for matching they are deleted: ``fo<U+200B>rbidden``
  is ``forbidden``.
* **Blank-looking characters** that ``str.split`` does not take for whitespace:
  U+2800 BRAILLE PATTERN BLANK, U+1D159 MUSICAL SYMBOL NULL NOTEHEAD, U+16FE4 KHITAN SMALL SCRIPT
  FILLER and the Hangul fillers U+115F, U+1160, U+3164, U+FFA0. They render
  as a blank (the fillers are also default-ignorable, so some fonts draw nothing). Deleting them
  would glue two words into one and still under-count, so they are whitespace when words are
  counted, and ``not_contains`` tries both renderings. Zs spaces (U+00A0, U+2000..U+200A,
  U+3000) are whitespace to ``str.split`` already.
* **Look-alike letters**: NFKC folds fullwidth (U+FF41) and mathematical alphanumerics (U+1D41A)
  to ASCII; ``CONFUSABLES`` maps the common Cyrillic, Greek, Armenian and IPA letters that render
  like a Latin one (Cyrillic U+0430 for ``a``, Greek omicron for ``o``), plus curly quotes and
  dashes, following Unicode TR39 confusables.txt. It is a compact subset: Python ships no
  confusables table.
* **Things that are not words**: a word needs a letter (not only modifier letters) or a digit,
  so lone combining marks, punctuation, symbols and emoji between spaces count for no word limit.

Accents are kept (``café`` is not ``cafe``), and Latin-internal confusables (``rn``/``m``,
``l``/``I``/``1``, ``0``/``O``) are not folded: honest English would then contain forbidden
words it does not contain (``burn`` would hold ``bum``).
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass

import regex

BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Unicode's Bidi_Control characters (PropList.txt): the marks, embeddings, overrides and isolates
of the bidirectional algorithm (UAX #9)."""

FILLERS = "\u115f\u1160\u2800\u3164\uffa0\U0001d159\U00016fe4"
"""Blank-looking characters that are not whitespace: Hangul fillers, BRAILLE PATTERN BLANK, MUSICAL
SYMBOL NULL NOTEHEAD and KHITAN SMALL SCRIPT FILLER (a combining mark that draws nothing)."""

_INVISIBLE_CLASS = r"[\p{Cf}\p{Default_Ignorable_Code_Point}--[" + FILLERS + "]]"
INVISIBLE = regex.compile(_INVISIBLE_CLASS, regex.V1)
"""Characters that render as nothing (Cf and Default_Ignorable_Code_Point, DerivedCoreProperties.txt)."""

_JOINERS = frozenset("\u200c\u200d")
"""ZWNJ and ZWJ join or part letters inside words in Arabic-script and Indic text (The Unicode
Standard, section 23.2), and emoji into one picture; between Latin, Greek or Cyrillic letters
they have no use but gluing words."""

_JOINER_SCRIPTS_FROM = 0x0530
"""Letters at or above this code point (Armenian onwards) may carry joiners inside a word;
Latin, IPA, Greek and Cyrillic all lie below it."""

_LETTER = rf"[[\p{{L}}\p{{M}}\p{{N}}]--{_INVISIBLE_CLASS}]"
_INVISIBLE_BETWEEN_LETTERS = regex.compile(rf"(?<=({_LETTER}))({_INVISIBLE_CLASS}+)(?=({_LETTER}))", regex.V1)
_WHITESPACE_RUN = regex.compile(r"\s+")
_HAS_LETTER_OR_DIGIT = regex.compile(r"[[\p{L}\p{N}]--\p{Lm}]", regex.V1)
"""A letter or digit; a modifier letter alone (U+02C6 ˆ, U+30FC ー) shows as an accent or a dash."""
_WORD = regex.compile(r"(?:[\p{L}\p{N}]\p{M}*)+(?:(?:['\u2019]|(?<=\p{N})[.,:](?=\p{N}))(?:[\p{L}\p{N}]\p{M}*)+)*")
"""A run of letters and digits (with their combining marks), joined by an apostrophe (``don't``)
or by a decimal point, comma or colon between digits (``3.14``, ``1,000``, ``12:30``)."""

CONFUSABLES = {
    # Cyrillic А В С Е Н І Ј К М О Р Ѕ Т Х У Ү Ԛ Ԝ Ӏ, а с е һ і ј о р ѕ х у ԁ ԛ ԝ ӏ
    "\u0410": "A", "\u0412": "B", "\u0421": "C", "\u0415": "E", "\u041d": "H", "\u0406": "I", "\u0408": "J",
    "\u041a": "K", "\u041c": "M", "\u041e": "O", "\u0420": "P", "\u0405": "S", "\u0422": "T", "\u0425": "X",
    "\u0423": "Y", "\u04ae": "Y", "\u051a": "Q", "\u051c": "W", "\u04c0": "I", "\u0430": "a", "\u0441": "c",
    "\u0435": "e", "\u04bb": "h", "\u0456": "i", "\u0458": "j", "\u043e": "o", "\u0440": "p", "\u0455": "s",
    "\u0445": "x", "\u0443": "y", "\u0501": "d", "\u051b": "q", "\u051d": "w", "\u04cf": "l",
    # Greek Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ, α ο ρ ι ν υ γ ϳ
    "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u0399": "I", "\u039a": "K",
    "\u039c": "M", "\u039d": "N", "\u039f": "O", "\u03a1": "P", "\u03a4": "T", "\u03a5": "Y", "\u03a7": "X",
    "\u03b1": "a", "\u03bf": "o", "\u03c1": "p", "\u03b9": "i", "\u03bd": "v", "\u03c5": "u", "\u03b3": "y",
    "\u03f3": "j",
    # Armenian Օ օ ս ո հ; IPA ı ȷ ɑ ɡ ɩ
    "\u0555": "O", "\u0585": "o", "\u057d": "u", "\u0578": "n", "\u0570": "h", "\u0131": "i", "\u0237": "j",
    "\u0251": "a", "\u0261": "g", "\u0269": "i",
    # quotes and dashes, which NFKC keeps: ‘ ’ ʼ ′ “ ” ‐ ‒ – − (so don’t is don't)
    "\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"', "\u2010": "-",
    "\u2012": "-", "\u2013": "-", "\u2212": "-",
}  # fmt: skip
"""Look-alikes of basic Latin letters and punctuation, a hand-picked subset of
https://www.unicode.org/Public/security/latest/confusables.txt (Unicode TR39, section 4)."""

_LOOK_ALIKES = str.maketrans(CONFUSABLES)
_FILLERS_AS_SPACES = str.maketrans(dict.fromkeys(FILLERS, " "))
_FILLERS_DELETED = str.maketrans(dict.fromkeys(FILLERS, ""))


class ReorderedText(ValueError):
    """A text holding bidirectional controls: what it shows is not its characters in order."""


@dataclass(frozen=True)
class Reading:
    """A text as a reader sees it. ``shown`` has invisible characters deleted and blank-looking ones
    as spaces, ``glued`` has both deleted (some fonts draw the Hangul fillers as nothing);
    ``most_words`` and ``fewest_words`` bound the words a reader may count."""

    shown: str
    glued: str
    most_words: int
    fewest_words: int

    def form(self, *, ignore_case: bool) -> str:
        """``shown`` in the form strings are compared in (``fold``)."""
        return fold(self.shown, ignore_case=ignore_case)

    def forms(self, *, ignore_case: bool) -> set[str]:
        """Every rendering a reader may see, in the form strings are compared in."""
        return {fold(self.shown, ignore_case=ignore_case), fold(self.glued, ignore_case=ignore_case)}


@functools.lru_cache(maxsize=64)
def read(text: str) -> Reading:
    """The one normalisation every checklist item reads (a row's values too). Raises
    ``ReorderedText`` if ``text`` holds a bidirectional control."""
    controls = sorted(BIDI_CONTROLS.intersection(text))
    if controls:
        raise ReorderedText("bidirectional controls " + " ".join(f"U+{ord(c):04X}" for c in controls))
    visible = INVISIBLE.sub("", text)
    shown = visible.translate(_FILLERS_AS_SPACES)
    return Reading(shown, visible.translate(_FILLERS_DELETED), _most_words(text), _fewest_words(shown))


def _most_words(text: str) -> int:
    """Words counted so that no separator hides one: invisible characters between two letters part
    them (``one<U+200B>two`` is two words), as blank-looking characters and punctuation do
    (``one,two`` and ``well-known`` are two). For upper limits."""
    parted = _INVISIBLE_BETWEEN_LETTERS.sub(_part_or_join, text)
    runs = _WORD.findall(INVISIBLE.sub("", parted).translate(_FILLERS_AS_SPACES))
    return sum(1 for run in runs if _HAS_LETTER_OR_DIGIT.search(run))


def _fewest_words(shown: str) -> int:
    """Words counted so that nothing adds one: runs between blanks that hold a letter or a digit
    (``one<U+200B>two`` is one word; a lone combining mark, ``-`` or an emoji is none). For lower limits."""
    return sum(1 for token in shown.split() if _HAS_LETTER_OR_DIGIT.search(token))


def _part_or_join(match: regex.Match) -> str:
    before, run, after = match.group(1, 2, 3)
    if set(run) <= _JOINERS and max(ord(before), ord(after)) >= _JOINER_SCRIPTS_FROM:
        return ""
    return " "


def fold(text: str, *, ignore_case: bool) -> str:
    """The form strings are compared in: NFKD, look-alikes mapped to Latin, case folded when asked,
    NFKC, whitespace runs one space. Decomposing first lets an accent find its letter across a
    deleted character and maps Cyrillic ``ё`` to Latin ``ë``; NFKC then recomposes, so ``café``
    stays ``café``."""
    folded = unicodedata.normalize("NFKD", text).translate(_LOOK_ALIKES)
    if ignore_case:
        folded = folded.casefold()
    return _WHITESPACE_RUN.sub(" ", unicodedata.normalize("NFKC", folded))
