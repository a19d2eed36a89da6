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
    assert [t.name for t in result.tests] == ["items[0] contains", "items[1] regex", "items[2] max_words",
                                             "items[3] not_contains"]


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
def test_missing_or_empty_answer_earns_nothing_not_even_negative_checks(verifier: ChecklistVerifier,
                                                                          completion: str) -> None:
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
def test_bad_criteria_is_an_error_naming_the_query_and_key(verifier: ChecklistVerifier, items: object,
                                                           key: str) -> None:
    criteria = {"type": "checklist"} if items is None else {"type": "checklist", "items": items}
    result = verifier.verify(Query("bad-row", "", criteria), answered("Paris"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE), result
    assert "'bad-row'" in result.detail and key in result.detail
    assert not result.scorable


def test_registry_builds_the_checklist_verifier() -> None:
    assert isinstance(get_verifier("checklist"), ChecklistVerifier)
