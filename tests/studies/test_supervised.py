"""The supervised controls of a study (studies/supervised.py), on the real base and task: SFT on the
worked solutions and RFT on the base's own right answers, each an ordinary run directory."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from rlvr import rundir
from rlvr.bases import resolve_model_path
from rlvr.bases.warmup import sft_batch
from rlvr.config import load_config
from rlvr.errors import UserError
from rlvr.models import load_policy
from rlvr.rollout.prompts import PromptFormat
from rlvr.studies.atlas import preset_path
from rlvr.studies.runner import held_out_config
from rlvr.studies.supervised import Pool, SupervisedSpec, run_supervised, step_queries, weighted_sft_loss
from rlvr.tasks.registry import load_task
from rlvr.verifiers import RewardFunction

SMALL = ("train.steps=2", "task.num_eval=4", "train.eval_samples=1", "train.threads=1")
EXPANSION = preset_path("configs/expansion.yaml")


def test_a_row_counted_c_times_weighs_as_c_repeated_rows() -> None:
    model, tok = load_policy(resolve_model_path("tiny-arith"))
    rows = [(("1+2=", "<answer>3</answer>"), 3), (("7*8=", "<think>7*8=56</think><answer>56</answer>"), 1)]
    weighted = weighted_sft_loss(model, tok, rows)
    (grad,) = torch.autograd.grad(weighted, [model.lm_head.weight])
    ids, labels = sft_batch(tok, [pair for pair, count in rows for _ in range(count)])
    repeated = model(input_ids=ids, labels=labels).loss  # Hugging Face's mean over the repeated batch
    (expected,) = torch.autograd.grad(repeated, [model.lm_head.weight])
    assert torch.allclose(weighted, repeated, atol=1e-6) and torch.allclose(grad, expected, atol=1e-6)
    assert not torch.allclose(weighted, weighted_sft_loss(model, tok, [(rows[0][0], 1), rows[1]]), atol=1e-4)


def test_sft_on_the_worked_solutions_writes_a_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    summary = run_supervised(SupervisedSpec(str(out), "gold", EXPANSION, SMALL, seed=1))
    assert rundir.is_finished(out) and rundir.has_final(out)
    assert held_out_config(out).task.operands == 5  # evaluated on the RL arm's held-out task
    rows = rundir.read_metrics(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["sft/distinct_completions"] == 16 for r in rows)  # 16 queries, G = 8 copies of one solution
    assert summary["supervised"]["source"] == "gold" and set(summary) >= {"base", "final", "wall_s"}
    assert load_policy(rundir.final_dir(out))[0] is not None


def test_rft_keeps_only_right_answers_and_each_querys_pool_is_its_own(tmp_path: Path) -> None:
    cfg = load_config(EXPANSION, list(SMALL))
    model, tok = load_policy(resolve_model_path(cfg.model.name))
    queries = load_task(cfg.task)[0]
    spec = SupervisedSpec(str(tmp_path), "rft", EXPANSION, SMALL, rft_samples=8)
    gold = RewardFunction({"correctness": 1.0})
    pool = Pool(spec, cfg, model, tok, PromptFormat.of(cfg.task), gold)
    chosen = step_queries(random.Random(0), queries, pool, 16)
    assert len(chosen) == 16 and all(pool.kept[q.id] for q in chosen)
    kept = [(q, text) for q in queries if pool.kept.get(q.id) for text in pool.kept[q.id]]
    assert kept and all(s.reward == 1.0 for s in gold.score_batch(kept))  # every kept sample answers right
    about = pool.about()
    assert about["kept"] == len(kept) and about["samples"] == 8 * about["queries_drawn"]
    assert about["queries_with_kept"] < about["queries_drawn"]  # some queries had no right answer in 8
    alone = Pool(spec, cfg, model, tok, PromptFormat.of(cfg.task), gold)
    some = [q for q in queries if q.id in pool.kept][:3]
    alone.fill(some[::-1])  # another order, another batch: the same draws per query
    assert all(alone.kept[q.id] == pool.kept[q.id] for q in some)


def test_a_control_it_cannot_make_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown source 'dpo'"):
        run_supervised(SupervisedSpec(str(tmp_path / "a"), "dpo", EXPANSION, SMALL))
    with pytest.raises(UserError, match="task 'funcsynth' has no worked solutions"):
        run_supervised(SupervisedSpec(str(tmp_path / "b"), "gold", preset_path("configs/funcsynth-gold.yaml"), SMALL))
    assert not any(tmp_path.iterdir())  # refused before anything was written
