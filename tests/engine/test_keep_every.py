"""train.keep_every: the policy kept every N steps in steps/<N>/, whatever train.save_every is, and
which of a run's models holds the weights after each step (what `rlvr eval --run DIR --checkpoint
N` and `rlvr inspect --run DIR --step N+1` load)."""

from __future__ import annotations

import shutil

import torch

from rlvr import rundir
from rlvr.config import load_config
from rlvr.engine.checkpoint import save_checkpoint, saved_step
from rlvr.engine.loop import train


def test_each_step_is_found_where_it_was_saved(tmp_path, random_policy):
    model, tokenizer = random_policy

    def save(path):
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)

    save_checkpoint(tmp_path, 3, model, tokenizer, torch.optim.SGD(model.parameters(), lr=0.1), {})
    assert saved_step(rundir.checkpoint_dir(tmp_path)) == 3
    assert rundir.saved_models(tmp_path, saved_step) == {3: tmp_path / "checkpoint"}
    for step in (3, 1, 1):  # kept again: replaced whole, nothing half-written left beside it
        assert rundir.keep_step(tmp_path, step, save) == tmp_path / "steps" / str(step)
    assert sorted(p.name for p in (tmp_path / "steps").iterdir()) == ["1", "3"]
    (tmp_path / "steps" / "2").mkdir()  # no config.json: not a model (a copy cut short)
    (tmp_path / "steps" / "x").mkdir()
    # a kept step comes first; the checkpoint holds the same weights
    steps = tmp_path / "steps"
    assert rundir.saved_models(tmp_path, saved_step) == {1: steps / "1", 3: steps / "3"}
    shutil.rmtree(steps / "3")
    save(rundir.final_dir(tmp_path))
    assert rundir.saved_models(tmp_path, saved_step)[3] == tmp_path / "checkpoint"  # final/ of an unfinished run
    rundir.write_summary(tmp_path, {"steps": 3})
    assert rundir.saved_models(tmp_path, saved_step) == {1: steps / "1", 3: tmp_path / "final"}


def test_steps_are_not_kept_unless_asked():
    assert load_config(None, []).train.keep_every == 0
    assert load_config(None, ["train.keep_every=5"]).train.keep_every == 5


def test_a_run_keeps_every_nth_step_whatever_it_checkpoints(tmp_path):
    """keep_every=2 over 5 steps with save_every=3: steps/2/ and steps/4/, not the checkpoint's 3 or 5."""
    sets = ["train.steps=5", "train.keep_every=2", "train.save_every=3", "train.batch_queries=2"]
    sets += ["rollout.group_size=2", "task.num_eval=2", "train.eval_samples=1", "train.threads=1"]
    train(load_config(None, sets), tmp_path, progress=False)
    kept = sorted(int(p.name) for p in (tmp_path / "steps").iterdir())
    assert kept == [2, 4]
    assert all((tmp_path / "steps" / str(n) / "tokenizer.json").is_file() for n in kept)
    assert not list((tmp_path / "steps").glob(".*"))  # no half-written copy left behind
    assert rundir.saved_models(tmp_path, saved_step) == {
        2: tmp_path / "steps" / "2",
        4: tmp_path / "steps" / "4",
        5: tmp_path / "final",
    }
