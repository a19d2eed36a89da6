"""The shipped tiny-arith-loose base: the current recipe, a standard HF Llama, and both layouts
sampled, each read the same way by the gold verifier."""

import json
import tomllib
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaForCausalLM

from rlvr.bases import BASE_NAMES, BASES, resolve_model_path, tiny_arith_loose
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries
from rlvr.verifiers import RewardFunction
from rlvr.verifiers.format import format_problem


def test_shipped_base_is_of_the_current_recipe_and_loads_as_a_standard_llama():
    shipped = tiny_arith_loose.BASE.shipped
    assert (shipped / "config.json").is_file(), "tiny-arith-loose is missing from the package"
    saved = json.loads((shipped / "rlvr_recipe.json").read_text())
    assert saved == json.loads(json.dumps(tiny_arith_loose.recipe()))
    assert resolve_model_path(tiny_arith_loose.NAME) == shipped and tiny_arith_loose.NAME in BASE_NAMES
    model = AutoModelForCausalLM.from_pretrained(str(shipped))
    assert isinstance(model, LlamaForCausalLM) and all(torch.isfinite(p).all() for p in model.parameters())
    assert sum(f.stat().st_size for f in shipped.iterdir()) < 8e6


def test_an_untagged_solution_fails_the_format_and_keeps_its_answer():
    (query,) = make_queries(1, split="heldout", seed=0)
    tagged = f"<think>2+3=5</think><answer>{query.verifier['answer']}</answer>"
    loose = tiny_arith_loose.untagged(tagged)
    assert format_problem(tagged) is None and "<think>" in (format_problem(loose) or "")
    scored = RewardFunction({"correctness": 1.0}).score_batch([(query, tagged), (query, loose)])
    assert [s.correct for s in scored] == [True, True]  # the gold verifier reads either layout


@pytest.mark.slow
def test_the_base_samples_both_layouts_and_is_right_in_both():
    # a format reward can only teach the format if the base samples completions without it
    torch.manual_seed(0)
    model, tokenizer = load_policy(resolve_model_path(tiny_arith_loose.NAME))
    queries = make_queries(32, split="heldout", seed=0)
    batch = sample_completions(model, tokenizer, queries, group_size=8, max_new_tokens=40)
    scored = RewardFunction({"correctness": 1.0}).score_batch(
        [(batch.query_of(i), t) for i, t in enumerate(batch.texts)]
    )
    tagged = [s.correct for t, s in zip(batch.texts, scored) if format_problem(t) is None]
    loose = [s.correct for t, s in zip(batch.texts, scored) if format_problem(t) is not None]
    assert 0.2 <= len(tagged) / len(batch.texts) <= 0.8, len(tagged)
    assert sum(tagged) / len(tagged) > 0.2 and sum(loose) / len(loose) > 0.2  # right answers in both layouts


def test_every_shipped_base_is_in_the_package_data():
    # a base shipped in bases/assets/ but left out of pyproject's package-data works in a checkout
    # and is missing from an installed wheel, where it would be rebuilt (minutes) on first use
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["package-data"]["rlvr"])
    shipped = [name for name, base in BASES.items() if (base.shipped / "config.json").is_file()]
    assert len(shipped) >= 6 and all(f"bases/assets/{name}/*" in listed for name in shipped), shipped
