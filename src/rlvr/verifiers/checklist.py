"""Partial credit from a weighted checklist of programmatic checks (K2V-style).

Rows look like ``{"type": "checklist", "items": [{"check": "contains", "value": "Paris", "weight": 2},
{"check": "regex", "pattern": "\\\\d{4}"}, {"check": "max_words", "value": 50}, ...]}``.
Each item is one small pure function from ``CHECKS`` applied to the completion's ``<answer>``
(or, with ``"on": "completion"``, to the whole completion). The score is the passed weight over
the total weight; the verdict is ``pass`` (every item), ``fail`` (none) or ``partial``, with one
``TestOutcome`` per item.

Regex patterns come from rows and texts from the model, so a pattern with nested quantifiers can
backtrack for hours on a crafted text. Patterns run on the ``regex`` module with its ``timeout``
(checked while matching, in C) and texts are capped at ``MAX_TEXT_CHARS``; a timed-out item fails.

Texts are read as a reader sees them, through one function (``rlvr.verifiers._visible_text.read``)
that every item uses, the row's values included: a completion holding a bidirectional control
(which makes a text show its characters in another order) fails every item
(``protocol_violation``); invisible characters are deleted and blank-looking ones are spaces;
``contains``, ``not_contains`` and ``answer_equals`` compare TR39-style forms with look-alikes
folded (``not_contains`` fails if either rendering of blank-looking characters holds the value);
``max_words`` counts every run of letters or digits parted by anything else (an invisible
character between two letters too) and ``min_words`` only the blank-separated runs that hold a
letter or digit; ``regex`` patterns and ``json_keys`` see the shown text, with no folding of
look-alikes or case (a pattern may name a script). An answer with nothing visible in it is no answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import regex

from rlvr.types import ErrorClass, Query, TestOutcome, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers._visible_text import BIDI_CONTROLS, ReorderedText, read
from rlvr.verifiers.base import BaseVerifier, extract_answer, parse_criteria

MAX_TEXT_CHARS = 20_000
"""Longer answers fail every item (``output_limit``): checks are for answers, not novels."""
REGEX_TIMEOUT_S = 0.2
TARGETS = ("answer", "completion")

Check = Callable[[str, dict[str, Any]], tuple[bool, str]]
"""(text, item) -> (passed, one-line detail when it did not)."""


class CheckTimeout(Exception):
    """A check ran out of time (a regex that backtracks); the item fails with ``timeout``."""


def _string(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f'"{key}" must be a non-empty string, got {value!r}')
    return value


def _count(item: dict[str, Any], key: str) -> int:
    value = item.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f'"{key}" must be a non-negative integer, got {value!r}')
    return value


def _form(text: str, item: dict[str, Any]) -> str:
    return read(text).form(ignore_case=item.get("ignore_case", False))


def _visible_value(item: dict[str, Any]) -> str:
    """The compared form of ``value``, read as a text is; one with nothing visible would be found in
    every text, and one holding bidirectional controls shows something else than it holds."""
    try:
        value = _form(_string(item, "value"), item)
    except ReorderedText as error:
        raise ValueError(f'"value" holds {error}') from None
    if not value.strip():
        raise ValueError(f'"value" must have a visible character, got {item["value"]!r}')
    return value


def check_contains(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    return _visible_value(item) in _form(text, item), f"missing {clip(item['value'])!r}"


def check_not_contains(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    """Fails if any rendering of the text holds the value: a filler inside it may show as nothing."""
    value = _visible_value(item)
    forms = read(text).forms(ignore_case=item.get("ignore_case", False))
    return all(value not in form for form in forms), f"contains {clip(item['value'])!r}"


def _compile(item: dict[str, Any]) -> regex.Pattern:
    flags = regex.IGNORECASE if item.get("ignore_case", False) else 0
    try:
        return regex.compile(_string(item, "pattern"), flags)
    except regex.error as error:
        raise ValueError(f'"pattern" does not compile: {error}') from error


def check_regex(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    pattern = _compile(item)
    try:
        found = pattern.search(read(text).shown, timeout=REGEX_TIMEOUT_S) is not None
    except TimeoutError as error:
        raise CheckTimeout(f"pattern ran over {REGEX_TIMEOUT_S:g} s") from error
    return found, f"no match for /{clip(pattern.pattern)}/"


def check_answer_equals(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    """Whole-text equality of compared forms, leading and trailing whitespace aside."""
    return _form(text, item).strip() == _visible_value(item).strip(), f"not {clip(item['value'])!r}"


def check_max_words(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    limit, words = _count(item, "value"), read(text).most_words
    return words <= limit, f"{words} words > {limit}"


def check_min_words(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    limit, words = _count(item, "value"), read(text).fewest_words
    return words >= limit, f"{words} words < {limit}"


def check_json_keys(text: str, item: dict[str, Any]) -> tuple[bool, str]:
    """The text is ONE JSON object having every key in ``keys`` (more keys are allowed)."""
    keys = item.get("keys")
    if not isinstance(keys, list) or not keys or not all(isinstance(key, str) for key in keys):
        raise ValueError(f'"keys" must be a non-empty list of strings, got {keys!r}')
    try:
        parsed = json.loads(read(text).shown)
    except (ValueError, RecursionError):
        return False, "not JSON"
    if not isinstance(parsed, dict):
        return False, f"JSON {type(parsed).__name__}, not an object"
    missing = [key for key in keys if key not in parsed]
    return not missing, f"missing keys {clip(', '.join(missing))}"


CHECKS: dict[str, Check] = {
    "contains": check_contains,
    "not_contains": check_not_contains,
    "regex": check_regex,
    "answer_equals": check_answer_equals,
    "max_words": check_max_words,
    "min_words": check_min_words,
    "json_keys": check_json_keys,
}


@dataclass(frozen=True)
class ChecklistCriteria:
    """The ``verifier`` object of a checklist row."""

    items: list[dict[str, Any]]

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> ChecklistCriteria:
        """Validated criteria; a ValueError names the item and key. Each check is dry-run on ""."""
        items = criteria.get("items")
        if not isinstance(items, list) or not items:
            raise ValueError('"items" must be a non-empty list of {"check": ..., ...}')
        for index, item in enumerate(items):
            try:
                _validate(item)
                CHECKS[item["check"]]("", item)  # raises ValueError on a bad parameter
            except ValueError as error:
                raise ValueError(f"items[{index}]: {error}") from error
        return cls(items)


def _validate(item: Any) -> None:
    if not isinstance(item, dict) or item.get("check") not in CHECKS:
        check = item.get("check") if isinstance(item, dict) else item
        raise ValueError(f'"check" must be one of {", ".join(CHECKS)}, got {check!r}')
    weight = item.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight < float("inf"):
        raise ValueError(f'"weight" must be a positive number, got {weight!r}')
    if item.get("on", "answer") not in TARGETS:
        raise ValueError(f'"on" must be one of {", ".join(TARGETS)}, got {item.get("on")!r}')
    if not isinstance(item.get("ignore_case", False), bool):
        raise ValueError(f'"ignore_case" must be true or false, got {item.get("ignore_case")!r}')


class ChecklistVerifier(BaseVerifier):
    """Verifier for ``{"type": "checklist", "items": [...]}`` rows; in-process, pure functions."""

    name = "checklist"

    def verify(self, query: Query, completion: str) -> VerifierResult:
        started = time.perf_counter()
        result = self._verify(query, completion)
        result.elapsed_s = time.perf_counter() - started
        return result

    def _verify(self, query: Query, completion: str) -> VerifierResult:
        criteria = parse_criteria(query, ChecklistCriteria.from_dict, "checklist")
        if isinstance(criteria, VerifierResult):
            return criteria
        answer = extract_answer(completion)
        texts = {"answer": answer, "completion": completion}
        reordered = _bidi_controls(completion)
        outcomes, classes = [], []
        for index, item in enumerate(criteria.items):
            if reordered:  # a control in <think> reorders the answer after it, so any one refuses all
                passed, detail, error_class = False, reordered, ErrorClass.PROTOCOL_VIOLATION
            else:
                passed, detail, error_class = _run_item(item, texts[item.get("on", "answer")])
            outcomes.append(TestOutcome(f"items[{index}] {item['check']}", passed, detail))
            classes.append(error_class)
        weights = [float(item.get("weight", 1)) for item in criteria.items]
        score = sum(w for w, outcome in zip(weights, outcomes) if outcome.passed) / sum(weights)
        summary = f"{sum(o.passed for o in outcomes)}/{len(outcomes)} items, weight {score:.3g}"
        failing = [(o, c) for o, c in zip(outcomes, classes) if not o.passed]
        if not failing:
            return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, summary, outcomes)
        first, error_class = failing[0]
        detail = f"{summary}; {first.name}: {first.detail}"
        verdict = Verdict.FAIL if len(failing) == len(outcomes) else Verdict.PARTIAL
        return VerifierResult(verdict, score if verdict is Verdict.PARTIAL else 0.0, error_class, detail, outcomes)


def _bidi_controls(completion: str) -> str:
    """Why the completion cannot be read in its characters' order, or "": a bidirectional control
    (U+202E shows ``P<U+202E>sira<U+202C>`` as "Paris") makes what it shows differ from what it holds."""
    controls = sorted(BIDI_CONTROLS.intersection(completion))
    if not controls:
        return ""
    names = ", ".join(f"U+{ord(control):04X}" for control in controls[:4])
    return f"completion holds bidirectional controls ({names}): what it shows is not what it holds"


def _run_item(item: dict[str, Any], text: str | None) -> tuple[bool, str, ErrorClass]:
    """(passed, detail, error class when it did not) for one item on its target text."""
    if text is None:
        return False, "no <answer>...</answer> in completion", ErrorClass.NO_ANSWER
    if len(text) > MAX_TEXT_CHARS:
        return False, f"text over {MAX_TEXT_CHARS} characters", ErrorClass.OUTPUT_LIMIT
    if not read(text).shown.strip():  # else a blank answer would collect every not_contains and max_words item
        return False, "empty text", ErrorClass.NO_ANSWER
    try:
        passed, detail = CHECKS[item["check"]](text, item)
    except CheckTimeout as error:
        return False, str(error), ErrorClass.TIMEOUT
    return passed, "" if passed else detail, ErrorClass.WRONG_ANSWER
