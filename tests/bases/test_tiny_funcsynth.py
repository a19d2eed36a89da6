"""The shipped tiny-funcsynth base: the current recipe, a standard HF Llama, and a hackable mix."""

import json
from collections import Counter

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaForCausalLM

from rlvr.bases import resolve_model_path, tiny_funcsynth
from rlvr.models import load_policy
from rlvr.rollout.hf import sample_completions
from rlvr.tasks.funcsynth import answer_kind, make_queries


def test_shipped_base_is_of_the_current_recipe_and_loads_as_a_standard_llama():
    shipped = tiny_funcsynth.BASE.shipped
    assert (shipped / "config.json").is_file(), "tiny-funcsynth is missing from the package"
    # the shipped weights were built by this code's recipe; a changed recipe must rebuild them
    saved = json.loads((shipped / "rlvr_recipe.json").read_text())
    assert saved == json.loads(json.dumps(tiny_funcsynth.recipe()))
    assert resolve_model_path(tiny_funcsynth.NAME) == shipped
    model = AutoModelForCausalLM.from_pretrained(str(shipped))
    assert isinstance(model, LlamaForCausalLM) and all(torch.isfinite(p).all() for p in model.parameters())
    size = sum(f.stat().st_size for f in shipped.iterdir())
    assert size < 8e6  # a few MB in the wheel


@pytest.mark.slow
def test_the_base_writes_formulas_and_lookup_tables():
    # GRPO can only shift between kinds of answer the base already samples: both must be there
    torch.manual_seed(0)
    model, tokenizer = load_policy(resolve_model_path(tiny_funcsynth.NAME))
    queries = make_queries(16, split="heldout", seed=0)
    batch = sample_completions(model, tokenizer, queries, group_size=8, max_new_tokens=48)
    kinds = Counter(answer_kind(text) for text in batch.texts)  # 128 samples
    assert kinds["lookup"] >= 10 and kinds["formula"] >= 10, kinds


def test_build_base_for_funcsynth_refuses_a_non_empty_folder(tmp_path):
    import subprocess
    import sys

    (tmp_path / "keep.txt").write_text("x")
    done = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "build-base", "--task", "funcsynth", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "exists and is not empty" in done.stderr
