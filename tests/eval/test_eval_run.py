"""`rlvr eval --run DIR`: a run's model on its own task's held-out split, with its own config,
against the model it started from."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from rlvr.bases import resolve_model_path
from rlvr.config import load_config
from rlvr.engine.loop import train

RUN = ["train.steps=2", "train.batch_queries=2", "rollout.group_size=2", "task.num_eval=4"]
RUN += ["train.eval_samples=1", "train.threads=1", "task.operands=2", "task.num_train=100", "rollout.temperature=0.8"]


@pytest.fixture(scope="module")
def unchanged_run(tmp_path_factory):
    """A finished run whose weights never moved (an update far below float32's resolution, no weight
    decay), with its best model kept."""
    out = tmp_path_factory.mktemp("run")
    train(
        load_config(None, [*RUN, "optim.lr=1e-30", "optim.weight_decay=0", "train.keep_best=pass@1"]),
        out,
        progress=False,
    )
    final = load_file(out / "final" / "model.safetensors")
    base = load_file(resolve_model_path("tiny-arith") / "model.safetensors")
    assert all(torch.equal(final[name], base[name]) for name in base)  # the premise: nothing moved
    return out


def _eval(cli, tmp_path, *args):
    out = tmp_path / "ev"
    done = cli("eval", *args, "--n", "2", "--k", "1,2", "--num-queries", "4", "--out", str(out), "--quiet")
    return done, (json.loads((out / "eval.json").read_text()) if done.returncode == 0 else None)


def test_a_run_is_evaluated_with_its_own_config_against_its_base(unchanged_run, tmp_path, cli):
    done, report = _eval(cli, tmp_path, "--run", str(unchanged_run))
    assert done.returncode == 0, done.stderr
    assert report["task"] == "arith" and report["spec"]["operands"] == 2 and report["temperature"] == 0.8
    assert set(report["models"]) == {"model", "base"}
    # the weights never moved and both models draw with the same seed: not a hair of difference
    assert len(report["models"]["model"]["per_query"]) == 4
    assert report["models"]["model"]["per_query"] == report["models"]["base"]["per_query"]


def test_the_best_model_of_a_run(unchanged_run, tmp_path, cli):
    done, report = _eval(cli, tmp_path, "--run", str(unchanged_run), "--checkpoint", "best")
    assert done.returncode == 0, done.stderr
    assert len(report["models"]["model"]["per_query"]) == 4


@pytest.mark.parametrize(
    "args, message",
    [
        (["--run", "{tmp}"], "no run there"),
        (["--run", "{run}", "--task", "funcsynth"], "the run trained on arith"),
        (["--run", "{run}", "--model", "tiny-arith"], "not allowed with argument"),
    ],
)
def test_bad_runs_are_one_line_exit_2(args, message, unchanged_run, tmp_path, cli):
    args = [a.format(tmp=tmp_path, run=unchanged_run) for a in args]
    done, _ = _eval(cli, tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_best_model_not_kept_is_named(tmp_path, cli):
    run = tmp_path / "run"
    train(load_config(None, RUN), run, progress=False)
    done, _ = _eval(cli, tmp_path, "--run", str(run), "--checkpoint", "best")
    assert done.returncode == 2 and "no best/ model there" in done.stderr and "train.keep_best" in done.stderr
