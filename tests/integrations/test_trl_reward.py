"""rlvr's TRL reward adapter inside a real TRL GRPOTrainer on the shipped tiny model.

TRL writes the rewards it used for each completion (and the advantages) to
``<output_dir>/completions/completions_<step>.parquet`` when ``log_completions`` is on; the tests
re-judge every logged completion with a fresh rlvr RewardFunction and compare.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest
import torch

from rlvr.integrations.trl import TrlReward, TrlRewardError, message_text
from rlvr.models import load_policy
from rlvr.tasks.arith import make_queries
from rlvr.tasks.criteria import CriteriaError
from rlvr.types import Query, Verdict
from rlvr.verifiers import RewardFunction, get_verifier

trl = pytest.importorskip("trl", reason="TRL is the 'bench' extra: pip install -e '.[bench]'")
datasets = pytest.importorskip("datasets")
pd = pytest.importorskip("pandas")

G = 4  # completions per prompt
CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
"""Renders a conversation as rlvr's plain [BOS] + prompt, so the arith model sees what it knows."""


def _rows(tokenizer) -> tuple[list[Query], list[dict]]:
    """Three arith queries plus one whose criteria are broken (empty answer): rlvr's math verifier
    answers 'error' for it, so every one of its completions is unscorable."""
    queries = make_queries(3, split="train", seed=7)
    broken = Query("broken", queries[0].prompt, {"type": "math", "answer": ""})
    queries.append(broken)
    rows = [{"id": q.id, "prompt": tokenizer.bos_token + q.prompt, "verifier": q.verifier} for q in queries]
    return queries, rows


def _run_grpo(model_dir: Path, out: Path, *, conversational: bool, steps: int):
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = load_policy(str(model_dir))
    queries, rows = _rows(tokenizer)
    if conversational:
        tokenizer.chat_template = CHAT_TEMPLATE
        for row in rows:  # the template adds the BOS; criteria as JSON strings, the mixed-type form
            row["prompt"] = [{"role": "user", "content": row["prompt"].removeprefix(tokenizer.bos_token)}]
            row["verifier"] = json.dumps(row["verifier"])
    args = GRPOConfig(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        fp16=False,
        seed=0,
        per_device_train_batch_size=len(rows) * G,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=G,
        max_completion_length=40,
        temperature=1.0,
        top_k=0,
        beta=0.04,
        learning_rate=5e-4,
        gradient_checkpointing=False,
        max_steps=steps,
        logging_steps=1,
        log_completions=True,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=TrlReward(),
            args=args,
            train_dataset=datasets.Dataset.from_list(rows),
            processing_class=tokenizer,
        )
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    logged = pd.concat([pd.read_parquet(path) for path in sorted((out / "completions").glob("*.parquet"))])
    history = [entry for entry in trainer.state.log_history if "reward" in entry]
    return queries, logged.reset_index(drop=True), history


def _prompt_text(prompt) -> str:
    return prompt if isinstance(prompt, str) else message_text([dict(m) for m in prompt], roles=None)


def _completion_text(completion) -> str:
    return (
        completion if isinstance(completion, str) else message_text([dict(m) for m in completion], roles=("assistant",))
    )


def _check_against_rlvr(queries: list[Query], logged, history, steps: int) -> None:
    by_prompt = {q.prompt: q for q in queries if q.id != "broken"}
    judge = RewardFunction()
    verdicts, unscorable_groups = set(), 0
    assert len(logged) == steps * len(queries) * G
    for start in range(0, len(logged), G):  # TRL samples each prompt G times in a row
        group = logged.iloc[start : start + G]
        prompt = _prompt_text(group["prompt"].iloc[0])
        logged_rewards = group["rlvr"].tolist()
        advantages = group["advantage"].tolist()
        if all(math.isnan(r) for r in logged_rewards):  # only the broken row may be unscorable
            assert group["rlvr/verdict"].tolist() == ["error"] * G
            assert advantages == [0.0] * G  # TRL: unscorable -> out of the baseline, advantage 0
            unscorable_groups += 1
            continue
        query = next(q for text, q in by_prompt.items() if prompt.endswith(text))
        for completion, reward in zip(group["completion"], logged_rewards):
            scored = judge.score(query, _completion_text(completion))
            verdicts.add(scored.results["correctness"].verdict)
            assert scored.reward == reward
        r = torch.tensor(logged_rewards)  # [G]
        expected = (r - r.mean()) / (r.std() + 1e-4)  # TRL's group-scaled advantage, Bessel std
        assert torch.allclose(torch.tensor(advantages), expected, atol=1e-5)
    assert unscorable_groups == steps  # the broken row, once per step
    assert {Verdict.PASS, Verdict.FAIL} <= verdicts, "a run with one verdict would not test much"
    assert len(history) == steps
    for step, entry in enumerate(history):
        rows = logged.iloc[step * len(queries) * G : (step + 1) * len(queries) * G]["rlvr"]
        assert entry["reward"] == pytest.approx(rows.dropna().mean(), abs=1e-6)  # NaN rows left out
        assert entry["verifier/unscorable"] == G  # the broken row's completions, per call


@pytest.mark.slow
def test_grpo_trainer_logs_rlvr_rewards_for_text_prompts(base_model_dir, tmp_path):
    queries, logged, history = _run_grpo(base_model_dir, tmp_path, conversational=False, steps=2)
    assert isinstance(logged["completion"].iloc[0], str)
    _check_against_rlvr(queries, logged, history, steps=2)


@pytest.mark.slow
def test_grpo_trainer_logs_rlvr_rewards_for_conversations(base_model_dir, tmp_path):
    queries, logged, history = _run_grpo(base_model_dir, tmp_path, conversational=True, steps=1)
    assert not isinstance(logged["completion"].iloc[0], str)  # TRL handed over message lists
    _check_against_rlvr(queries, logged, history, steps=1)


def test_criteria_column_missing_or_malformed_names_the_row():
    reward = TrlReward()
    with pytest.raises(TrlRewardError, match="no 'verifier' column.*answer"):
        reward(prompts=["1+1="], completions=["<answer>2</answer>"], answer=["2"])
    with pytest.raises(CriteriaError, match="completion 1, column 'verifier': not valid JSON"):
        reward(prompts=["a", "b"], completions=["x", "y"], verifier=['{"type": "math", "answer": "1"}', "{oops"])
    with pytest.raises(CriteriaError, match='completion 0.*criteria object with a "type"'):
        reward(prompts=["a"], completions=["x"], verifier=[{"answer": "1"}])


@pytest.mark.sandbox
def test_mixed_types_as_json_strings_and_a_single_verifier():
    """Math and python rows in one call (the python one runs in the real sandbox), conversational
    completions, and a bare Verifier as scorer (reward = its score, None when unscorable)."""
    python = {"type": "python", "entry_point": "add", "tests": [{"args": [2, 3], "expected": 5}]}
    columns = {
        "verifier": [
            json.dumps({"type": "math", "answer": "7"}),
            json.dumps(python),
            {"type": "math", "answer": "7", "entry_point": None},
            {"type": "math", "answer": " "},
        ]
    }
    completions = [
        [{"role": "assistant", "content": "<think>3+4</think><answer>7</answer>"}],
        [{"role": "assistant", "content": "```python\ndef add(a, b):\n    return a + b\n```"}],
        "<answer>8</answer>",
        "<answer>7</answer>",
    ]
    extra: dict[str, list] = {}
    metrics: dict[str, float] = {}
    rewards = TrlReward()(
        prompts=["p"] * 4,
        completions=completions,
        **columns,
        log_extra=extra.__setitem__,
        log_metric=metrics.__setitem__,
    )
    assert rewards == [1.0, 1.0, 0.0, None]
    assert extra["rlvr/verdict"] == ["pass", "pass", "fail", "error"]
    assert metrics == {"verifier/unscorable": 1.0}
    only_math = TrlReward(get_verifier("math"), name="math")
    assert only_math(
        prompts=["p"] * 2, completions=["<answer>7</answer>", "<answer>7</answer>"], verifier=columns["verifier"][2:]
    ) == [1.0, None]
