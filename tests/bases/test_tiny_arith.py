import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

from rlvr.bases import EMBEDDED, SHIPPED, resolve_model_path, tiny_arith


def test_shipped_base_is_a_standard_hf_llama_of_the_current_recipe(base_model_dir):
    model = AutoModelForCausalLM.from_pretrained(str(base_model_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(base_model_dir))
    assert isinstance(model, LlamaForCausalLM)
    params = sum(p.numel() for p in model.parameters())
    assert 0.5e6 < params < 5e6
    assert model.config.vocab_size == len(tokenizer)
    # the shipped weights were built by this code's recipe; a changed recipe must rebuild them
    assert json.loads((SHIPPED / "rlvr_recipe.json").read_text()) == tiny_arith.recipe()
    assert resolve_model_path(EMBEDDED) == SHIPPED
    assert all(torch.isfinite(p).all() for p in model.parameters())
