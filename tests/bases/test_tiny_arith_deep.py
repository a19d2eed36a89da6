"""The shipped tiny-arith-deep base: the current recipe, a standard HF Llama, and the depth it lacks."""

import json
from collections import Counter

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaForCausalLM

from rlvr.bases import BASE_NAMES, resolve_model_path, tiny_arith_deep
from rlvr.eval.cot import check_arith_reasoning
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.arith import ArithSpec, make_queries


def test_shipped_base_is_of_the_current_recipe_and_loads_as_a_standard_llama():
    shipped = tiny_arith_deep.BASE.shipped
    assert (shipped / "config.json").is_file(), "tiny-arith-deep is missing from the package"
    saved = json.loads((shipped / "rlvr_recipe.json").read_text())
    assert saved == json.loads(json.dumps(tiny_arith_deep.recipe()))  # a changed recipe must rebuild the weights
    assert resolve_model_path(tiny_arith_deep.NAME) == shipped and tiny_arith_deep.NAME in BASE_NAMES
    model = AutoModelForCausalLM.from_pretrained(str(shipped))
    assert isinstance(model, LlamaForCausalLM) and model.config.max_position_embeddings == 256
    assert sum(f.stat().st_size for f in shipped.iterdir()) < 8e6


def test_the_warm_up_holds_few_distinct_deep_chains_and_no_held_out_one():
    queries = tiny_arith_deep.warmup_queries()
    by_depth = Counter(len(q.meta["operands"]) for q in queries)
    deep = {q.prompt for q in queries if len(q.meta["operands"]) == 5}
    assert len(deep) == tiny_arith_deep.DEEP_CHAINS == 8 and by_depth[5] == 8 and by_depth[4] == 320
    heldout = {q.prompt for q in make_queries(200, split="heldout", seed=0, spec=tiny_arith_deep.TASK)}
    assert not heldout & {q.prompt for q in queries}
    assert not {q.prompt for q in tiny_arith_deep.warmup_queries(share=tiny_arith_deep.SHARE | {5: 0.0})} & deep


@pytest.mark.slow
def test_the_base_chains_short_expressions_and_rarely_completes_deep_ones():
    torch.manual_seed(0)
    model, tokenizer = load_policy(resolve_model_path(tiny_arith_deep.NAME))

    def right_chains(operands: int) -> float:
        queries = make_queries(32, split="heldout", seed=0, spec=ArithSpec(operands=operands, max_value=999))
        batch = sample_completions(model, tokenizer, queries, group_size=4, max_new_tokens=80)
        return sum(check_arith_reasoning(batch.query_of(i), t) for i, t in enumerate(batch.texts)) / len(batch.texts)

    assert right_chains(3) > 0.8  # the steps and the chaining are learned
    assert right_chains(5) < 0.1  # the depth is not: what RL has to find
