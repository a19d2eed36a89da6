"""Samplers by name (rollout/backends.py): startup checks through the real CLI, the bf16 sampler's
sync contract and a real sampler/trainer mismatch for TIS, and the vLLM batch layout without vLLM."""

import importlib.util
import math
from types import SimpleNamespace

import pytest
import torch

from rlvr.config import ConfigError, load_config
from rlvr.engine.loop import Trainer
from rlvr.rollout.backends import HFSampler
from rlvr.rollout.hf import encode_prompts
from rlvr.rollout.vllm import assemble_batch, completion_logprobs, unpadded_rows
from rlvr.tasks.arith import make_queries

NO_VLLM = importlib.util.find_spec("vllm") is None or not torch.cuda.is_available()
SMALL = [
    "train.batch_queries=2",
    "rollout.group_size=4",
    "task.num_train=20",
    "task.num_eval=4",
    "train.eval_samples=1",
    "train.threads=1",
    "rollout.max_new_tokens=24",
]


@pytest.mark.skipif(not NO_VLLM, reason="this machine has vLLM and a GPU")
def test_vllm_backend_without_vllm_or_gpu_exits_2_before_loading_a_model(tmp_path, cli):
    # model.name points nowhere: had a model been loaded first, the error would be about the model
    done = cli(
        "train", "--set", "rollout.backend=vllm", "--set", "model.name=/nonexistent", "--out", str(tmp_path / "run")
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "rollout.backend=vllm" in done.stderr and "rollout.backend=hf" in done.stderr
    assert ("vllm package" in done.stderr) or ("CUDA" in done.stderr)
    assert not (tmp_path / "run" / "config.yaml").exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["rollout.backend=vllm", "model.device=cpu"], "model.device=cpu"),
        (["algo.tis_cap=-1"], "algo.tis_cap must be >= 0"),
        (["algo.tis_cap=2", "algo.algorithm=gspo"], "algo.tis_cap is not available with algo.algorithm=gspo"),
        (["rollout.vllm_gpu_memory_utilization=0"], "vllm_gpu_memory_utilization"),
        (["rollout.dtype=float16"], "rollout.dtype must be one of float32, bfloat16"),
    ],
)
def test_sampling_settings_are_validated(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_bf16_sampler_is_resynced_to_the_updated_policy_after_a_step(base_model_dir, tmp_path):
    cfg = load_config(None, [*SMALL, f"model.name={base_model_dir}", "rollout.dtype=bfloat16", "algo.tis_cap=2"])
    trainer = Trainer(cfg, tmp_path)
    sampler = trainer.sampler
    assert isinstance(sampler, HFSampler) and sampler.model is not trainer.policy
    before = {k: v.clone() for k, v in sampler.model.state_dict().items()}
    metrics = trainer.step(0)
    policy = {k: v.to(torch.bfloat16) for k, v in trainer.policy.state_dict().items()}
    after = sampler.model.state_dict()
    assert all(v.dtype == torch.bfloat16 for v in after.values())
    assert all(torch.equal(after[k], policy[k]) for k in policy)  # the sampler holds the policy cast to bf16
    assert any(not torch.equal(after[k], before[k]) for k in policy)  # and the update did move it
    # bf16 sampling against a float32 trainer: a real, small mismatch, corrected by TIS
    assert 0 < metrics["sampling/sampling_logp_difference/mean"] < 0.1
    assert metrics["sampling/mismatch_kl"] > 0
    assert metrics["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0, abs=0.05)
    assert math.isfinite(metrics["loss"]) and metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-6)


def test_float32_sampler_is_the_policy_and_its_mismatch_is_rounding(base_model_dir, tmp_path):
    cfg = load_config(None, [*SMALL, f"model.name={base_model_dir}", "algo.tis_cap=2"])
    trainer = Trainer(cfg, tmp_path)
    assert trainer.sampler.model is trainer.policy
    metrics = trainer.step(0)
    assert metrics["sampling/sampling_logp_difference/max"] < 1e-4
    assert metrics["sampling/importance_sampling_ratio/min"] == pytest.approx(1.0, abs=1e-5)
    assert metrics["sampling/importance_sampling_ratio/max"] == pytest.approx(1.0, abs=1e-5)
    assert "sampling/mismatch_kl" not in Trainer(
        load_config(None, [*SMALL, f"model.name={base_model_dir}"]), tmp_path / "off"
    ).step(0)  # tis_cap = 0: no extra forward


def test_vllm_samples_become_the_hf_batch_layout(random_policy):
    _, tok = random_policy
    queries = make_queries(2, split="heldout", seed=0)
    prompt_ids, prompt_mask = encode_prompts(tok, [q.prompt for q in queries for _ in range(2)])  # [4, P]
    eos, a, b = tok.eos_token_id, tok.convert_tokens_to_ids("1"), tok.convert_tokens_to_ids("2")
    token_ids = [[a, b, eos], [a], [], [b, b, b, b]]  # stopped, cut at 1, empty, cut at 4
    logprobs = [[-0.5, -1.0, -0.1], [-2.0], [], [-0.3, -0.3, -0.3, -0.3]]
    batch = assemble_batch(tok, queries, 2, prompt_ids, prompt_mask, token_ids, logprobs, stop_ids=[eos])
    assert batch.completion_ids.shape == (4, 4) and batch.old_logp.shape == (4, 4)
    assert batch.completion_mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]]
    assert batch.completion_ids[1, 1:].tolist() == [tok.pad_token_id] * 3
    assert batch.old_logp[0].tolist() == [-0.5, -1.0, pytest.approx(-0.1), 0.0]
    assert batch.finish_reasons == ["stop", "length", "length", "length"]
    assert batch.texts[0] == "12" and batch.texts[3] == "2222"
    assert [batch.query_of(i).id for i in range(4)] == [queries[0].id] * 2 + [queries[1].id] * 2
    assert unpadded_rows(prompt_ids, prompt_mask)[0] == prompt_ids[0][prompt_mask[0].bool()].tolist()
    with pytest.raises(ValueError, match="one log-prob per token"):
        assemble_batch(tok, queries, 2, prompt_ids, prompt_mask, token_ids, [[-0.5], [-2.0], [], []], stop_ids=[eos])


def _position(logprobs: dict[int, float]) -> dict:
    """One position of vLLM's log-probs: token id -> an object with .logprob (vllm's Logprob)."""
    return {token: SimpleNamespace(logprob=value) for token, value in logprobs.items()}


def test_completion_log_probs_are_read_at_prompt_length_plus_t():
    # vLLM's prompt log-probs of [5, 6 | 7, 8]: entry i is token i given tokens < i, entry 0 is None
    prompt_logprobs = [None, _position({6: -1.0}), _position({7: -0.5, 3: -2.0}), _position({8: float("nan")})]
    got = completion_logprobs(prompt_logprobs, prompt_len=2, completion=[7, 8])
    assert got[0] == -0.5 and math.isnan(got[1])  # NaN (no value): TIS leaves that token uncorrected
