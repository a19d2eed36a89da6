"""A resumed run's summary counts the time of every command that made it, and says where it resumed."""

from __future__ import annotations

import torch

from rlvr import rundir
from rlvr.config import load_config
from rlvr.engine.loop import train

SHORT = ["train.batch_queries=4", "rollout.group_size=4", "task.num_eval=4", "train.eval_samples=2"]
SHORT += ["train.threads=1", "train.save_every=1"]


def test_the_summary_adds_the_segments_and_names_the_resume(tmp_path):
    first = train(load_config(None, [*SHORT, "train.steps=2"]), tmp_path, progress=False)
    assert "segments" not in first
    resumed = train(load_config(None, [*SHORT, "train.steps=3"]), tmp_path, resume=True, progress=False)
    earlier, last = resumed["segments"]
    assert (earlier["from_step"], earlier["to_step"], last["from_step"], last["to_step"]) == (0, 2, 2, 3)
    assert earlier["wall_s"] > 0 and last["wall_s"] > 0
    assert resumed["wall_s"] == round(earlier["wall_s"] + last["wall_s"], 2)
    assert resumed["wall_s"] > first["wall_s"]  # the first command's time is in it
    line = rundir.summary_lines(resumed, temperature=1.0, fidelity="gold", tools="none")[0]
    assert f"3 steps in {resumed['wall_s']:.0f} s over 2 runs (resumed at step 2: 1 step in" in line


def test_a_checkpoint_from_before_segments_says_its_steps_went_untimed(tmp_path):
    train(load_config(None, [*SHORT, "train.steps=1"]), tmp_path, progress=False)
    state_file = rundir.checkpoint_dir(tmp_path) / rundir.STATE_FILE
    state = torch.load(state_file, weights_only=False)
    del state["segments"]  # as engine/checkpoint.py wrote it before segments were recorded
    torch.save(state, state_file)
    resumed = train(load_config(None, [*SHORT, "train.steps=2"]), tmp_path, resume=True, progress=False)
    assert resumed["segments"][0] == {"from_step": 0, "to_step": 1, "wall_s": None}
    line = rundir.summary_lines(resumed, temperature=1.0, fidelity="gold", tools="none")[0]
    assert "steps 0-1 untimed (an older checkpoint)" in line
