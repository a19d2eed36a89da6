"""The named builders (engine/build.py): a resumed run loads its policy once, from the checkpoint,
and its frozen reference is the initial policy, never the checkpoint's weights."""

from __future__ import annotations

import sys
import types

import torch

from rlvr.config import load_config
from rlvr.engine import build
from rlvr.engine.build import build_run, restore
from rlvr.engine.loop import train
from rlvr.rundir import find_checkpoint

SHORT = ["train.steps=2", "train.batch_queries=2", "rollout.group_size=2", "task.num_eval=2"]
SHORT += ["train.eval_samples=1", "train.threads=1", "optim.lr=1e-2"]


def _loads(monkeypatch) -> list[str]:
    """The names load_policy is called with while a run is built (the real loader runs)."""
    seen: list[str] = []
    real = build.load_policy

    def counting(name, *args, **kwargs):
        seen.append(str(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(build, "load_policy", counting)
    return seen


def _trained(tmp_path, *settings: str):
    cfg = load_config(None, [*SHORT, *settings])
    train(cfg, tmp_path, progress=False)
    checkpoint = find_checkpoint(tmp_path)
    assert checkpoint is not None
    return cfg, checkpoint


def test_resume_without_a_reference_loads_the_policy_once_from_the_checkpoint(tmp_path, monkeypatch):
    cfg, checkpoint = _trained(tmp_path, "algo.beta=0")
    loads = _loads(monkeypatch)
    parts = build_run(cfg, checkpoint)
    try:
        assert loads == [str(checkpoint)]
        assert parts.context.reference is None
        restored = restore(parts.context, checkpoint)
        assert restored.step == 2 and restored.base_eval is not None and restored.best is None
    finally:
        parts.close()


def test_a_resumed_reference_is_the_initial_policy_not_the_checkpoint(tmp_path, monkeypatch):
    cfg, checkpoint = _trained(tmp_path, "algo.beta=0.1")
    loads = _loads(monkeypatch)
    resumed = build_run(cfg, checkpoint)
    fresh = build_run(cfg)
    try:
        assert loads[0] == str(checkpoint) and loads[1] != str(checkpoint)  # the policy once, then the base for π_ref
        reference = dict(resumed.context.reference.model.named_parameters())
        initial = dict(fresh.context.policy.named_parameters())
        trained = dict(resumed.context.policy.named_parameters())
        assert all(torch.equal(reference[name], initial[name]) for name in initial)
        assert any(not torch.equal(trained[name], initial[name]) for name in initial)  # it did train
    finally:
        resumed.close()
        fresh.close()


def test_a_checkpoint_written_before_a_module_moved_still_loads(tmp_path, monkeypatch):
    from rlvr.engine.checkpoint import load_state
    from rlvr.rollout.heldout import HeldoutResult

    state_dir = tmp_path / "checkpoint"
    state_dir.mkdir()
    result = HeldoutResult(pass_at_1=0.5, greedy=1.0, n=2, num_queries=8, unscorable=0)
    old = types.ModuleType("rlvr.train.evaluate")  # where it lived before the engine split
    old.HeldoutResult = HeldoutResult
    monkeypatch.setitem(sys.modules, "rlvr.train.evaluate", old)
    monkeypatch.setattr(HeldoutResult, "__module__", "rlvr.train.evaluate")
    torch.save({"step": 3, "base_eval": result}, state_dir / "trainer_state.pt")
    monkeypatch.undo()
    assert b"rlvr.train.evaluate" in (state_dir / "trainer_state.pt").read_bytes()
    loaded = load_state(state_dir)["base_eval"]
    assert isinstance(loaded, HeldoutResult) and loaded.pass_at_1 == 0.5
