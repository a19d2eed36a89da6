"""Faults injected into a real training run end in a clear error or a clean recovery, and lose
nothing: a full disk while checkpointing, a trainer killed between the checkpoint's two renames, a
verifier that hangs (the watchdog), verifier pool workers killed with -9 mid-run. (Others live
beside the part they break: a NaN in a gradient and a skipped weight sync in test_health.py, a
training process killed with -9 in test_supervisor.py.)"""

from __future__ import annotations

import errno
import shutil

import pytest
import torch

from rlvr import rundir
from rlvr.config import load_config
from rlvr.diagnostics.determinism import differences
from rlvr.engine import checkpoint as checkpoint_module
from rlvr.engine.checkpoint import CheckpointError
from rlvr.engine.loop import train

SETS = ["train.steps=4", "train.batch_queries=4", "rollout.group_size=4", "task.num_eval=8", "train.threads=1"]


def test_a_full_disk_while_checkpointing_keeps_the_previous_checkpoint_and_says_how_to_go_on(tmp_path, monkeypatch):
    real_save, calls = torch.save, {"n": 0}

    def full_disk(obj, path, *args, **kwargs):  # the third checkpoint finds the disk full
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(checkpoint_module.torch, "save", full_disk)
    with pytest.raises(CheckpointError) as raised:
        train(load_config(None, SETS), tmp_path / "run", progress=False)
    message = str(raised.value)
    assert "step 3" in message and "No space left on device" in message and "previous checkpoint is intact" in message
    assert f"rlvr train --resume {tmp_path / 'run'}" in message
    assert not (tmp_path / "run" / ".checkpoint.tmp").exists()
    monkeypatch.setattr(checkpoint_module.torch, "save", real_save)
    # the space is back: the run resumes from step 2 and ends as an uninterrupted run does
    train(load_config(None, SETS), tmp_path / "run", resume=True, progress=False)
    train(load_config(None, SETS), tmp_path / "straight", progress=False)
    assert differences(tmp_path / "straight", tmp_path / "run") == []


def test_a_trainer_killed_between_the_checkpoints_two_renames_resumes_from_the_old_one(tmp_path, monkeypatch):
    from rlvr.engine.loop import Trainer

    cfg, real_step = load_config(None, SETS), Trainer.step

    def crash_at_the_third_step(self, step, observer=None):
        if step == 2:
            raise RuntimeError("killed")
        return real_step(self, step, observer)

    monkeypatch.setattr(Trainer, "step", crash_at_the_third_step)
    with pytest.raises(RuntimeError, match="killed"):
        train(cfg, tmp_path / "run", progress=False)
    monkeypatch.setattr(Trainer, "step", real_step)
    # the instant of the kill: checkpoint/ already renamed to .checkpoint.old, the new one not yet in place
    shutil.move(tmp_path / "run" / "checkpoint", tmp_path / "run" / ".checkpoint.old")
    assert rundir.find_checkpoint(tmp_path / "run") == tmp_path / "run" / ".checkpoint.old"
    train(cfg, tmp_path / "run", resume=True, progress=False)
    train(cfg, tmp_path / "straight", progress=False)
    assert differences(tmp_path / "straight", tmp_path / "run") == []


def test_a_verifier_that_hangs_is_abandoned_by_the_watchdog_and_trips_unscorable_at_that_step(tmp_path, monkeypatch):
    import threading

    from rlvr.engine.loop import Trainer
    from rlvr.tasks.registry import get_task
    from rlvr.verifiers.registry import get_verifier

    cfg = load_config(None, [*SETS, "reward.verifier_timeout_s=1", "train.on_alarm=stop"])
    query = get_task("arith").load(cfg.task)[0][0]
    verifier_class = type(get_verifier(query.verifier["type"]))
    real, forever, now = verifier_class.verify_batch, threading.Event(), {"step": -1}
    real_step = Trainer.step

    def step(self, n, observer=None):
        now["step"] = n
        return real_step(self, n, observer)

    def hangs_on_the_second_step(self, items):
        if now["step"] == 1:  # the base evaluation and the first step answer; the second step's call never does
            forever.wait()
        return real(self, items)

    monkeypatch.setattr(Trainer, "step", step)
    monkeypatch.setattr(verifier_class, "verify_batch", hangs_on_the_second_step)
    from rlvr.engine.health import HealthAlarm

    with pytest.raises(HealthAlarm) as raised:
        train(cfg, tmp_path / "run", progress=False)
    forever.set()  # let the abandoned thread end, before another test uses the verifier's pool
    for thread in threading.enumerate():
        if thread.name.startswith("rlvr-verify-"):
            thread.join(timeout=30)
    assert raised.value.step == 2 and raised.value.checks == ["unscorable"]
    row = [r for r in rundir.read_metrics(tmp_path / "run") if r.get("step") == 2][0]
    assert row["verifier/unscorable"] == 16  # every completion of the step: counted, not a reward of 0


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_verifier_pool_worker_killed_mid_step_changes_nothing(tmp_path, monkeypatch):
    # funcsynth's python verifier runs completions in a sandbox pool; in the second step, as the
    # verifier hands its batch to the pool, every started slot is killed with -9: the pool replaces
    # them and runs the jobs again, and the run logs what a run without the kill logs
    import os
    import signal

    from rlvr.sandbox.pool import SandboxPool

    sets = ["train.steps=3", "train.batch_queries=2", "rollout.group_size=4", "task.num_eval=4",
            "train.eval_samples=1", "train.threads=1"]  # fmt: skip
    cfg = load_config("configs/funcsynth-gold.yaml", sets)
    train(cfg, tmp_path / "straight", progress=False)
    real, calls, killed = SandboxPool.run_batch, {"n": 0}, []

    def kill_then_run(self, jobs, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the base evaluation, step 1, then step 2's batch
            for slot in self._slots:
                if slot is not None:
                    os.killpg(slot.proc.pid, signal.SIGKILL)
                    killed.append(slot.proc.pid)
        return real(self, jobs, *args, **kwargs)

    monkeypatch.setattr(SandboxPool, "run_batch", kill_then_run)
    train(cfg, tmp_path / "killed", progress=False)
    assert killed  # the kill happened, mid-run
    assert differences(tmp_path / "straight", tmp_path / "killed") == []
