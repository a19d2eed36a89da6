"""train.keep_checkpoints: the policy of every checkpoint kept as step-<N>/, and which of a run's
models holds the weights after each step (what `rlvr eval --run DIR --checkpoint N` loads)."""

from __future__ import annotations

import shutil

import torch

from rlvr import rundir
from rlvr.config import load_config
from rlvr.engine.checkpoint import save_checkpoint, saved_step


def test_each_step_is_found_where_it_was_saved(tmp_path, random_policy):
    model, tokenizer = random_policy

    def save(path):
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)

    save_checkpoint(tmp_path, 3, model, tokenizer, torch.optim.SGD(model.parameters(), lr=0.1), {})
    assert saved_step(rundir.checkpoint_dir(tmp_path)) == 3
    assert rundir.saved_models(tmp_path, saved_step) == {3: tmp_path / "checkpoint"}
    for step in (3, 1, 1):  # kept again: replaced whole, nothing half-written left beside it
        assert rundir.keep_step(tmp_path, step, save) == tmp_path / f"step-{step}"
    assert not list(tmp_path.glob(".step-*"))
    (tmp_path / "step-2").mkdir()  # no config.json: not a model (a copy cut short)
    (tmp_path / "step-x").mkdir()
    # a kept step comes first; the checkpoint holds the same weights
    assert rundir.saved_models(tmp_path, saved_step) == {1: tmp_path / "step-1", 3: tmp_path / "step-3"}
    shutil.rmtree(tmp_path / "step-3")
    save(rundir.final_dir(tmp_path))
    assert rundir.saved_models(tmp_path, saved_step)[3] == tmp_path / "checkpoint"  # final/ of an unfinished run
    rundir.write_summary(tmp_path, {"steps": 3})
    assert rundir.saved_models(tmp_path, saved_step) == {1: tmp_path / "step-1", 3: tmp_path / "final"}


def test_steps_are_not_kept_unless_asked():
    assert load_config(None, []).train.keep_checkpoints is False
    assert load_config(None, ["train.keep_checkpoints=true"]).train.keep_checkpoints is True
