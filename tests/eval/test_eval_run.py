"""`rlvr eval --run DIR`: a run's model (final/, best/ or the one saved after a step) on its own
task's held-out split, with its own config, against the model it started from; what is wrong with
a run or a flag is one line, exit 2."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from rlvr import rundir
from rlvr.bases import resolve_model_path
from rlvr.config import load_config
from rlvr.engine.loop import train

RUN = ["train.steps=2", "train.batch_queries=2", "rollout.group_size=2", "task.num_eval=4"]
RUN += ["train.eval_samples=1", "train.threads=1", "task.operands=2", "task.num_train=100", "rollout.temperature=0.8"]


@pytest.fixture(scope="module")
def unchanged_run(tmp_path_factory):
    """A finished run whose weights never moved (an update far below float32's resolution, no weight
    decay), with its best model and the model after each step (save_every=1) kept."""
    out = tmp_path_factory.mktemp("run")
    keep = ["train.keep_best=pass@1", "train.keep_every=1"]
    train(load_config(None, [*RUN, "optim.lr=1e-30", "optim.weight_decay=0", *keep]), out, progress=False)
    final = load_file(out / "final" / "model.safetensors")
    base = load_file(resolve_model_path("tiny-arith") / "model.safetensors")
    assert all(torch.equal(final[name], base[name]) for name in base)  # the premise: nothing moved
    return out


def _copy(run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    return copy


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


def test_the_model_after_a_kept_step(unchanged_run, tmp_path, cli):
    """train.keep_every=1 kept steps/1/ and steps/2/, each a whole model with its tokenizer."""
    assert all(
        (unchanged_run / "steps" / str(n) / name).is_file()
        for n in (1, 2)
        for name in ("config.json", "tokenizer.json")
    )
    assert not list((unchanged_run / "steps").glob(".*"))  # no half-written copy left behind
    done, report = _eval(cli, tmp_path, "--run", str(unchanged_run), "--checkpoint", "1")
    assert done.returncode == 0, done.stderr
    assert report["models"]["model"]["path"] == str(unchanged_run / "steps" / "1")
    assert report["models"]["model"]["per_query"] == report["models"]["base"]["per_query"]  # nothing moved


def test_a_step_is_found_in_the_checkpoint_of_an_unfinished_run(unchanged_run, tmp_path, cli):
    """Without kept steps nor final/, the model after step 2 is checkpoint/'s (its state is at step 2)."""
    run = _copy(unchanged_run, tmp_path)
    for name in ("steps", "final"):
        shutil.rmtree(run / name)
    (run / "summary.json").unlink()
    done, report = _eval(cli, tmp_path, "--run", str(run), "--checkpoint", "2")
    assert done.returncode == 0, done.stderr
    assert report["models"]["model"]["path"] == str(run / "checkpoint")
    done, _ = _eval(cli, tmp_path, "--run", str(run), "--checkpoint", "1")
    assert "(saved after steps 2; train.keep_every=N keeps one" in done.stderr
    done, _ = _eval(cli, tmp_path, "--run", str(run))
    assert (
        done.returncode == 2
        and done.stderr.strip() == f"rlvr: error: --run {run}: no final/ model there (the run has not finished)"
    )


def _task_without_a_held_out_split(unchanged_run, tmp_path):
    """The run, its config edited to hf on one file and no task.hf_eval_path: nothing held out."""
    run = _copy(unchanged_run, tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "1+1=", "answer": "2"}) + "\n")
    config = rundir.read_config(run)
    config["task"] |= {"name": "hf", "hf_path": str(rows)}
    rundir.write_config(run, config)
    return run


@pytest.mark.parametrize(
    "args, message",
    [
        (["--run", "{tmp}"], "no run there"),
        (["--run", "{run}", "--task", "funcsynth"], "the run trained on arith"),
        (["--run", "{run}", "--model", "tiny-arith"], "not allowed with argument"),
        (
            ["--run", "{run}", "--checkpoint", "7"],
            "--checkpoint 7: --run {run} has no model saved after step 7 (saved after steps 1, 2; ",
        ),
        (
            ["--run", "{run}", "--checkpoint", "last"],
            "argument --checkpoint: expected best, final or a step number (an integer >= 1); got 'last'",
        ),
        (["--run", "{run}", "--checkpoint", "0"], "argument --checkpoint: expected best, final or a step number"),
        (["--model", "tiny-arith", "--checkpoint", "2"], "--checkpoint 2: only with --run DIR"),
        (["--run", "{run}", "--k", "1,8"], "--k 8 exceeds --n 2"),
        (["--run", "{hf_run}"], "is a single file, so it has no held-out split; set task.hf_eval_path"),
    ],
)
def test_bad_runs_are_one_line_exit_2(args, message, unchanged_run, tmp_path, cli):
    hf_run = _task_without_a_held_out_split(unchanged_run, tmp_path) if "{hf_run}" in args else None
    args = [a.format(tmp=tmp_path, run=unchanged_run, hf_run=hf_run) for a in args]
    out = tmp_path / "ev"
    done = cli("eval", "--n", "2", "--k", "1,2", "--num-queries", "4", *args, "--out", str(out), "--quiet")
    assert done.returncode == 2 and message.format(run=unchanged_run) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_best_model_not_kept_is_named(tmp_path, cli):
    run = tmp_path / "run"
    train(load_config(None, RUN), run, progress=False)
    done, _ = _eval(cli, tmp_path, "--run", str(run), "--checkpoint", "best")
    assert done.returncode == 2 and "no best/ model there" in done.stderr and "train.keep_best" in done.stderr
    assert not (run / "steps").exists()  # train.keep_every is off unless asked
    done, _ = _eval(cli, tmp_path, "--run", str(run), "--checkpoint", "1")  # final/ is the model after step 2
    assert done.returncode == 2 and "(saved after steps 2; train.keep_every=N" in done.stderr
