"""Which sampled token ends a completion (rollout/prompts.py `stop_token_ids`): EOS, and in chat
prompts the template's end-of-turn token, which a base model's tokenizer does not have as its EOS
(a base Qwen2.5's EOS is <|endoftext|>, its turns end with <|im_end|>). Shown on locally built
tokenizers and on a real tiny Llama taught to end its turn with <|im_end|> and then run on."""

from __future__ import annotations

import copy

import pytest
import torch

from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.models.fast_llama import FastLlama
from rlvr.models.forward import forward_for
from rlvr.models.tokenizer import CHATML, build_chat_tokenizer
from rlvr.rollout.fast_decode import sample
from rlvr.rollout.hf import encode_prompts, package_samples, sample_completions
from rlvr.rollout.prompts import PromptFormat, end_of_turn_id, prompt_token_ids, stop_token_ids
from rlvr.rollout.vllm import assemble_batch
from rlvr.types import Query

CHAT, PLAIN = PromptFormat("chat"), PromptFormat("plain")
LLAMA3 = (
    "{{ bos_token }}{% for m in messages %}"
    "{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)
GEMMA = (
    "{{ bos_token }}{% for m in messages %}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\\n' + m['content'] }}"
    "{{ '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)
PLAIN_TEXT = (  # turns end with a newline: nothing marks the end of a turn but EOS
    "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}"
)
MISTRAL = (  # the reply is closed with EOS itself
    "{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}"
    "{% else %}{{ m['content'] + eos_token }}{% endif %}{% endfor %}"
)


def base_qwen_tokenizer():
    """A base Qwen2.5's layout: ChatML turns closed by <|im_end|>, EOS <|endoftext|>."""
    return build_chat_tokenizer(eos="<|endoftext|>")


def templated(template: str, specials: list[str]):
    tok = build_chat_tokenizer(template, bos="<|begin_of_text|>", eos="<|endoftext|>")
    tok.add_tokens(specials, special_tokens=True)
    return tok


@pytest.mark.parametrize(
    ("template", "specials", "end"),
    [
        (CHATML, [], "<|im_end|>"),
        (LLAMA3, ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"], "<|eot_id|>"),
        (GEMMA, ["<start_of_turn>", "<end_of_turn>"], "<end_of_turn>"),
        (PLAIN_TEXT, [], None),
        (MISTRAL, [], "<|endoftext|>"),
    ],
)
def test_the_end_of_turn_is_read_from_the_template(template, specials, end):
    tok = templated(template, specials)
    expected = None if end is None else tok.convert_tokens_to_ids(end)
    assert end_of_turn_id(tok) == expected
    eos = tok.eos_token_id
    assert stop_token_ids(tok, CHAT) == ([eos] if expected in (None, eos) else [eos, expected])
    assert stop_token_ids(tok, PLAIN) == [eos]  # plain prompts stop at EOS alone


def test_an_instruct_tokenizer_whose_eos_ends_the_turn_has_one_stop_id():
    tok = build_chat_tokenizer()  # Qwen2.5-Instruct's: EOS is <|im_end|>
    assert stop_token_ids(tok, CHAT) == [tok.eos_token_id] == [tok.convert_tokens_to_ids("<|im_end|>")]


def test_the_models_generation_config_adds_its_eos_ids(random_policy):
    model, tok = random_policy
    assert stop_token_ids(tok, PLAIN, model) == [tok.eos_token_id]  # the built-in models list EOS alone
    listed = copy.deepcopy(model)
    listed.generation_config.eos_token_id = [tok.eos_token_id, 7]  # as Llama 3.1-Instruct lists <|eom_id|>
    assert stop_token_ids(tok, PLAIN, listed) == [tok.eos_token_id, 7]
    base = base_qwen_tokenizer()
    ends = [base.eos_token_id, base.convert_tokens_to_ids("<|im_end|>")]
    assert stop_token_ids(base, CHAT, listed) == [*ends, 7]


def test_a_non_special_end_of_turn_never_reaches_the_verifier_as_text():
    """An end-of-turn token added without the special flag survives skip_special_tokens decoding."""
    tok = build_chat_tokenizer(CHATML.replace("<|im_end|>", "<|end|>"), eos="<|endoftext|>")
    tok.add_tokens(["<|end|>"])  # an added token, not a special one
    end = tok.convert_tokens_to_ids("<|end|>")
    assert end_of_turn_id(tok) == end and end not in tok.all_special_ids
    stop_ids = stop_token_ids(tok, CHAT)
    answer = tok("<answer>17</answer>", add_special_tokens=False).input_ids
    rest = tok("\nmore", add_special_tokens=False).input_ids
    prompt_ids, prompt_mask = encode_prompts(tok, ["(2*8)+1"], fmt=CHAT)
    completion = torch.tensor([[*answer, end, *rest]])  # [1, T] as generate returns it before masking
    query = [Query("q0", "(2*8)+1", {})]
    batch = package_samples(
        tok, query, 1, prompt_ids, prompt_mask, completion, torch.zeros(completion.shape), stop_ids=stop_ids
    )
    assert batch.texts == ["<answer>17</answer>"] and batch.finish_reasons == ["stop"]
    assert batch.completion_mask[0].tolist() == [1] * (len(answer) + 1) + [0] * len(rest)
    # vLLM's rows come back ragged, stopped at the end of turn: the same batch
    ragged = assemble_batch(tok, query, 1, prompt_ids, prompt_mask, [[*answer, end]], [[-0.1] * (len(answer) + 1)],
                            stop_ids=stop_ids)  # fmt: skip
    assert ragged.texts == batch.texts and ragged.finish_reasons == ["stop"]
    assert ragged.completion_mask.sum().item() == len(answer) + 1


@pytest.fixture(scope="module")
def turn_ending_policy():
    """A tiny random Llama over the base-Qwen tokenizer, trained on one chat exchange whose reply is
    "17", <|im_end|>, then a new user turn: it ends its turn with <|im_end|> (not its EOS) and, if
    not stopped there, runs on into the next turn as an unstopped chat model does."""
    tok = base_qwen_tokenizer()
    model = build_tiny_llama(tok, TinyArch(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4), seed=0)
    prompt = prompt_token_ids(tok, "(2*8)+1", CHAT)
    reply = tok("17<|im_end|>\n<|im_start|>user\n(3*3)+1", add_special_tokens=False).input_ids
    ids = torch.tensor([prompt + reply])  # [1, L]
    labels = torch.tensor([[-100] * len(prompt) + reply])  # [1, L] loss on the reply only
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):  # memorised after about 70 steps
        loss = model(input_ids=ids, labels=labels).loss
        if loss.item() < 0.01:  # the reply is memorised: greedy decoding writes it
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.01
    return model.eval().requires_grad_(False), tok


def test_the_trained_model_runs_past_its_turn_when_only_eos_stops_it(turn_ending_policy):
    model, tok = turn_ending_policy
    prompt_ids, prompt_mask = encode_prompts(tok, ["(2*8)+1"], fmt=CHAT)
    ids, _ = sample(FastLlama(model), prompt_ids, prompt_mask, group_size=1, max_new_tokens=12, temperature=1.0,
                    top_p=1.0, greedy=True, stop_ids=[tok.eos_token_id], pad_id=tok.pad_token_id)  # fmt: skip
    assert tok.decode(ids[0]).startswith("17<|im_end|>\n<|im_start|>user")  # the bug this file guards


@pytest.mark.parametrize("forward", ["lean", "hf"])
def test_a_chat_completion_stops_at_the_end_of_turn(turn_ending_policy, forward):
    policy, tok = turn_ending_policy
    model = forward_for(copy.deepcopy(policy), forward)
    queries = [Query("q0", "(2*8)+1", {})]
    batch = sample_completions(model, tok, queries, group_size=1, max_new_tokens=12, greedy=True, prompt_format=CHAT)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    assert end != tok.eos_token_id
    assert batch.finish_reasons == ["stop"] and batch.texts == ["17"]
    # the mask covers "1", "7" and <|im_end|> (trained on and scored like EOS), and nothing after it
    assert batch.completion_ids[0, :3].tolist() == [*tok("17", add_special_tokens=False).input_ids, end]
    assert batch.completion_mask[0].tolist() == [1, 1, 1] + [0] * (batch.completion_mask.shape[1] - 3)
    assert (batch.old_logp[0, :3] < 0).all() and (batch.old_logp[0, 3:] == 0).all()


def test_lean_and_hf_sample_the_same_chat_completions(turn_ending_policy):
    """Greedy, on the trained prompt and an untrained one: the same stops, ids, masks and log-probs."""
    policy, tok = turn_ending_policy
    hf = forward_for(copy.deepcopy(policy), "hf")
    queries = [Query("q0", "(2*8)+1", {}), Query("q1", "(1+2)*3", {})]
    batches = []
    for model in (policy, hf):
        batches.append(sample_completions(model, tok, queries, group_size=1, max_new_tokens=12, greedy=True,
                                          prompt_format=CHAT))  # fmt: skip
    lean, ref = batches
    assert lean.finish_reasons == ref.finish_reasons and lean.texts == ref.texts
    assert torch.equal(lean.completion_ids, ref.completion_ids)
    assert torch.equal(lean.completion_mask, ref.completion_mask)
    assert torch.allclose(lean.old_logp, ref.old_logp, atol=2e-5)
    assert "stop" in lean.finish_reasons
