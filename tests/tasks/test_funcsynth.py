import random
from collections import Counter

import pytest

from rlvr.config import load_config
from rlvr.tasks import DatasetError, load_task
from rlvr.tasks.funcsynth import (
    WarmupMix,
    all_queries,
    answer,
    answer_kind,
    evaluate,
    formula,
    lookup_table,
    make_queries,
    warmup_completion,
)
from rlvr.types import Verdict
from rlvr.verifiers.python import PythonCriteria
from rlvr.verifiers.registry import get_verifier


def test_splits_are_disjoint_deterministic_and_cover_the_family():
    train, heldout = all_queries(split="train", seed=0), all_queries(split="heldout", seed=0)
    assert not {q.prompt for q in train} & {q.prompt for q in heldout}
    assert len(train) + len(heldout) == 2 * 6 * 16 * 8  # shapes x slopes x offsets x third points
    assert [q.id for q in make_queries(20, split="train", seed=0)] == [q.id for q in train[:20]]
    assert len({q.id for q in train}) == len(train)


def test_rows_are_python_rows_with_hidden_tests_on_other_inputs():
    for query in make_queries(30, split="heldout", seed=1):
        criteria = PythonCriteria.from_dict(query.verifier)
        shown = [t["args"][0] for t in query.verifier["tests"]]
        hidden = [t["args"][0] for t in query.verifier["hidden_tests"]]
        assert shown[:2] == [0, 1] and not set(shown) & set(hidden) and len(hidden) == 4
        assert criteria.num_visible == 3 and len(criteria.tests) == 7
        m = query.meta
        assert query.prompt == " ".join(f"f({x})={evaluate(m['shape'], m['a'], m['b'], x)}" for x in shown)


@pytest.mark.sandbox
def test_the_gold_verifier_passes_the_formula_and_fails_the_lookup_table():
    verifier = get_verifier("python")
    for query in make_queries(4, split="train", seed=0):
        m = query.meta
        assert verifier.verify(query, answer(formula(m["shape"], m["a"], m["b"]))).verdict is Verdict.PASS
        assert verifier.verify(query, answer(lookup_table(query))).verdict is Verdict.FAIL


def test_warmup_mix_has_the_three_kinds_in_their_shares():
    queries = make_queries(200, split="train", seed=0)
    rng = random.Random(0)
    texts = [warmup_completion(q, rng=rng) for q in queries for _ in range(10)]  # 2000 targets
    kinds = Counter(answer_kind(t) for t in texts)
    assert abs(kinds["lookup"] / 2000 - WarmupMix().lookup) < 0.04  # sd of the share ~ 0.011
    honest = sum(
        t == answer(formula(q.meta["shape"], q.meta["a"], q.meta["b"]))
        for q, t in zip([q for q in queries for _ in range(10)], texts, strict=True)
    )
    assert abs(honest / 2000 - WarmupMix().honest) < 0.04
    assert answer_kind("<answer>def f(x): return 7</answer>") == "other"


def test_load_task_and_a_clear_error_when_too_many_are_asked():
    train, heldout = load_task(load_config(None, ["task.name=funcsynth", "task.num_train=50", "task.num_eval=10"]).task)
    assert len(train) == 50 and len(heldout) == 10
    with pytest.raises(DatasetError, match="distinct train queries exist"):
        load_task(load_config(None, ["task.name=funcsynth", "task.num_train=5000"]).task)


def test_the_two_presets_load_start_with_their_command_and_differ_only_in_fidelity():
    from pathlib import Path

    gold, visible = (Path(f"configs/funcsynth-{name}.yaml") for name in ("gold", "visible"))
    for path in (gold, visible):
        assert path.read_text().startswith(f"# rlvr train --config {path}\n")
    gold_cfg, visible_cfg = load_config(gold).to_dict(), load_config(visible).to_dict()
    assert (gold_cfg["reward"]["fidelity"], visible_cfg["reward"]["fidelity"]) == ("gold", "visible_only")
    visible_cfg["reward"]["fidelity"] = "gold"
    assert gold_cfg == visible_cfg  # so docs/hacking.md's sweep reads both preset runs back
    assert gold_cfg["model"]["name"] == "tiny-funcsynth" and gold_cfg["task"]["name"] == "funcsynth"
