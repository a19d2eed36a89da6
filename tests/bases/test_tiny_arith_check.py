"""The shipped tiny-arith-check base: the current recipe, a standard HF Llama, and checks it writes."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaForCausalLM

from rlvr.bases import BASE_NAMES, resolve_model_path, tiny_arith_check
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import make_queries, self_checks


def test_shipped_base_is_of_the_current_recipe_and_loads_as_a_standard_llama():
    shipped = tiny_arith_check.BASE.shipped
    assert (shipped / "config.json").is_file(), "tiny-arith-check is missing from the package"
    # the shipped weights were built by this code's recipe; a changed recipe must rebuild them
    saved = json.loads((shipped / "rlvr_recipe.json").read_text())
    assert saved == json.loads(json.dumps(tiny_arith_check.recipe()))
    assert resolve_model_path(tiny_arith_check.NAME) == shipped and tiny_arith_check.NAME in BASE_NAMES
    model = AutoModelForCausalLM.from_pretrained(str(shipped))
    assert isinstance(model, LlamaForCausalLM) and all(torch.isfinite(p).all() for p in model.parameters())
    assert sum(f.stat().st_size for f in shipped.iterdir()) < 8e6  # a few MB in the wheel


@pytest.mark.slow
def test_the_base_checks_some_steps_and_not_others():
    # RL can only move the rate of checking if the base samples both kinds of completion
    torch.manual_seed(0)
    model, tokenizer = load_policy(resolve_model_path(tiny_arith_check.NAME))
    queries = make_queries(32, split="heldout", seed=0)
    batch = sample_completions(model, tokenizer, queries, group_size=4, max_new_tokens=64)
    checked = sum(self_checks(text)[0] > 0 for text in batch.texts)  # of 128 samples
    assert 15 <= checked <= 100, checked
