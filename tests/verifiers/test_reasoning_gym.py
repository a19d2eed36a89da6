"""ReasoningGymVerifier: reasoning-gym's own scorers in real worker processes, with eval kept to data."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("reasoning_gym")

from rlvr.tasks.reasoning_gym import make_queries  # noqa: E402
from rlvr.types import ErrorClass, Query, Verdict  # noqa: E402
from rlvr.verifiers import _rg_worker  # noqa: E402
from rlvr.verifiers._rg_worker import RefusedExpression, guarded_eval  # noqa: E402
from rlvr.verifiers.reasoning_gym import ReasoningGymVerifier  # noqa: E402
from rlvr.verifiers.registry import get_verifier  # noqa: E402

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
    import json

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


def test_partial_credit_stays_partial(verifier):
    query = rows("string_insertion", 1)[0]
    reference = query.verifier["entry"]["answer"]
    result = verifier.verify(query, answered(repr(list(reference))))  # the right string as a list: 0.1
    assert (result.verdict, result.score) == (Verdict.PARTIAL, pytest.approx(0.1))
    wrong = verifier.verify(query, answered(reference[::-1] + "Z"))
    assert (wrong.verdict, wrong.score, wrong.error_class) == (Verdict.FAIL, 0.0, ErrorClass.WRONG_ANSWER)
    puzzle = rows("puzzle24", 1)[0]
    floor = verifier.verify(puzzle, answered("1 + 1 + 1 + 1"))  # puzzle24 pays 0.01 for a wrong expression
    assert (floor.verdict, floor.score) == (Verdict.PARTIAL, pytest.approx(0.01))


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
    query = rows("puzzle24", 1)[0]
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
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)
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
