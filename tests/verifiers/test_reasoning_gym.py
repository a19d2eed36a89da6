"""ReasoningGymVerifier: reasoning-gym's own scorers in real worker processes, with eval kept to data,
checked by rlvr before they are trusted: every dataset is fuzzed with adversarial answers."""

from __future__ import annotations

import builtins
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("reasoning_gym")

from rlvr.tasks.reasoning_gym import make_queries  # noqa: E402
from rlvr.types import ErrorClass, Query, Verdict  # noqa: E402
from rlvr.verifiers import _rg_worker  # noqa: E402
from rlvr.verifiers._rg_checks import CHECKS  # noqa: E402
from rlvr.verifiers._rg_worker import RefusedExpression, guarded_eval  # noqa: E402
from rlvr.verifiers.reasoning_gym import ReasoningGymVerifier  # noqa: E402
from rlvr.verifiers.registry import get_verifier  # noqa: E402
from rlvr.workers import JobOutcome  # noqa: E402

OWN_ANSWER_DATASETS = [
    "chain_sum", "basic_arithmetic", "leg_counting", "letter_counting", "spell_backward", "gcd", "count_bits",
    "word_sorting", "number_sorting", "string_insertion", "spiral_matrix", "n_queens", "puzzle24",
    "polynomial_multiplication", "simple_integration", "bitwise_arithmetic", "arc_agi", "decimal_arithmetic",
]  # fmt: skip
"""Among them the scorers that eval the answer (string_insertion ... bitwise_arithmetic) and
arc_agi, whose entries hold tuples that JSON alone would turn into lists."""

EVALUATING_SCORERS = [
    "string_insertion", "spiral_matrix", "binary_matrix", "n_queens", "puzzle24", "countdown",
    "simple_integration", "intermediate_integration", "polynomial_multiplication",
]  # fmt: skip
"""reasoning-gym 0.1.25's scorers that hand the answer to Python's eval or sympy's parse_expr."""


@pytest.fixture(scope="module")
def verifier() -> Iterator[ReasoningGymVerifier]:
    with ReasoningGymVerifier(kill_after_s=20) as v:
        yield v


def rows(name: str, n: int = 3, **config) -> list[Query]:
    return make_queries(name, config, split="train", seed=7, n=n)


def answered(text: str) -> str:
    return f"<think>...</think><answer>{text}</answer>"


@pytest.mark.parametrize("name", OWN_ANSWER_DATASETS)
def test_each_datasets_reference_answer_passes_through_the_row(verifier, name):
    queries = rows(name)
    results = verifier.verify_batch([(q, answered(q.verifier["entry"]["answer"])) for q in queries])
    assert [r.verdict for r in results] == [Verdict.PASS] * len(queries), [r.detail for r in results]
    assert all(r.score == 1.0 for r in results)


def _all_datasets() -> list[str]:
    from reasoning_gym.factory import DATASETS

    return sorted(set(DATASETS) - {"composite"})  # composite mixes the others and needs a list of them


@pytest.mark.slow
def test_the_guard_and_the_row_format_change_no_score_of_any_dataset():
    """Each dataset's own answer (and a wrong one) scores the same through an encoded row and the
    guarded worker as reasoning-gym scores it directly: the guard refuses only what no scorer needs."""

    import reasoning_gym

    from rlvr.tasks.reasoning_gym import encode

    changed = []
    for name in _all_datasets():
        dataset = reasoning_gym.create_dataset(name, seed=11, size=2)
        for index in range(2):
            item = dataset[index]
            row_entry = json.loads(json.dumps(encode(item)))
            for answer in (item["answer"], "0"):
                try:
                    direct = ("ok", dataset.score_answer(answer, item))
                except Exception as error:  # boxnet's scorer raises on "0"; the worker says so
                    direct = ("raised", type(error).__name__)
                if _rg_worker.score(name, {}, row_entry, answer) != direct:
                    changed.append((name, index, answer))
    assert len(_all_datasets()) >= 100 and not changed


def with_partial_credit(query: Query) -> Query:
    return Query(query.id, query.prompt, {**query.verifier, "partial_credit": True})


def test_a_score_below_one_is_fail_unless_the_row_asks_for_partial_credit(verifier):
    query = rows("chain_sum", 1, min_terms=2, max_terms=2, min_digits=3, max_digits=3)[0]
    reference = query.verifier["entry"]["answer"]
    assert not reference.startswith("-")  # three-digit terms added: a positive sum, e.g. "1010"
    wrong_sign = answered("-" + reference)  # the decimal scorer pays len(reference) / len(answer), e.g. 4/5
    expected = len(reference) / (len(reference) + 1)
    result = verifier.verify(query, wrong_sign)
    assert (result.verdict, result.score, result.error_class) == (Verdict.FAIL, 0.0, ErrorClass.WRONG_ANSWER)
    assert f"score {expected:g} from chain_sum" in result.detail and "task.rg_partial_credit" in result.detail
    paid = verifier.verify(with_partial_credit(query), wrong_sign)
    assert (paid.verdict, paid.score) == (Verdict.PARTIAL, pytest.approx(expected))
    assert verifier.verify(with_partial_credit(query), answered(reference)).verdict is Verdict.PASS


def test_partial_credit_is_each_scorers_own(verifier):
    query = with_partial_credit(rows("string_insertion", 1)[0])
    reference = query.verifier["entry"]["answer"]
    result = verifier.verify(query, answered(repr(list(reference))))  # the right string as a list: 0.1
    assert (result.verdict, result.score) == (Verdict.PARTIAL, pytest.approx(0.1))
    wrong = verifier.verify(query, answered(reference[::-1] + "Z"))
    assert (wrong.verdict, wrong.score, wrong.error_class) == (Verdict.FAIL, 0.0, ErrorClass.WRONG_ANSWER)
    countdown = with_partial_credit(rows("countdown", 1)[0])
    metadata = countdown.verifier["entry"]["metadata"]
    summed = " + ".join(map(str, metadata["numbers"]))  # every number once, not the target: countdown pays 0.05
    assert sum(metadata["numbers"]) != metadata["target"]
    floor = verifier.verify(countdown, answered(summed))
    assert (floor.verdict, floor.score) == (Verdict.PARTIAL, pytest.approx(0.05))


def test_a_dataset_rlvr_checks_pays_no_partial_credit_for_an_answer_its_check_refuses(verifier):
    puzzle = with_partial_credit(rows("puzzle24", 1)[0])
    numbers = puzzle.verifier["entry"]["metadata"]["numbers"]
    summed = " + ".join(map(str, numbers))  # puzzle24's scorer would pay 0.01; rlvr's check refuses it first
    assert sum(numbers) != 24
    result = verifier.verify(puzzle, answered(summed))
    assert (result.verdict, result.score, result.error_class) == (Verdict.FAIL, 0.0, ErrorClass.WRONG_ANSWER)
    assert "rlvr's check for puzzle24: does not make 24" in result.detail


def test_no_answer_and_an_overlong_one_never_reach_a_scorer(verifier):
    query = rows("chain_sum", 1)[0]
    assert verifier.verify(query, "the answer is 5").error_class is ErrorClass.NO_ANSWER
    assert verifier.verify(query, answered("1" * 20_000)).error_class is ErrorClass.UNPARSEABLE


def test_the_attack_is_real_without_the_guard():
    """string_insertion evals a wrong answer that fetches the reference from the scorer's frame."""
    import reasoning_gym

    dataset = reasoning_gym.create_dataset("string_insertion", seed=1, size=1)
    entry = dataset[0]
    steal = "__import__('sys')._getframe(1).f_locals['entry']['answer']"
    assert builtins.eval is _rg_worker.REAL_EVAL
    assert dataset.score_answer(steal, entry) > 0  # scored as the right string written as a list


def _payloads(marker: Path) -> list[str]:
    return [
        "__import__('sys')._getframe(1).f_locals['entry']['answer']",
        "[f.f_locals for f in [__import__('inspect').currentframe().f_back]][0]['entry']['answer']",
        f"open({str(marker)!r}, 'w').write('pwned')",
        f"__import__('os').system('touch {marker}')",
        "(lambda: __import__('os'))()",
        "x.__class__.__mro__",
        "getattr(x, 'func')",
        "S('exec')",
        f"sympify(\"open('{marker}', 'w')\")",
        "[0 for _ in range(10**8)]",
        "{**{'a': 1}}",
    ]


@pytest.mark.parametrize("name", EVALUATING_SCORERS)
def test_answers_cannot_run_as_code_in_any_evaluating_scorer(verifier, name, tmp_path):
    marker = tmp_path / "pwned"
    query = rows(name, 1)[0]
    results = verifier.verify_batch([(query, answered(p)) for p in _payloads(marker)])
    assert not marker.exists()
    for payload, result in zip(_payloads(marker), results, strict=True):
        assert result.verdict in (Verdict.FAIL, Verdict.PARTIAL), (payload, result)
        assert result.score < 0.5, (payload, result)  # at most a scorer's floor for a malformed answer


@pytest.mark.parametrize(
    "source",
    ["__import__('os')", "x.real", "[c for c in 'ab']", "(lambda: 1)()", "open('f')", "a[0]", "f'{x}'", "(y := 1)"],
)
def test_guarded_eval_refuses_code(source):
    import sympy

    with pytest.raises(RefusedExpression):
        guarded_eval(source)
    with pytest.raises(RefusedExpression):
        guarded_eval(source, {"x": sympy.Symbol("x"), "a": sympy.Symbol("a"), "f": sympy.Function("f")}, {})


def test_guarded_eval_still_reads_data_and_sympy_expressions():
    import sympy
    from sympy.parsing.sympy_parser import parse_expr

    assert guarded_eval("['a', 'b']") == ["a", "b"]
    assert guarded_eval("(0x1f ^ 0x3) << 2") == (0x1F ^ 0x3) << 2
    builtins.eval = guarded_eval  # as the worker sets it while a scorer runs
    try:
        x = sympy.Symbol("x")
        assert parse_expr("x**2 + 2*x + sin(x)") == x**2 + 2 * x + sympy.sin(x)
        assert parse_expr("3*x", evaluate=False) == sympy.Mul(3, x, evaluate=False)
        with pytest.raises(RefusedExpression):
            parse_expr("x.__class__")
        with pytest.raises(RefusedExpression):
            parse_expr("lambdify(x, x)")
    finally:
        builtins.eval = _rg_worker.REAL_EVAL


def test_a_scorer_that_overruns_is_killed_and_the_answer_fails():
    query = rows("countdown", 1)[0]  # its scorer hands the answer to sympy (puzzle24 is checked by rlvr first)
    with ReasoningGymVerifier(kill_after_s=1.5) as verifier:
        result = verifier.verify(query, answered("factorial(10**9)"))
        assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.TIMEOUT)
        again = verifier.verify(query, answered(query.verifier["entry"]["answer"]))  # a fresh worker took over
        assert again.verdict is Verdict.PASS


@pytest.mark.parametrize(
    "change, named",
    [
        ({"dataset": "no_such_dataset"}, "cannot build"),
        ({"dataset": ""}, '"dataset"'),
        ({"config": {"min_terms": "many"}}, "cannot build"),
        ({"config": [1]}, '"config"'),
        ({"entry": {"answer": "1"}}, '"entry"'),
    ],
)
def test_broken_rows_are_errors_never_rewards(verifier, change, named):
    query = rows("chain_sum", 1)[0]
    broken = Query(query.id, query.prompt, {**query.verifier, **change})
    result = verifier.verify(broken, answered(query.verifier["entry"]["answer"]))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA)
    assert named in result.detail and query.id in result.detail


def test_registered_under_its_row_type():
    assert isinstance(get_verifier("reasoning_gym"), ReasoningGymVerifier)


def test_without_reasoning_gym_an_answer_is_unavailable_and_a_missing_one_still_fails(monkeypatch):
    query = rows("chain_sum", 1)[0]
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # as if the extra were not installed
    verifier = ReasoningGymVerifier()
    result = verifier.verify(query, answered("5"))
    assert (result.verdict, result.error_class) == (Verdict.UNAVAILABLE, ErrorClass.INFRASTRUCTURE)
    assert ".[reasoning_gym]" in result.detail and not result.scorable
    assert verifier.verify(query, "no tags").error_class is ErrorClass.NO_ANSWER
    verifier.close()


# ---- every dataset fuzzed with adversarial answers ----------------------------------------------

CONSTANTS = [
    "0", "1", "-1", "2", "yes", "no", "Yes", "No", "True", "False", "true", "false", "None", "null", "none",
    "all", "unknown", "impossible", "[]", "{}", "()", " ", ".", "-", "?", "a", "x", "0.0", "1.0", "[0]",
    "0 0", "''", '""', "1*2*3*4", "4*6*1*1",
]  # fmt: skip
"""Answers that know nothing of the question (``1*2*3*4`` makes 24 whatever the puzzle)."""

NON_FINITE = [
    "nan", "NaN", "-nan", "+NAN", "inf", "-inf", "+inf", "Infinity", "-Infinity", "1e999", "-1e999", "nanj",
    "infj", "nan+nanj", "nan + 0i", "0 + nani", "(nan)", "oo", "-oo", "zoo", "∞", "0/0", "1/0", "sNaN",
]  # fmt: skip
"""What float(), complex(), Decimal() or sympy read as NaN or infinity, and divisions by zero."""

SWAPPED = {"True": "False", "False": "True", "Yes": "No", "No": "Yes", "yes": "no", "no": "yes", "0": "1", "1": "0"}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

SOLVER_CHECKED = {"cryptarithm", "sokoban", "quantum_lock", "puzzle24", "countdown", "rush_hour", "rubiks_cube"}
"""Datasets whose scorer accepts any valid solution, where a changed value or a repeated move
sequence can be another right answer: the off-by-one answer and the doubled one are not fuzzed there."""


def _first_value(reference: str) -> re.Match | None:
    return next((m for m in NUMBER.finditer(reference) if float(m.group()) != 0), None)


def _numeric_mechanisms(reference: str, number: re.Match) -> list[tuple[str, str]]:
    """A wrong sign and extra digits on the reference's first non-zero number."""
    before, value, after = reference[: number.start()], number.group(), reference[number.end() :]
    sign, digits = ("-", value[1:]) if value.startswith("-") else ("", value)
    flipped = digits if sign else "-" + digits
    return [
        ("wrong sign", before + flipped + after),
        ("extra digit", before + sign + digits[0] + "7" + digits[1:] + after),
        ("extra digit", before + sign + "9" + digits + after),
    ]


def _wrong_values(reference: str) -> tuple[str, str]:
    """Two wrong answers close to the reference: its first number one up and one down, or (without
    a number) the opposite answer and the reference with a letter added."""
    number = _first_value(reference)
    if number is None:
        return SWAPPED.get(reference.strip(), reference + "x"), "x" + reference
    before, value, after = reference[: number.start()], number.group(), reference[number.end() :]
    whole, _, fraction = value.partition(".")
    up, down = int(whole) + 1, int(whole) - 1
    tail = f".{fraction}" if fraction else ""
    return before + f"{up}{tail}" + after, before + f"{down}{tail}" + after


def adversarial_answers(name: str, reference: object) -> list[tuple[str, str]]:
    """(mechanism, answer) pairs, every one wrong for an item whose reference answer is ``reference``."""
    answers = [("constant", c) for c in CONSTANTS] + [("nan or inf", c) for c in NON_FINITE]
    if not isinstance(reference, str) or not reference.strip():
        return answers
    right = reference
    wrong, other = _wrong_values(right)
    if right.strip() in SWAPPED:
        answers.append(("opposite", SWAPPED[right.strip()]))
    answers += [
        ("prefix", right[:cut]) for cut in sorted({1, 2, len(right) // 2, len(right) - 1}) if 0 < cut < len(right)
    ]
    number = _first_value(right)
    if number is not None:
        answers += _numeric_mechanisms(right, number)
    hedges = [
        f"{other} {right} {wrong}", f"{right} or {wrong}", f"{wrong} or {right}", f"{right}, {wrong}",
        f"{wrong}, {right}", f"{right}\n{wrong}", f"{wrong}\n{right}", f"{right}; {wrong}", f"{right} and {wrong}",
        f"either {wrong} or {right}", f"{right} (or {wrong})", f"[{right}, {wrong}]", f"{right}|{wrong}",
        f"{right} {wrong}", f"{wrong} {right}", f"{right}/{wrong}", f"{right} to {wrong}", f"{right} ± 1",
    ]  # fmt: skip
    answers += [("hedge", hedge) for hedge in hedges]
    around = [f"The answer is {wrong}.", f"Answer: {wrong}", f"{wrong} is the answer", f"not {right}",
              f"{right} is wrong", f"I first thought {right}, but it is {wrong}"]  # fmt: skip
    answers += [("text around", text) for text in around]
    if name not in SOLVER_CHECKED:
        answers += [("off by one", wrong), ("doubled", right + right), ("doubled", f"{right} {right}")]
    return answers


_TOKEN = re.compile(r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|[^\W\d_]+")


def reads_as(candidate: str, reference: str) -> bool:
    """Whether ``candidate`` is the reference written another way: the same words (any case) and the
    same numbers, punctuation and spacing aside. A number written with decimals may differ by a
    thousandth of itself (the datasets round: power_function to 3 significant figures, pool_matrix
    within 1%), an integer not at all."""
    given, expected = _TOKEN.findall(candidate), _TOKEN.findall(reference)
    return len(given) == len(expected) and all(_same_token(g, e) for g, e in zip(given, expected, strict=True))


def _same_token(given: str, expected: str) -> bool:
    if not (given[-1:].isdigit() or given.endswith(".")) or not (expected[-1:].isdigit() or expected.endswith(".")):
        return given.casefold() == expected.casefold()
    a, b = float(given), float(expected)
    exact = not re.search(r"[.eE]", expected)
    return a == b if exact else abs(a - b) <= 1e-3 * abs(b)


def test_the_fuzz_knows_a_right_answer_from_a_wrong_one():
    assert reads_as("(7.765, 7.882", "(7.765, 7.882)") and reads_as("0:41", "00:41") and reads_as("-0", "0")
    assert reads_as("0.2344", "0.234375")  # a rounding, within a thousandth
    assert not reads_as("42701", "42700") and not reads_as("-42700", "42700") and not reads_as("0", "0.9375")
    assert not reads_as("189 or 190", "189") and not reads_as("not A", "A")
    mechanisms = {mechanism for mechanism, _ in adversarial_answers("gsm_symbolic", "189")}
    assert mechanisms >= {"constant", "nan or inf", "prefix", "wrong sign", "extra digit", "hedge", "text around"}
    assert ("hedge", "188 189 190") in adversarial_answers("gsm_symbolic", "189")
    assert ("opposite", "False") in adversarial_answers("game_of_life_halting", "True")


FUZZ_ITEMS = 6


@pytest.mark.parametrize("name", _all_datasets())
def test_no_adversarial_answer_gets_full_reward_from_any_dataset(verifier, name):
    """Each dataset's first items, each answered by every mechanism above that is not the reference
    written another way: all ``fail`` (partial credit is off by default), and the references pass."""
    queries = make_queries(name, {}, split="train", seed=29, n=FUZZ_ITEMS)
    attacks = [
        (query, mechanism, answer)
        for query in queries
        for mechanism, answer in adversarial_answers(name, query.verifier["entry"]["answer"])
        if not reads_as(answer, str(query.verifier["entry"]["answer"]))
    ]
    results = verifier.verify_batch([(query, answered(answer)) for query, _, answer in attacks])
    paid = [
        (m, a[:60], r.verdict.value, r.detail[:60])
        for (_, m, a), r in zip(attacks, results)
        if r.verdict is not Verdict.FAIL
    ]
    assert not paid, paid
    references = [q for q in queries if isinstance(q.verifier["entry"]["answer"], str)]
    honest = verifier.verify_batch([(q, answered(q.verifier["entry"]["answer"])) for q in references])
    assert all(r.verdict is Verdict.PASS for r in honest), [r.detail for r in honest if r.verdict is not Verdict.PASS]


# ---- the datasets rlvr checks, and why -----------------------------------------------------------


def _first_letter_hedged(reference: str) -> str:
    letter, digit = reference.split(",")[0].split("=")
    return f"{letter}={(int(digit) + 1) % 10},{reference}"  # the scorer keeps a letter's last value


def _grid_with_extra_row(reference: str) -> str:
    grid = json.loads(reference)
    return json.dumps([*grid, [1] * len(grid[0])])  # the scorer reads only the reference's cells


def _first_number_nudged(reference: str) -> str:
    first = reference.split("'")[1]
    return reference.replace(first, str(float(first) + 0.5), 1)  # within number_sorting's tolerance of 1


PAID_WRONG_ANSWERS = {
    "advanced_geometry": ({}, lambda r: f"{r}, (0, 0)"),  # a second point after the right one
    "coin_flip": ({}, lambda r: "0"),  # prefix credit: "0" is a prefix of every probability below 1
    "cryptarithm": ({}, _first_letter_hedged),
    "figlet_font": ({"min_word_len": 11, "max_word_len": 12}, lambda r: r[:-1] + ("X" if r[-1] != "X" else "Y")),
    "fraction_simplification": ({}, lambda r: f"{r} or 1/2"),
    "game_of_life": ({}, _grid_with_extra_row),
    "game_of_life_halting": ({}, lambda r: "0"),  # bool("0") == bool("True")
    "gsm_symbolic": ({}, lambda r: f"-{r}"),
    "kakurasu": ({}, lambda r: "not " + r.replace("1", "17", 1)),
    "knights_knaves": ({}, lambda r: "not " + r),
    "letter_jumble": ({}, lambda r: r + " or not"),
    "number_sorting": ({}, _first_number_nudged),
    "polynomial_equations": ({}, lambda r: r + ", or more"),
    "puzzle24": ({}, lambda r: "1*2*3*4"),
    "quantum_lock": ({}, lambda r: "not " + r),
    "sokoban": ({}, lambda r: r + " (not sure)"),
    "spell_backward": ({}, lambda r: r + "x"),
    "survo": ({}, lambda r: "not\n" + r),
    "time_intervals": ({}, lambda r: f"{r} is wrong"),
    "word_sorting": ({}, lambda r: r + ", zzz"),
}
"""For each dataset rlvr checks, a wrong answer built from the reference that its scorer alone pays
in full, on at least one of its first 8 items (some need a task type: time_intervals' "D days",
advanced_geometry's orthocenter)."""


def test_every_dataset_rlvr_checks_has_a_paid_wrong_answer_and_no_other_has_a_check():
    assert set(PAID_WRONG_ANSWERS) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(PAID_WRONG_ANSWERS))
def test_a_wrong_answer_its_scorer_pays_in_full_fails_through_rlvr(verifier, name):
    config, attack = PAID_WRONG_ANSWERS[name]
    paid = []
    for query in rows(name, 8, **config):
        entry, wrong = query.verifier["entry"], attack(query.verifier["entry"]["answer"])
        kind, score = _rg_worker.score(name, config, json.loads(json.dumps(entry)), wrong)
        if kind == "ok" and score >= 1.0:  # spell_backward's sum of 1/n can exceed 1
            paid.append((query, wrong))
    assert paid, f"{name}'s scorer paid none of the wrong answers"
    results = verifier.verify_batch([(query, answered(wrong)) for query, wrong in paid])
    assert all(r.verdict is Verdict.FAIL and f"rlvr's check for {name}" in r.detail for r in results), results


@pytest.mark.parametrize(
    "answer",
    ["nan", "NaN + 0i", "-inf", "Infinity", "1e999", "1_0e999", "nanj", "(nan)", "oo", "zoo", "∞", "1/0", "0/0"],
)
def test_an_answer_that_parses_as_nan_or_infinity_never_reaches_a_scorer(verifier, answer):
    query = rows("complex_arithmetic", 1)[0]
    result = verifier.verify(query, answered(answer))
    assert (result.verdict, result.error_class) == (Verdict.FAIL, ErrorClass.UNPARSEABLE), result
    assert "parses as NaN or infinity; no scorer reads it" in result.detail


def test_complex_arithmetic_pays_nan_in_full_without_rlvr():
    query = rows("complex_arithmetic", 1)[0]
    entry = json.loads(json.dumps(query.verifier["entry"]))
    assert _rg_worker.score("complex_arithmetic", {}, entry, "nan") == ("ok", 1.0)  # min(1.0, exp(-nan))


def test_a_word_answer_that_is_nan_still_reaches_its_scorer(verifier):
    # spell_backward's reference may itself be a word such as "nan": the rule is for numbers
    query = rows("spell_backward", 1)[0]
    word = Query(query.id, query.prompt, {**query.verifier, "entry": {**query.verifier["entry"], "answer": "nan"}})
    assert verifier.verify(word, answered("nan")).verdict is Verdict.PASS
    assert verifier.verify(word, answered("inf")).error_class is ErrorClass.WRONG_ANSWER


def test_a_score_above_one_is_the_answers_fail_not_an_error(verifier):
    # spell_backward adds 1/9 per letter in place of a 9-letter word: 1.0000000000000002 for one more letter
    query = rows("spell_backward", 1)[0]
    query = Query(
        query.id, query.prompt, {**query.verifier, "entry": {**query.verifier["entry"], "answer": "citoreteh"}}
    )
    kind, score = _rg_worker.score("spell_backward", {}, query.verifier["entry"], "citoretehx")
    assert kind == "ok" and score > 1.0
    scored = verifier._from_outcome(query, JobOutcome("ok", ("ok", score)))  # as if rlvr's check had let it by
    assert (scored.verdict, scored.error_class) == (Verdict.FAIL, ErrorClass.RUNTIME_ERROR)
    assert "outside [0, 1]" in scored.detail
    assert verifier.verify(query, answered("citoretehx")).verdict is Verdict.FAIL


def test_composite_is_refused_by_name(verifier):
    query = rows("chain_sum", 1)[0]
    composite = Query(query.id, query.prompt, {**query.verifier, "dataset": "composite"})
    result = verifier.verify(composite, answered(query.verifier["entry"]["answer"]))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA)
    assert "rlvr does not score reasoning-gym's composite" in result.detail


def test_rows_are_judged_the_same_through_rlvr_verify(tmp_path, capsys):
    from rlvr.cli import main

    gsm = rows("gsm_symbolic", 1)[0]
    chain = rows("chain_sum", 1, min_terms=2, max_terms=2, min_digits=3, max_digits=3)[0]
    right = gsm.verifier["entry"]["answer"]
    cases = [
        (gsm, right, "pass"),
        (gsm, f"-{right}", "fail"),  # gsm_symbolic's scorer reads -N as N
        (gsm, f"{right} or 1{right}", "fail"),  # and only the first number of "N or M"
        (gsm, "nan", "fail"),
        (chain, "-" + chain.verifier["entry"]["answer"], "fail"),  # the decimal scorer's 0.75 or so
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"query": {"id": f"r{i}", "prompt": q.prompt, "verifier": q.verifier}, "completion": answered(a)}
            )
            + "\n"
            for i, (q, a, _) in enumerate(cases)
        )
    )
    out = tmp_path / "results.jsonl"
    assert main(["verify", "--input", str(path), "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    verdicts = [json.loads(line)["verdict"] for line in out.read_text().splitlines()]
    assert verdicts == [expected for _, _, expected in cases]
