"""Chat prompts (rollout/prompts.py): a query's prompt as the user turn of the tokenizer's chat
template, on a real (randomly initialised) Llama with a char-level tokenizer carrying Qwen2.5's
ChatML template, built here and saved as a Hugging Face model directory."""

import json
import math
from pathlib import Path

import pytest
import torch

from rlvr.bases import resolve_model_path
from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.config import RolloutConfig, TaskConfig
from rlvr.models import load_policy
from rlvr.models.forward import forward_for
from rlvr.models.logprobs import token_logprobs
from rlvr.models.tokenizer import CHATML
from rlvr.models.tokenizer import build_chat_tokenizer as chat_tokenizer
from rlvr.rollout.backends import make_sampler
from rlvr.rollout.hf import encode_prompts, package_samples, sample_completions
from rlvr.rollout.prompts import PromptFormat, prompt_token_ids, render_prompt, resolve_style, stop_token_ids
from rlvr.rollout.sampler import SamplerSetup
from rlvr.tasks.arith import make_queries
from rlvr.types import Query


@pytest.fixture(scope="module")
def chat_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised Llama (about 0.2M parameters) sized to the chat tokenizer, saved with it."""
    path = tmp_path_factory.mktemp("chat-llama")
    tok = chat_tokenizer()
    arch = TinyArch(hidden_size=64, intermediate_size=256, num_layers=2, num_heads=4, max_positions=256)
    model = build_tiny_llama(tok, arch, seed=0)
    assert 100_000 < sum(p.numel() for p in model.parameters()) < 500_000
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def unpadded(ids: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
    return [row[m.bool()].tolist() for row, m in zip(ids, mask)]


def test_chat_prompt_is_the_qwen_layout_with_and_without_a_system_turn():
    tok = chat_tokenizer()
    assert render_prompt(tok, "(2*8)+1", PromptFormat("chat")) == (
        "<|im_start|>user\n(2*8)+1<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render_prompt(tok, "(2*8)+1", PromptFormat("auto", system_prompt="Answer briefly.")) == (
        "<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\n(2*8)+1<|im_end|>\n<|im_start|>assistant\n"
    )


def test_auto_is_plain_for_the_tiny_model_and_chat_for_a_templated_tokenizer():
    _, tiny = load_policy(resolve_model_path("tiny-arith"))
    assert resolve_style(tiny, PromptFormat()) == "plain"
    # plain is today's layout exactly: [BOS] + the prompt's characters
    assert prompt_token_ids(tiny, "1+2", PromptFormat()) == [tiny.bos_token_id, *tiny("1+2").input_ids]
    assert resolve_style(chat_tokenizer(), PromptFormat()) == "chat"


def test_a_template_that_writes_its_bos_gets_one_bos_not_two():
    tok = chat_tokenizer("{{ bos_token }}" + CHATML, bos="<|begin_of_text|>")
    bos = tok.bos_token_id
    ids = prompt_token_ids(tok, "1+2", PromptFormat("chat"))
    # the template's own BOS, then <|im_start|>; prepending one as plain prompts do would double it
    assert ids[:2] == [bos, tok.convert_tokens_to_ids("<|im_start|>")] and ids.count(bos) == 1


@pytest.mark.parametrize("forward", ["lean", "hf"])
def test_sampling_prompts_with_the_rendered_ids_and_the_trainer_scores_them(chat_model_dir, forward):
    model, tok = load_policy(str(chat_model_dir))
    policy = forward_for(model, forward)
    fmt = PromptFormat("chat", system_prompt="Be brief.")
    queries = make_queries(4, split="heldout", seed=0)
    torch.manual_seed(0)
    batch = sample_completions(policy, tok, queries, group_size=8, max_new_tokens=40, prompt_format=fmt)
    rendered = [render_prompt(tok, q.prompt, fmt) for q in queries for _ in range(8)]
    # no BOS in front: load_policy made BOS = EOS = <|im_end|> for a tokenizer without one
    assert unpadded(batch.prompt_ids, batch.prompt_mask) == [
        tok(t, add_special_tokens=False).input_ids for t in rendered
    ]
    assert all(
        row[0] == tok.convert_tokens_to_ids("<|im_start|>") for row in unpadded(batch.prompt_ids, batch.prompt_mask)
    )
    # the trainer's forward pass on those ids gives the sampler's log-probs back: ratio 1 at the start
    logp, _ = token_logprobs(
        policy, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=1.0
    )
    assert torch.allclose(logp, batch.old_logp, atol=1e-4)
    # the assistant turn ends at <|im_end|> (the tokenizer's EOS), and the text verifiers see lacks it
    stopped = [i for i, reason in enumerate(batch.finish_reasons) if reason == "stop"]
    assert stopped, "seed 0 gives some completions that end their turn"
    for i in stopped:
        last = int(batch.completion_mask[i].sum()) - 1
        assert batch.completion_ids[i, last].item() == tok.eos_token_id
        assert "<|im_end|>" not in batch.texts[i]


def test_the_trainers_sampler_takes_the_configured_system_prompt(chat_model_dir):
    model, tok = load_policy(str(chat_model_dir))
    fmt = PromptFormat.of(TaskConfig(prompt_format="chat", system_prompt="Be brief."))
    queries = make_queries(2, split="heldout", seed=0)
    batch = make_sampler(RolloutConfig(), model, SamplerSetup(tok, 0, prompt_format=fmt)).sample(
        queries, group_size=2, max_new_tokens=4, temperature=1.0, top_p=1.0
    )
    first = tok.decode(unpadded(batch.prompt_ids, batch.prompt_mask)[0])
    assert first == render_prompt(tok, queries[0].prompt, PromptFormat("chat", "Be brief."))
    assert first.startswith("<|im_start|>system\nBe brief.<|im_end|>")


def test_a_completion_ending_in_im_end_is_decoded_without_it():
    tok = chat_tokenizer()
    end, pad = tok.eos_token_id, tok.pad_token_id
    answer = tok("<answer>17</answer>", add_special_tokens=False).input_ids
    completion = torch.tensor([[*answer, end, pad, pad]])  # [1, T]
    prompt_ids, prompt_mask = encode_prompts(tok, ["(2*8)+1"], fmt=PromptFormat("chat"))
    batch = package_samples(
        tok,
        [Query("q0", "(2*8)+1", {})],
        1,
        prompt_ids,
        prompt_mask,
        completion,
        torch.zeros(completion.shape),
        stop_ids=stop_token_ids(tok, PromptFormat("chat")),
    )
    assert batch.texts == ["<answer>17</answer>"] and batch.finish_reasons == ["stop"]
    assert batch.completion_mask[0].tolist() == [1] * (len(answer) + 1) + [0, 0]


def test_chat_without_a_template_names_the_model():
    _, tiny = load_policy(resolve_model_path("tiny-arith"))
    with pytest.raises(Exception, match="model tiny-arith has no chat template") as err:
        resolve_style(tiny, PromptFormat("chat"), "tiny-arith")
    assert type(err.value).__name__ == "UserError"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["task.prompt_format=chat"], "task.prompt_format=chat, but model tiny-arith has no chat template"),
        (["task.prompt_format=plain", "task.system_prompt=Be brief."], "task.system_prompt needs chat"),
        (["task.system_prompt=Be brief."], "model tiny-arith has no chat template; drop task.system_prompt"),
    ],
)
def test_bad_prompt_settings_exit_2_with_one_line(settings, message, tmp_path, cli):
    sets = [arg for s in settings for arg in ("--set", s)]
    done = cli("train", *sets, "--set", "task.num_eval=8", "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_train_runs_two_steps_on_a_chat_model(chat_model_dir, tmp_path, cli):
    out = tmp_path / "run"
    small = ["train.batch_queries=2", "rollout.group_size=4", "task.num_train=8", "task.num_eval=4"]
    settings = [f"model.name={chat_model_dir}", "task.prompt_format=chat", "task.system_prompt=Be brief.", *small]
    sets = [arg for s in [*settings, "train.steps=2", "train.eval_samples=2"] for arg in ("--set", s)]
    done = cli("train", *sets, "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2] and all(math.isfinite(r["loss"]) for r in steps)
    # the trained model keeps its template, so evaluating it later prompts it the same way
    _, final_tok = load_policy(str(out / "final"))
    assert resolve_style(final_tok, PromptFormat()) == "chat"


def test_eval_prompts_as_the_run_was_prompted(chat_model_dir, tmp_path, cli):
    sets = ["--set", "task.prompt_format=chat", "--set", "task.system_prompt=Be brief."]
    done = cli("eval", "--model", str(chat_model_dir), "--n", "2", "--k", "1,2", "--num-queries", "2", *sets,
               "--out", str(tmp_path / "e"), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "e" / "eval.json").read_text())
    assert report["prompt_format"] == {"style": "chat", "system_prompt": "Be brief."}
    refused = cli("eval", "--model", "tiny-arith", "--set", "task.prompt_format=chat", "--out", str(tmp_path / "x"))
    assert refused.returncode == 2 and "tiny-arith has no chat template" in refused.stderr
    assert "Traceback" not in refused.stderr
