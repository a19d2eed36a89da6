"""ChecklistVerifier: weighted partial credit from pure checks; hostile texts stay bounded."""

from __future__ import annotations

import time

import pytest

from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.checklist import CHECKS, MAX_TEXT_CHARS, ChecklistVerifier
from rlvr.verifiers.registry import get_verifier

ITEMS = [
    {"check": "contains", "value": "Paris", "weight": 2},
    {"check": "regex", "pattern": r"\b1[0-9]{3}\b"},
    {"check": "max_words", "value": 12},
    {"check": "not_contains", "value": "London", "ignore_case": True},
]
"""Total weight 5."""


def row(items: list[dict] | None = None) -> Query:
    return Query("k1", "", {"type": "checklist", "items": ITEMS if items is None else items})


def answered(text: str, think: str = "hmm") -> str:
    return f"<think>{think}</think><answer>{text}</answer>"


@pytest.fixture(scope="module")
def verifier() -> ChecklistVerifier:
    return ChecklistVerifier()


def test_every_item_passes(verifier: ChecklistVerifier) -> None:
    result = verifier.verify(row(), answered("Paris became the capital around 1190."))
    assert (result.verdict, result.score, result.error_class) == (Verdict.PASS, 1.0, ErrorClass.NONE), result
    assert [t.name for t in result.tests] == [
        "items[0] contains",
        "items[1] regex",
        "items[2] max_words",
        "items[3] not_contains",
    ]


def test_partial_credit_is_passed_weight_over_total_weight(verifier: ChecklistVerifier) -> None:
    # contains (2) passes, regex (1) fails, max_words (1) passes, not_contains (1) fails: 3/5.
    result = verifier.verify(row(), answered("Paris, not london, long ago."))
    assert result.verdict is Verdict.PARTIAL and result.score == pytest.approx(3 / 5), result
    assert [t.passed for t in result.tests] == [True, False, True, False]
    assert result.error_class is ErrorClass.WRONG_ANSWER and "items[1] regex" in result.detail


def test_no_item_passes_is_fail_with_score_zero(verifier: ChecklistVerifier) -> None:
    result = verifier.verify(row(), answered("London " * 20))
    assert (result.verdict, result.score) == (Verdict.FAIL, 0.0), result


def test_keywords_stuffed_in_think_earn_nothing(verifier: ChecklistVerifier) -> None:
    result = verifier.verify(row([ITEMS[0], ITEMS[1]]), answered("I do not know.", think="Paris 1190 Paris"))
    assert (result.verdict, result.score) == (Verdict.FAIL, 0.0), result


def test_on_completion_reads_the_whole_text(verifier: ChecklistVerifier) -> None:
    item = {"check": "contains", "value": "step 1", "on": "completion"}
    assert verifier.verify(row([item]), answered("42", think="step 1: add")).verdict is Verdict.PASS


@pytest.mark.parametrize("completion", ["no tags at all, Paris 1190", answered(""), answered("   ")])
def test_missing_or_empty_answer_earns_nothing_not_even_negative_checks(
    verifier: ChecklistVerifier, completion: str
) -> None:
    result = verifier.verify(row(), completion)
    assert (result.verdict, result.score, result.error_class) == (Verdict.FAIL, 0.0, ErrorClass.NO_ANSWER), result


@pytest.mark.parametrize(("item", "text", "passed"), [
    ({"check": "answer_equals", "value": "New  York"}, " New York ", True),
    ({"check": "answer_equals", "value": "New York"}, "New York City", False),
    ({"check": "answer_equals", "value": "new york", "ignore_case": True}, "New York", True),
    ({"check": "answer_equals", "value": "new york"}, "New York", False),
    ({"check": "contains", "value": "paris"}, "Paris", False),
    ({"check": "min_words", "value": 3}, "one two", False),
    ({"check": "max_words", "value": 2}, "one two", True),
    ({"check": "json_keys", "keys": ["a", "b"]}, '{"a": 1, "b": 2, "c": 3}', True),
    ({"check": "json_keys", "keys": ["a", "b"]}, '{"a": 1}', False),
    ({"check": "json_keys", "keys": ["a"]}, '[{"a": 1}]', False),
    ({"check": "json_keys", "keys": ["a"]}, '{"a": 1} trailing', False),
    ({"check": "json_keys", "keys": ["a"]}, "[" * 100_000, False),  # deep nesting: not JSON, no crash
    ({"check": "regex", "pattern": "^yes$", "ignore_case": True}, "YES", True),
])  # fmt: skip
def test_each_check(verifier: ChecklistVerifier, item: dict, text: str, passed: bool) -> None:
    if len(text) > MAX_TEXT_CHARS:
        assert CHECKS[item["check"]](text, item)[0] is passed  # below the verifier's cap: call it directly
    else:
        result = verifier.verify(row([item]), answered(text))
        assert (result.verdict is Verdict.PASS) is passed, result


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+$", r"(\w+\s?)+$"])
def test_catastrophic_backtracking_is_cut_off(verifier: ChecklistVerifier, pattern: str) -> None:
    items = [{"check": "regex", "pattern": pattern}, {"check": "contains", "value": "a"}]
    started = time.perf_counter()
    result = verifier.verify(row(items), answered("a" * 5000 + "!"))
    assert time.perf_counter() - started < 2.0
    assert result.verdict is Verdict.PARTIAL and result.score == 0.5, result
    assert result.error_class is ErrorClass.TIMEOUT and not result.tests[0].passed


def test_huge_answer_fails_every_item_at_once(verifier: ChecklistVerifier) -> None:
    result = verifier.verify(row(), answered("Paris 1190 " * 10_000))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.OUTPUT_LIMIT), result


@pytest.mark.parametrize(("items", "key"), [
    (None, '"items"'),
    ([], '"items"'),
    ([{"check": "vibes"}], 'items[0]: "check"'),
    ([{"check": "contains"}], 'items[0]: "value"'),
    ([ITEMS[0], {"check": "contains", "value": "x", "weight": 0}], 'items[1]: "weight"'),
    ([{"check": "contains", "value": "x", "weight": True}], '"weight"'),
    ([{"check": "regex", "pattern": "(unclosed"}], '"pattern" does not compile'),
    ([{"check": "max_words", "value": -1}], '"value"'),
    ([{"check": "json_keys", "keys": "a"}], '"keys"'),
    ([{"check": "contains", "value": "x", "on": "think"}], '"on"'),
    ([{"check": "contains", "value": "x", "ignore_case": "yes"}], '"ignore_case"'),
])  # fmt: skip
def test_bad_criteria_is_an_error_naming_the_query_and_key(
    verifier: ChecklistVerifier, items: object, key: str
) -> None:
    criteria = {"type": "checklist"} if items is None else {"type": "checklist", "items": items}
    result = verifier.verify(Query("bad-row", "", criteria), answered("Paris"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA), result
    assert "'bad-row'" in result.detail and key in result.detail
    assert not result.scorable


def test_registry_builds_the_checklist_verifier() -> None:
    assert isinstance(get_verifier("checklist"), ChecklistVerifier)


SEPARATORS = [
    "\u2800",  # BRAILLE PATTERN BLANK (So): renders blank, not whitespace to str.split
    "\u3164", "\u115f", "\u1160", "\uffa0",  # Hangul fillers (Lo)
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",  # zero-width space, joiners, word joiner, BOM (Cf)
    "\u00ad", "\u180e", "\u034f", "\U000e0020",  # soft hyphen, Mongolian vowel separator, CGJ, tag space
    "\u00a0", "\u2003", "\u3000",  # Zs: whitespace already, kept as a regression guard
]  # fmt: skip


@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda c: f"U+{ord(c):04X}")
def test_max_words_counts_words_joined_by_blank_or_invisible_characters(
    verifier: ChecklistVerifier, separator: str
) -> None:
    # six words, limit five: every separator must still part them (6 > 5 fails).
    text = separator.join(["one", "two", "three", "four", "five", "six"])
    result = verifier.verify(row([{"check": "max_words", "value": 5}]), answered(text))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result
    assert "6 words > 5" in result.detail


FORBIDDEN_SPELLINGS = [
    "fo\u200brbidden", "for\u200cbidden", "forbid\u200dden", "f\u2060orbidden", "forbid\u00adden",
    "forb\u034fidden", "forbi\u180edden", "forbidd\ufe0fen", "forbid\U000e0041den",
    "forb\u3164idden", "forb\u2800idden",  # blank-looking: a font that draws nothing shows "forbidden"
    "f\u043erbidd\u0435n",  # Cyrillic о and е
    "f\u03bfrbidden",  # Greek omicron
    "\uff46\uff4f\uff52\uff42\uff49\uff44\uff44\uff45\uff4e",  # fullwidth
    "\U0001d41f\U0001d428\U0001d42b\U0001d41b\U0001d422\U0001d41d\U0001d41d\U0001d41e\U0001d427",  # math bold
    "forb\U000e0100idden", "forbi\u2063dden", "f\u2062orbidden",  # variation selector 17, invisible separator and times
    "forb\U0001d159idden", "forbid\U00016fe4den",  # musical null notehead, Khitan filler: draw nothing
    "forbidden",  # plain, as a control
]  # fmt: skip


@pytest.mark.parametrize("spelling", FORBIDDEN_SPELLINGS, ids=ascii)
@pytest.mark.parametrize("ignore_case", [False, True])
def test_not_contains_sees_through_invisible_and_look_alike_characters(
    verifier: ChecklistVerifier, spelling: str, ignore_case: bool
) -> None:
    item = {"check": "not_contains", "value": "forbidden", "ignore_case": ignore_case}
    result = verifier.verify(row([item]), answered(f"This is not {spelling} at all."))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result


def test_not_contains_with_ignore_case_folds_case_after_look_alikes(verifier: ChecklistVerifier) -> None:
    item = {"check": "not_contains", "value": "forbidden", "ignore_case": True}
    # Cyrillic capital О (U+041E) reads as Latin O, then case folds to o.
    assert verifier.verify(row([item]), answered("F\u041eRBIDDEN")).verdict is Verdict.FAIL


@pytest.mark.parametrize(("item", "text"), [
    ({"check": "not_contains", "value": "cafe"}, "We met at the café, then left."),  # accents are kept
    ({"check": "not_contains", "value": "bum"}, "They burn the logs."),  # rn is not folded to m
    ({"check": "not_contains", "value": "forbidden"}, "Nothing forbid den here: it's for bidding."),
    ({"check": "not_contains", "value": "don't", "ignore_case": True}, "Do it; I won\u2019t stop you."),
    ({"check": "contains", "value": "Don't"}, "Don\u2019t panic."),  # curly apostrophe reads as '
    ({"check": "contains", "value": "Paris"}, "P\u200baris, in 1190."),  # renders as Paris
    ({"check": "contains", "value": "café"}, "Un cafe\u0301 noir."),  # decomposed é is é
    ({"check": "answer_equals", "value": "Paris"}, "\u0420aris"),  # Cyrillic Р shows as P
    # "Don’t stop — it’s fine." is 5 words: Don’t / stop / — / it’s / fine.
    ({"check": "max_words", "value": 5}, "Don\u2019t stop \u2014 it\u2019s fine."),
    # an emoji family is one picture joined by ZWJ: We / love / 👨‍👩‍👧 / days = 4 words
    ({"check": "max_words", "value": 4}, "We love \U0001f468\u200d\U0001f469\u200d\U0001f467 days"),
    # Persian writes ZWNJ inside a word: می‌خواهم ("I want") is one word
    ({"check": "max_words", "value": 1}, "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"),
    ({"check": "min_words", "value": 3}, "one\u2800two\u3164three"),  # blank-looking characters part words
])  # fmt: skip
def test_honest_texts_still_pass(verifier: ChecklistVerifier, item: dict, text: str) -> None:
    result = verifier.verify(row([item]), answered(text))
    assert result.verdict is Verdict.PASS, result


BIDI = [
    ("not_contains", "Paris", "P\u202esira\u202c"),  # RIGHT-TO-LEFT OVERRIDE: shows "Paris"
    ("not_contains", "Paris", "\u202esiraP"),  # unterminated: the override runs to the paragraph's end
    ("not_contains", "Paris", "\u2067\u202esiraP\u202c\u2069"),  # inside a right-to-left isolate
    ("not_contains", "Paris", "\u202b\u202esiraP\u202c\u202c"),  # inside a right-to-left embedding
    ("contains", "Paris", "\u202eParis\u202c"),  # holds "Paris", shows "siraP"
    ("answer_equals", "42", "\u202e42\u202c"),  # shows "24"
    ("regex", r"^\d{4}$", "\u202e0911\u202c"),  # shows "1190" reversed
    ("contains", "Paris", "\u202dParis\u202c"),  # LEFT-TO-RIGHT OVERRIDE, shown as is: still refused
    ("not_contains", "Paris", "\u200fris\u200fPa"),  # marks alone: the first makes the line right-to-left, shows "Paris"
    ("not_contains", "Paris", "\u061cris\u061cPa"),  # the same with ARABIC LETTER MARK
    ("min_words", 3, "one\u200etwo\u200fthree four"),  # left-to-right and right-to-left marks
    ("max_words", 2, "one\u061ctwo\u061cthree"),  # ARABIC LETTER MARK
    ("json_keys", ["a"], '{"a": 1}\u2066'),  # a lone left-to-right isolate
]  # fmt: skip
"""Each bidirectional control (Bidi_Control: the marks, embeddings, overrides and isolates), each
item type: a text whose display order is not its character order fails every item."""


@pytest.mark.parametrize(("check", "value", "text"), BIDI, ids=ascii)
def test_bidirectional_controls_fail_every_item(verifier: ChecklistVerifier, check: str, value, text: str) -> None:
    item = {"check": check, ("keys" if check == "json_keys" else "pattern" if check == "regex" else "value"): value}
    result = verifier.verify(row([item]), answered(text))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION), result
    assert "bidirectional controls" in result.detail


def test_a_bidirectional_control_in_think_refuses_the_answer_it_reorders(verifier: ChecklistVerifier) -> None:
    # the override opened in <think> runs on into the answer on the same line: "Paris" shows as "siraP"
    item = {"check": "contains", "value": "Paris"}
    result = verifier.verify(row([item, {"check": "max_words", "value": 5}]), answered("Paris", think="\u202e"))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.PROTOCOL_VIOLATION), result


def test_a_value_holding_bidirectional_controls_is_a_bad_row(verifier: ChecklistVerifier) -> None:
    result = verifier.verify(row([{"check": "contains", "value": "P\u202esira"}]), answered("Paris"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA), result
    assert '"value" holds bidirectional controls U+202E' in result.detail


NOT_WORDS = {
    "combining_acute": "\u0301",
    "combining_enclosing_circle": "\u20dd",
    "hebrew_point": "\u05b4",
    "arabic_fatha": "\u064e",
    "em_dash": "\u2014",
    "ellipsis": "...",
    "bullet": "\u2022",
    "emoji": "\U0001f600",
    "zero_width_space": "\u200b",
    "variation_selector": "\ufe0f",
    "modifier_circumflex": "\u02c6",  # a modifier letter (Lm) alone shows as an accent
}
"""Tokens that show no letter or digit; between spaces they are no words."""


@pytest.mark.parametrize("token", NOT_WORDS.values(), ids=NOT_WORDS)
def test_a_word_needs_a_letter_or_a_digit(verifier: ChecklistVerifier, token: str) -> None:
    # "one two" plus four of the token: 2 words whichever way they are counted, so min 3 fails, max 2 passes.
    text = "one two " + " ".join([token] * 4)
    result = verifier.verify(row([{"check": "min_words", "value": 3}]), answered(text))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.WRONG_ANSWER), result
    assert "2 words < 3" in result.detail
    assert verifier.verify(row([{"check": "max_words", "value": 2}]), answered(text)).verdict is Verdict.PASS


@pytest.mark.parametrize(("text", "words"), [
    ("one,two,three,four", 4),  # punctuation parts words for the upper limit
    ("one/two/three", 3),
    ("well-known state-of-the-art", 6),
    ("It's 3.14, not 1,000 or 12:30.", 6),  # It's / 3.14 / not / 1,000 / or / 12:30
])  # fmt: skip
def test_max_words_counts_runs_of_letters_and_digits(verifier: ChecklistVerifier, text: str, words: int) -> None:
    at_most = {"check": "max_words", "value": words}
    assert verifier.verify(row([at_most]), answered(text)).verdict is Verdict.PASS
    fewer = verifier.verify(row([{**at_most, "value": words - 1}]), answered(text))
    assert fewer.verdict is Verdict.FAIL and f"{words} words > {words - 1}" in fewer.detail


HONEST_RIGHT_TO_LEFT = [
    # Arabic, written as it is typed: right-to-left letters, no control characters
    ({"check": "contains", "value": "\u0628\u0627\u0631\u064a\u0633"}, "\u0639\u0627\u0635\u0645\u0629 \u0641\u0631\u0646\u0633\u0627 \u0647\u064a \u0628\u0627\u0631\u064a\u0633"),
    ({"check": "min_words", "value": 4}, "\u0639\u0627\u0635\u0645\u0629 \u0641\u0631\u0646\u0633\u0627 \u0647\u064a \u0628\u0627\u0631\u064a\u0633"),
    ({"check": "max_words", "value": 4}, "\u0639\u0627\u0635\u0645\u0629 \u0641\u0631\u0646\u0633\u0627 \u0647\u064a \u0628\u0627\u0631\u064a\u0633"),
    # Hebrew with vowel points, and a Latin word inside right-to-left text
    ({"check": "min_words", "value": 2}, "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd \u05e2\u05d5\u05b9\u05dc\u05b8\u05dd"),
    ({"check": "contains", "value": "Paris"}, "\u05d4\u05d1\u05d9\u05e8\u05d4 \u05d4\u05d9\u05d0 Paris"),
    ({"check": "not_contains", "value": "London"}, "\u05d4\u05d1\u05d9\u05e8\u05d4 \u05d4\u05d9\u05d0 Paris"),
    ({"check": "regex", "pattern": r"\p{Hebrew}+"}, "\u05e9\u05dc\u05d5\u05dd"),
    ({"check": "answer_equals", "value": "\u0633\u0644\u0627\u0645"}, " \u0633\u0644\u0627\u0645 "),
    # Japanese: the prolonged sound mark (a modifier letter) inside a word
    ({"check": "min_words", "value": 3}, "\u30b3\u30fc\u30d2\u30fc \u3092 \u98f2\u3080"),
    # Devanagari with its vowel signs (combining marks after a letter are part of the word)
    ({"check": "min_words", "value": 2}, "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e"),
]  # fmt: skip


@pytest.mark.parametrize(("item", "text"), HONEST_RIGHT_TO_LEFT, ids=lambda v: ascii(v)[:40])
def test_honest_right_to_left_and_other_scripts_pass(verifier: ChecklistVerifier, item: dict, text: str) -> None:
    result = verifier.verify(row([item]), answered(text))
    assert result.verdict is Verdict.PASS, result


@pytest.mark.parametrize(("item", "text"), [
    ({"check": "min_words", "value": 3}, "one\u200btwo\u200bthree"),  # reads "onetwothree": one word
    ({"check": "contains", "value": "Paris"}, "Pa ris"),
    ({"check": "contains", "value": "Paris"}, "Pa\u2800ris"),  # renders with a blank inside
    ({"check": "answer_equals", "value": "cafe"}, "café"),
])  # fmt: skip
def test_invisible_characters_earn_nothing(verifier: ChecklistVerifier, item: dict, text: str) -> None:
    result = verifier.verify(row([item]), answered(text))
    assert result.verdict is Verdict.FAIL, result


def test_regex_sees_blank_looking_characters_as_spaces_and_invisible_ones_as_nothing(
    verifier: ChecklistVerifier,
) -> None:
    # A pattern that allows at most three words: "a⠀b⠀c⠀d" is four words, "Par\u200bis" is Paris.
    at_most_three = {"check": "regex", "pattern": r"^\S+(\s+\S+){0,2}$"}
    assert verifier.verify(row([at_most_three]), answered("a\u2800b\u2800c\u2800d")).verdict is Verdict.FAIL
    word = {"check": "regex", "pattern": r"\bParis\b"}
    assert verifier.verify(row([word]), answered("Par\u200bis")).verdict is Verdict.PASS


@pytest.mark.parametrize("blank", ["\u200b\u200b", "\u2800", "\u3164 \ufeff", "\u00ad"], ids=ascii)
def test_answer_with_nothing_visible_is_no_answer(verifier: ChecklistVerifier, blank: str) -> None:
    result = verifier.verify(
        row([{"check": "not_contains", "value": "x"}, {"check": "max_words", "value": 9}]), answered(blank)
    )
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.NO_ANSWER), result


def test_value_with_nothing_visible_is_a_bad_row(verifier: ChecklistVerifier) -> None:
    result = verifier.verify(row([{"check": "not_contains", "value": "\u200b"}]), answered("Paris"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA), result
    assert '"value" must have a visible character' in result.detail
