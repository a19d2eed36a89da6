"""Property tests: invisible, blank-looking and look-alike characters beat no checklist item.

The disguises are built here, from Unicode's own blocks (fullwidth U+FF41, mathematical bold
U+1D41A, sans-serif bold U+1D5EE, monospace U+1D68A are ``a``..``z`` in order) and a hand list of
Cyrillic, Greek and Armenian letters that render like Latin ones, not from the table the checks
use, so a letter the table misses is a failing example.
"""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.verifiers._visible_text import BIDI_CONTROLS, read
from rlvr.verifiers.checklist import CHECKS

SETTINGS = settings(max_examples=150, deadline=None)

INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u034f\u180e\ufe0f\u2061\U000e0041\U000e0100"
"""Zero-width space, joiners, word joiner, BOM, soft hyphen, CGJ, Mongolian vowel separator,
variation selectors 16 and 17, function application, tag A: all render as nothing. (The
bidirectional marks, which also render as nothing, refuse the whole text: test_checklist.py.)"""
FILLERS = "\u2800\u3164\u115f\u1160\uffa0"
"""Braille blank and Hangul fillers: letters or symbols to ``str.split``, blank on screen."""
SPACES = " \u00a0\u2003\u3000"

CROSS_SCRIPT = {
    "a": "\u0430\u03b1",
    "c": "\u0441",
    "e": "\u0435",
    "h": "\u04bb",
    "i": "\u0456",
    "j": "\u0458",
    "o": "\u043e\u03bf\u0585",
    "p": "\u0440\u03c1",
    "s": "\u0455",
    "x": "\u0445",
    "y": "\u0443",
}
"""Cyrillic а с е һ і ј о р ѕ х у, Greek α ο ρ, Armenian օ."""
LOWER_BLOCKS = (0xFF41, 0x1D41A, 0x1D5EE, 0x1D68A)
UPPER_BLOCKS = (0xFF21, 0x1D400, 0x1D5D4, 0x1D670)


def look_alikes(letter: str, *, with_case: bool) -> list[str]:
    """Characters that show ``letter`` (and, ``with_case``, its capital) to a reader."""
    index = string.ascii_lowercase.index(letter)
    shown = [letter, *CROSS_SCRIPT.get(letter, ""), *(chr(block + index) for block in LOWER_BLOCKS)]
    if with_case:
        shown += [letter.upper(), *(chr(block + index) for block in UPPER_BLOCKS)]
    return shown


@st.composite
def disguised(draw: st.DrawFn, plain: str, *, with_case: bool, between: str) -> str:
    """``plain`` with letters swapped for look-alikes and runs of ``between`` inside it."""
    out = []
    for position, char in enumerate(plain):
        if position and draw(st.booleans()):
            out.append(draw(st.text(alphabet=between, min_size=1, max_size=3)))
        out.append(draw(st.sampled_from(look_alikes(char, with_case=with_case))) if char != " " else " ")
    return "".join(out)


words = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8)


@SETTINGS
@given(
    prefix=st.text(max_size=30),
    forbidden=st.text(alphabet=string.ascii_lowercase, min_size=2, max_size=10),
    suffix=st.text(max_size=30),
    ignore_case=st.booleans(),
    data=st.data(),
)
def test_a_disguised_forbidden_word_never_passes_not_contains(
    prefix: str, forbidden: str, suffix: str, ignore_case: bool, data: st.DataObject
) -> None:
    # Fillers may show as nothing, so they too must not hide the word.
    disguise = data.draw(disguised(forbidden, with_case=ignore_case, between=INVISIBLE + FILLERS))
    text = f"{prefix} {disguise} {suffix}"
    item = {"check": "not_contains", "value": forbidden, "ignore_case": ignore_case}
    assert not CHECKS["not_contains"](text, item)[0], ascii(text)


@SETTINGS
@given(shown=st.lists(words, min_size=1, max_size=8).map(" ".join), data=st.data(), ignore_case=st.booleans())
def test_string_items_pass_exactly_when_the_text_shows_the_value(
    shown: str, data: st.DataObject, ignore_case: bool
) -> None:
    """What a reader sees is ``shown``; the completion is it in disguise. ``contains`` passes iff
    the value is in ``shown``, ``not_contains`` iff it is not, ``answer_equals`` iff it is all of it."""
    start = data.draw(st.integers(0, len(shown) - 1))
    value = data.draw(st.one_of(words, st.just(shown[start : start + data.draw(st.integers(1, 12))])))
    if not value.strip():
        value = shown.split()[0]
    text = data.draw(disguised(shown, with_case=ignore_case, between=INVISIBLE))
    item = {"value": value, "ignore_case": ignore_case}
    assert CHECKS["contains"](text, item)[0] is (value in shown), ascii(text)
    assert CHECKS["not_contains"](text, item)[0] is (value not in shown), ascii(text)
    assert CHECKS["answer_equals"](text, item)[0] is (value.strip() == shown), ascii(text)


letters = st.text(alphabet=st.characters(categories=("Ll", "Lu"), max_codepoint=0x052F), min_size=1, max_size=8)
"""Latin, IPA, Greek and Cyrillic words: scripts that never join letters with ZWJ or ZWNJ."""


@SETTINGS
@given(word_list=st.lists(letters, min_size=1, max_size=12), data=st.data())
def test_no_separator_hides_a_word_from_max_words(word_list: list[str], data: st.DataObject) -> None:
    # n words with some blank, space or invisible run between each pair count n: max n passes, n - 1 fails.
    gaps = st.text(alphabet=INVISIBLE + FILLERS + SPACES, min_size=1, max_size=3)
    text = word_list[0] + "".join(data.draw(gaps) + word for word in word_list[1:])
    assert CHECKS["max_words"](text, {"value": len(word_list)})[0], ascii(text)
    assert not CHECKS["max_words"](text, {"value": len(word_list) - 1})[0], ascii(text)


@SETTINGS
@given(word_list=st.lists(letters, min_size=1, max_size=12), data=st.data())
def test_no_invisible_character_adds_a_word_to_min_words(word_list: list[str], data: st.DataObject) -> None:
    # n words parted by blanks or spaces, with invisible runs anywhere, count n: min n passes, n + 1 fails.
    gaps = st.text(alphabet=FILLERS + SPACES, min_size=1, max_size=3)
    shown = word_list[0] + "".join(data.draw(gaps) + word for word in word_list[1:])
    text = "".join(char + data.draw(st.text(alphabet=INVISIBLE, max_size=2)) for char in shown)
    assert CHECKS["min_words"](text, {"value": len(word_list)})[0], ascii(text)
    assert not CHECKS["min_words"](text, {"value": len(word_list) + 1})[0], ascii(text)


@SETTINGS
@given(text=st.text(max_size=60).filter(lambda text: not BIDI_CONTROLS.intersection(text)))
def test_the_upper_word_count_is_never_below_the_lower(text: str) -> None:
    reading = read(text)
    assert reading.most_words >= reading.fewest_words, ascii(text)


NOT_WORDS = [
    "\u0301",
    "\u20dd",
    "\u05b4",
    "-",
    "\u2014",
    "...",
    "!",
    "\u2022",
    "$",
    "\U0001f600",
    "\u2764\ufe0f",
    "\u00b7",
    "\u02c6",
]
"""A lone combining acute, a lone enclosing circle, a lone Hebrew point, dashes, dots, a bullet,
a dollar sign, emoji, a modifier circumflex: tokens that hold no letter or digit."""


@SETTINGS
@given(word_list=st.lists(letters, min_size=1, max_size=8), data=st.data())
def test_tokens_without_a_letter_or_digit_are_no_words(word_list: list[str], data: st.DataObject) -> None:
    # n real words with any number of non-words between them, parted by spaces: both counts are n.
    filler = st.lists(st.sampled_from(NOT_WORDS), max_size=4)
    tokens = [token for word in word_list for token in (word, *data.draw(filler))]
    reading = read(" ".join(tokens))
    assert (reading.most_words, reading.fewest_words) == (len(word_list), len(word_list)), ascii(tokens)
