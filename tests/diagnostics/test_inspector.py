"""The step inspector on the real tiny model: the exported numbers are the trainer's, recomputing
the loss from them with the shipped loss function gives the exported loss, and the replay and
the HTML page are built from the same numbers."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from rlvr.algos import ALGORITHMS, group_advantages
from rlvr.config import load_config
from rlvr.diagnostics.html import render_capture
from rlvr.diagnostics.inspector import inspect_config, write_capture
from rlvr.diagnostics.replay import replay

SMALL = [
    "train.batch_queries=3",
    "rollout.group_size=4",
    "task.num_train=30",
    "task.num_eval=8",
    "optim.micro_batch_size=4",
    "train.threads=1",
]
# two passes over the batch with a tight clip range, so that ratios move off 1 and some tokens clip
MOVED = ["algo.num_iterations=2", "optim.lr=5e-4", "algo.epsilon=0.05", "algo.beta=0.04"]


@pytest.fixture(scope="module")
def captured(base_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("capture")
    cfg = load_config(None, [f"model.name={base_model_dir}", *SMALL, *MOVED])
    capture = inspect_config(cfg, out)
    write_capture(capture, out)
    return json.loads((out / "capture.json").read_text()), out


def _tensor(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


def test_schema_and_shapes(captured):
    capture, _ = captured
    b, g = 3, 4
    n, t = b * g, len(capture["mask"][0])
    assert capture["config"] == capture["config"] | {
        "algorithm": "grpo",
        "epsilon": 0.05,
        "epsilon_high": 0.05,
        "beta": 0.04,
        "group_size": 4,
        "aggregation": "sequence_mean",
    }
    assert len(capture["prompts"]) == b and len(capture["completions"]) == n
    for key in ("rewards", "advantages"):
        assert [len(row) for row in capture[key]] == [g] * b, key
    assert len(capture["group_mean"]) == b and len(capture["group_std"]) == b
    for key in ("mask", "logp", "old_logp", "ref_logp", "ratio", "clipped", "kl", "per_token_loss", "token_weight"):
        assert len(capture[key]) == n and all(len(row) == t for row in capture[key]), key
    for i, completion in enumerate(capture["completions"]):
        assert len(completion["token_ids"]) == sum(capture["mask"][i]) == len(completion["tokens"])
    assert capture["grad_norm"] > 0 and capture["update_norm"] > 0


def test_advantages_are_group_advantages_of_the_rewards(captured):
    capture, _ = captured
    rewards = _tensor([[float("nan") if r is None else r for r in row] for row in capture["rewards"]])  # [B, G]
    expected, stats = group_advantages(rewards, eps=1e-4, scale_by_std=True)
    assert torch.allclose(_tensor(capture["advantages"]), expected, atol=1e-7)
    assert torch.allclose(_tensor(capture["group_mean"]), stats["group_mean"], atol=1e-7)
    assert torch.allclose(_tensor(capture["group_std"]), stats["group_std"], atol=1e-7)


def test_loss_recomputed_from_the_exported_tensors_with_the_shipped_loss(captured):
    capture, _ = captured
    c, mask = capture["config"], _tensor(capture["mask"], torch.long)  # [N, T]
    loss, stats = ALGORITHMS[c["algorithm"]].loss(
        _tensor(capture["logp"]),
        _tensor(capture["old_logp"]),
        _tensor(capture["advantages"]).flatten(),
        mask,
        ref_logp=_tensor(capture["ref_logp"]),
        epsilon_low=c["epsilon"],
        epsilon_high=c["epsilon_high"],
        beta=c["beta"],
        aggregation=c["aggregation"],
        kl_estimator=c["kl_estimator"],
        num_sequences=len(capture["completions"]),
        num_tokens=int(mask.sum()),
        max_tokens=c["max_new_tokens"],
    )
    assert float(loss) == pytest.approx(capture["loss"], rel=1e-5, abs=1e-7)  # the trainer's micro-batched loss
    assert sum(capture["row_loss"]) == pytest.approx(capture["loss"], abs=1e-6)
    # the second pass really moved the policy: ratios off 1, a non-zero KL, clipped tokens
    ratio = _tensor(capture["ratio"])[mask.bool()]
    assert (ratio - 1).abs().max() > 1e-3 and stats["kl"] > 0
    assert stats["clip_ratio/region_mean"] == pytest.approx(capture["stats"]["clip_ratio/region_mean"], abs=1e-6)
    assert torch.allclose(
        ratio, (_tensor(capture["logp"]) - _tensor(capture["old_logp"])).exp()[mask.bool()], atol=1e-6
    )


def test_replay_without_a_change_reproduces_the_capture(captured):
    capture, out = captured
    same = replay(capture, out, ["algo.beta=0.04"])
    assert same["loss_before"] == pytest.approx(capture["loss"], abs=1e-6)
    assert same["grad_difference_norm"] == pytest.approx(0.0, abs=1e-7) and same["grad_cosine"] == pytest.approx(1.0)


def test_replay_under_other_settings_matches_the_shipped_loss(captured):
    capture, out = captured
    changed = replay(capture, out, ["algo.beta=0", "algo.aggregation=token_mean", "algo.epsilon=0.1"])
    mask = _tensor(capture["mask"], torch.long)  # [N, T]
    loss, _ = ALGORITHMS["grpo"].loss(
        _tensor(capture["logp"]),
        _tensor(capture["old_logp"]),
        _tensor(capture["advantages"]).flatten(),
        mask,
        ref_logp=None,
        epsilon_low=0.1,
        epsilon_high=0.1,
        beta=0.0,
        aggregation="token_mean",
        num_sequences=len(capture["completions"]),
        num_tokens=int(mask.sum()),
        max_tokens=40,
    )
    assert changed["loss_after"] == pytest.approx(float(loss), abs=1e-6)
    assert changed["loss_difference"] == pytest.approx(float(loss) - capture["loss"], abs=1e-6)
    assert changed["grad_difference_norm"] > 1e-6 and changed["grad_cosine"] < 1 - 1e-6
    assert changed["token_weight_difference_max"] > 0
    gspo = replay(capture, out, ["algo.algorithm=gspo"])
    assert gspo["config"]["algorithm"] == "gspo" and gspo["loss_after"] != pytest.approx(capture["loss"], abs=1e-9)


def test_a_replay_may_not_change_how_the_batch_was_made(captured):
    from rlvr.diagnostics.inspector import InspectError

    capture, out = captured
    with pytest.raises(InspectError, match="only algo"):
        replay(capture, out, ["rollout.temperature=0.5"])


def test_html_is_self_contained_and_renders_every_stage(captured, tmp_path):
    node = shutil.which("node")
    capture, out = captured
    page = (out / "capture.html").read_text()
    for outside in ("http://", "https://", "<link", " src="):
        assert outside not in page, outside
    for stage in ("1. Queries", "2. G completions", "3. Rewards, mean, std, advantages", "4. Ratios, clipping, KL"):
        assert stage in page
    if node is None:
        pytest.skip("node is not installed: the page's script cannot be run")
    result = replay(capture, out, ["algo.beta=0"])
    (tmp_path / "replay.html").write_text(render_capture(capture, result))
    shim = Path(__file__).with_name("page_shim.js")
    for name, has_replay in (("capture.html", False), ("replay.html", True)):
        path = out / name if name == "capture.html" else tmp_path / name
        done = subprocess.run([node, str(shim), str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        assert shown["tokens"] == sum(map(sum, capture["mask"]))  # one span per real token
        assert shown["queries"] == 3
        assert {"advantage", "ratio", "clipped", "kl", "token_weight"} <= set(shown["options"])
        assert shown["painted"]["ratio"] > 0 and shown["painted"]["advantage"] > 0
        assert f"{capture['loss']:.6f}" in shown["stage4"]
        assert ("replay_weight_difference" in shown["options"]) == has_replay
        assert ("‖g_new − g_captured‖" in shown["replay"]) == has_replay


@pytest.mark.parametrize("preset", ["ppo", "dpo"])
def test_ppo_and_dpo_captures_render_their_own_records(preset, base_model_dir, tmp_path):
    node = shutil.which("node")
    cfg = load_config(f"configs/{preset}.yaml", [f"model.name={base_model_dir}", *SMALL])
    capture = inspect_config(cfg, tmp_path)
    write_capture(capture, tmp_path)
    saved = json.loads((tmp_path / "capture.json").read_text())  # strict JSON: NaN would not parse in a page
    if preset == "ppo":
        n, t = len(saved["completions"]), len(saved["mask"][0])
        for key in ("values", "returns", "gae_advantages", "token_advantages"):
            assert [len(row) for row in saved[key]] == [t] * n, key
        assert saved["token_advantages"] == saved["gae_advantages"]  # what the loss is fed
    else:
        pairs = saved["pairs"]
        assert len(pairs["chosen"]) == len(pairs["rejected"]) == len(pairs["margins"]) >= 1
        for m, (chosen, rejected) in enumerate(zip(pairs["chosen"], pairs["rejected"])):
            assert saved["completions"][chosen]["verdict"] == "pass"
            assert saved["completions"][rejected]["verdict"] == "fail"
            margin = (pairs["policy_chosen"][m] - pairs["ref_chosen"][m]) - (
                pairs["policy_rejected"][m] - pairs["ref_rejected"][m]
            )
            assert pairs["margins"][m] == pytest.approx(margin, abs=1e-5)
    if node is None:
        pytest.skip("node is not installed: the page's script cannot be run")
    shim = Path(__file__).with_name("page_shim.js")
    done = subprocess.run([node, str(shim), str(tmp_path / "capture.html")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert ("pair" in shown["options"]) == (preset == "dpo")
    assert ("mean over the M pairs" in shown["stage4"]) == (preset == "dpo")


def test_a_replay_builds_the_loss_as_the_step_does(base_model_dir, tmp_path):
    # DAPO's overlong filter drops truncated completions from the loss; the replay takes the
    # step's own inputs (engine/step.py policy_gradient_inputs), so it reproduces the captured
    # gradient, and turning the filter off brings the truncated completions back.
    sets = [f"model.name={base_model_dir}", *SMALL, "algo.overlong_filter=true", "rollout.max_new_tokens=20"]
    capture = inspect_config(load_config(None, sets), tmp_path)
    write_capture(capture, tmp_path)
    capture = json.loads((tmp_path / "capture.json").read_text())
    reasons = [c["finish_reason"] for c in capture["completions"]]
    assert "length" in reasons and "stop" in reasons  # some completions are filtered, not all
    same = replay(capture, tmp_path, ["algo.overlong_filter=true"])
    assert same["loss_before"] == pytest.approx(capture["loss"], abs=1e-6)
    assert same["grad_norm_before"] == pytest.approx(capture["grad_norm"], rel=1e-4)
    unfiltered = replay(capture, tmp_path, ["algo.overlong_filter=false"])
    assert unfiltered["grad_difference_norm"] > 1e-6
    weights = torch.tensor(unfiltered["token_weight"])  # [N, T] the unfiltered loss pushes truncated rows too
    truncated = torch.tensor([r == "length" for r in reasons])
    assert weights[truncated].abs().sum() > 0


def test_tis_weights_and_sampling_versions_are_kept_per_token(base_model_dir, tmp_path):
    # a bfloat16 sampler copy gives a real mismatch; a cap just above 1 masks some tokens and keeps others
    cap = 1.001
    sets = ["rollout.dtype=bfloat16", f"algo.tis_cap={cap}", "algo.tis_mode=mask", "rollout.max_staleness=1"]
    capture = inspect_config(load_config(None, [f"model.name={base_model_dir}", *SMALL, *sets]), tmp_path)
    mask = _tensor(capture["completion_mask"]).bool()
    versions = torch.tensor(capture["versions"])
    assert (versions[mask] == 0).all() and (versions[~mask] == -1).all()  # step 1's batch: sampled by version 0
    ratio = torch.exp(_tensor(capture["old_logp"]).double() - _tensor(capture["sampler_logp"]).double())
    cut = (ratio > cap) & mask
    weight = torch.where(cut, 0.0, ratio)
    assert 0 < int(cut.sum()) < int(mask.sum())  # some tokens masked, some kept
    torch.testing.assert_close(_tensor(capture["is_weight"]).double()[mask], weight[mask], atol=1e-5, rtol=1e-5)
    assert torch.equal(torch.tensor(capture["is_cut"]), cut)
    rewards = _tensor([[float("nan") if r is None else r for r in row] for row in capture["rewards"]])  # [B, G]
    advantages, _ = group_advantages(rewards, eps=1e-4, scale_by_std=True)
    advantages = advantages.flatten()  # [N] GRPO's A, one per completion, before the weights
    kept = mask & (advantages[:, None] != 0)
    token = _tensor(capture["token_advantages"])
    torch.testing.assert_close(token[kept], (advantages[:, None] * _tensor(capture["is_weight"]))[kept])
    page = render_capture(capture)
    assert "IS weight" in page and "staleness" in page
