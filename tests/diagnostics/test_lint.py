"""The config linter (diagnostics/lint.py): `rlvr train --check` and the check before every run."""

from __future__ import annotations

import json

import pytest

from rlvr.config import load_config
from rlvr.diagnostics.lint import ATLAS, best_lr, lint, stable_lrs


def _levels(findings) -> dict[str, str]:
    return {f.check: f.level for f in findings}


def test_the_default_run_has_no_error_and_no_warning():
    assert set(_levels(lint(load_config(None, []))).values()) == {"ok"}


@pytest.mark.parametrize(("tokens", "level"), [(8, "warning"), (16, "warning"), (20, "ok")])
def test_max_new_tokens_is_judged_against_the_worked_solutions(tokens, level):
    # arith's worked solutions are 16 to 20 tokens: 8 cuts every one, 16 some, 20 none; a warning, as
    # an answer-only reward can still pay a completion shorter than the chain
    (finding,) = [
        f for f in lint(load_config(None, [f"rollout.max_new_tokens={tokens}"])) if f.check == "max_new_tokens"
    ]
    assert finding.level == level and ("set it to at least 20" in finding.message) == (level != "ok")


@pytest.mark.parametrize(
    ("sets", "world", "message"),
    [(["train.batch_queries=6", "optim.micro_batch_size=0"], 4, "does not split over 4 processes"),
     (["train.batch_queries=4", "rollout.group_size=6", "optim.micro_batch_size=8"], 2, "does not divide a process's 12")],
)  # fmt: skip
def test_a_batch_that_does_not_split_over_processes_or_micro_batches_is_an_error(sets, world, message):
    (finding,) = [f for f in lint(load_config(None, sets), world_size=world) if f.check == "batch"]
    assert finding.level == "error" and message in finding.message


def test_an_lr_above_the_atlas_stable_range_is_a_warning_named_by_what_it_did():
    stable = stable_lrs(json.loads(ATLAS.read_text()))
    assert stable[5e-4][0] and not stable[2e-3][0]  # the measurement the warning rests on
    (finding,) = [f for f in lint(load_config(None, ["optim.lr=1e-3"])) if f.check == "lr"]
    assert (
        finding.level == "warning" and "2e-3" not in finding.message and "0.002 took held-out pass@1" in finding.message
    )


def test_the_default_lr_is_the_one_the_shipped_atlas_measured_best():
    from rlvr.config import RunConfig

    assert best_lr(json.loads(ATLAS.read_text())) == RunConfig().optim.lr


def _atlas(**lrs: tuple[list[float], list[float]]) -> dict:
    """An atlas of one seed per lr: name -> (held-out pass@1 before/after, greedy before/after)."""
    knobs = [{"resolved": {"optim": {"lr": float(lr.replace("_", "-"))}}, "runs": [lr]} for lr in lrs]
    return {"knobs": {"lr": knobs}, "runs": {lr: {"evals": {"pass@1": p, "greedy": g}} for lr, (p, g) in lrs.items()}}


def test_best_lr_takes_the_highest_pass_at_1_among_rates_that_keep_greedy_accuracy():
    keeps = _atlas(**{"1e_4": ([0.4, 0.90], [0.99, 0.98]), "2e_4": ([0.4, 0.95], [0.99, 0.96])})
    assert best_lr(keeps) == 1e-4  # 2e-4 scores higher but costs 3 points of greedy accuracy
    assert best_lr(_atlas(**{"1e_4": ([0.4, 0.90], [0.99, 0.98]), "2e_4": ([0.4, 0.95], [0.99, 0.97])})) == 2e-4
    assert best_lr(_atlas(**{"2e_3": ([0.4, 0.05], [0.99, 0.04])})) is None


def test_a_run_that_does_not_fit_the_machine_is_an_error():
    (finding,) = [f for f in lint(load_config(None, []), free_bytes=1e6) if f.check == "memory"]
    assert finding.level == "error" and "rlvr memory" in finding.message


def test_train_check_exits_2_on_an_error_and_train_refuses_to_start(tmp_path, cli, monkeypatch):
    from rlvr.diagnostics import lint as lint_module

    monkeypatch.setenv("WORLD_SIZE", "4")  # read by the linter alone: --check starts no process group
    done = cli("train", "--check", "--set", "train.batch_queries=6", "--set", "optim.micro_batch_size=0")
    assert done.returncode == 2 and "error   batch" in done.stdout
    monkeypatch.delenv("WORLD_SIZE")
    ok = cli("train", "--check", "--set", "rollout.max_new_tokens=8")
    assert ok.returncode == 0 and "warning max_new_tokens" in ok.stdout and "no errors" in ok.stdout
    monkeypatch.setattr(lint_module, "_free_memory", lambda: (1e6, "available RAM"))  # a machine of 1 MB
    refused = cli("train", "--out", str(tmp_path / "run"))
    assert refused.returncode == 2 and "rlvr train --check" in refused.stderr and "error   memory" in refused.stdout
    assert not (tmp_path / "run" / "metrics.jsonl").exists() and "Traceback" not in refused.stderr


def test_a_task_that_does_not_load_is_one_line_under_check(cli):
    done = cli("train", "--check", "--set", "task.name=reasoning_gym", "--set", "task.rg_dataset=nope")
    assert done.returncode == 2 and "not a reasoning-gym dataset" in done.stderr and "Traceback" not in done.stderr


def test_a_batch_of_more_queries_than_the_task_has_is_a_warning():
    from rlvr.diagnostics.lint import task_and_tokenizer

    cfg = load_config(None, [])
    n = len(task_and_tokenizer(cfg)[0])
    for batch, level in ((n, "ok"), (n + 1, "warning")):
        (finding,) = [
            f
            for f in lint(load_config(None, [f"train.batch_queries={batch}", "optim.micro_batch_size=0"]))
            if f.check == "queries"
        ]
        assert finding.level == level and (f"set it to at most {n}" in finding.message) == (level == "warning")
