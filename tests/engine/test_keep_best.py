"""train.keep_best: the run keeps the model with the best held-out score in best/, and says which."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from rlvr.bases import resolve_model_path
from rlvr.config import ConfigError, load_config
from rlvr.engine.loop import train

SHORT = ["train.steps=3", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=8"]
SHORT += ["train.eval_samples=2", "train.threads=1", "train.eval_every=1", "optim.lr=5e-3"]


def _evaluations(run_dir, summary) -> list[tuple[int, float]]:
    """(step, held-out pass@1) of every evaluation: the base's, each eval_every, the final."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    found = [(0, summary["base"]["pass@1"])]
    found += [(row["step"], row["eval/pass@1"]) for row in rows if "eval/pass@1" in row]
    return found


def test_the_best_evaluation_is_kept_with_its_step(tmp_path):
    summary = train(load_config(None, [*SHORT, "train.keep_best=pass@1"]), tmp_path, progress=False)
    evaluations = _evaluations(tmp_path, summary)
    assert [step for step, _ in evaluations] == [0, 1, 2, 3]
    best = max(value for _, value in evaluations)
    first = next(step for step, value in evaluations if value == best)  # ties keep the earlier
    assert summary["best"] == {"step": first, "pass@1": best}
    assert (tmp_path / "best" / "config.json").is_file()
    kept = load_file(tmp_path / "best" / "model.safetensors")
    if first in (0, 3):  # the base or the final model was the best: best/ holds its weights
        source = resolve_model_path("tiny-arith") if first == 0 else tmp_path / "final"
        expected = load_file(source / "model.safetensors")
        assert kept.keys() == expected.keys() and all((kept[k] == expected[k]).all() for k in expected)


def test_a_resumed_run_remembers_its_best(tmp_path):
    first = train(load_config(None, [*SHORT, "train.keep_best=pass@1"]), tmp_path, progress=False)
    resumed = train(
        load_config(None, [*SHORT, "train.keep_best=pass@1", "train.steps=5"]), tmp_path, resume=True, progress=False
    )
    later = [value for step, value in _evaluations(tmp_path, resumed) if step > 3]
    if all(value <= first["best"]["pass@1"] for value in later):
        assert resumed["best"] == first["best"]
    else:
        assert resumed["best"]["step"] > 3


def test_nothing_is_kept_unless_asked(tmp_path):
    summary = train(load_config(None, SHORT), tmp_path, progress=False)
    assert "best" not in summary and not (tmp_path / "best").exists()


def test_an_unknown_score_is_refused():
    with pytest.raises(ConfigError, match="train.keep_best"):
        load_config(None, ["train.keep_best=reward"])


def test_held_out_pass_at_k_during_training(tmp_path):
    settings = [*SHORT, "train.eval_samples=4", "train.eval_ks=[2, 4]"]
    summary = train(load_config(None, settings), tmp_path, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    evals = [row for row in rows if "eval/pass@1" in row]
    assert evals and all({"eval/pass@2", "eval/pass@4"} <= set(row) for row in evals)
    for result in (summary["base"], summary["final"]):
        assert result["pass@1"] <= result["pass@2"] <= result["pass@4"]  # pass@k grows with k
    with pytest.raises(ConfigError, match="train.eval_ks"):
        load_config(None, ["train.eval_samples=4", "train.eval_ks=[8]"])
