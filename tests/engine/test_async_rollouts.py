"""Asynchronous rollouts (rollout.max_staleness) on the real trainer: the sampler process in
lockstep gives the synchronous loop's metrics; a stale batch's ratios and loss are those of its
stamped version; a dead sampler stops the run with a clear error instead of a hang."""

import gc
import json
import multiprocessing
import time
import weakref

import numpy as np
import pytest
import torch

from rlvr.config import load_config
from rlvr.engine.async_rollouts import RolloutProcess, SamplerProcessError
from rlvr.engine.build import build_rollout_process
from rlvr.engine.context import StepObserver
from rlvr.engine.loop import Trainer, train
from rlvr.engine.sampler_launch import start_sampler_process
from rlvr.engine.weight_sync import ALIGN, pack_state, unpack_state
from rlvr.models.logprobs import token_logprobs

SMALL = ["train.batch_queries=4", "rollout.group_size=4", "task.num_train=40", "task.num_eval=8",
         "rollout.max_new_tokens=24", "train.threads=1", "train.steps=3"]  # fmt: skip
ASYNC_ONLY = ("rollout/staleness", "rollout/policy_version", "rollout/samples_per_s", "sync/")


def _same(value):
    return "nan" if value != value else value  # NaN equals NaN here: the same metric undefined in both


def _trainer(base, out, *sets):
    return Trainer(load_config(None, [f"model.name={base}", *SMALL, *sets]), out)


def test_the_sampler_process_in_lockstep_gives_the_synchronous_metrics(base_model_dir, tmp_path):
    sync = _trainer(base_model_dir, tmp_path / "sync")
    expected = [sync.step(step) for step in range(3)]
    sync.close()
    lockstep = _trainer(base_model_dir, tmp_path / "lockstep")  # seeds torch as the first did
    lockstep.context.sampler = build_rollout_process(
        lockstep.cfg, lockstep.policy, lockstep.train_queries, lockstep.dist, max_staleness=0
    )
    seen = _Reference()
    try:
        got = [lockstep.step(step, seen) for step in range(3)]
    finally:
        lockstep.close()
    assert seen.from_sampler == [True] * 3  # log π_ref came from the sampler process, and kl is the same
    for step, (want, have) in enumerate(zip(expected, got)):
        assert have["rollout/staleness_max"] == 0 and have["rollout/policy_version"] == step
        compared = [k for k in want if not k.startswith(("time/", "memory/"))]
        assert {"reward", "loss", "kl", "grad_norm", "entropy", "accuracy"} <= set(compared)
        assert {k: _same(have[k]) for k in compared} == {k: _same(want[k]) for k in compared}, f"step {step}"
        assert {k for k in have if not k.startswith(("time/", "memory/", *ASYNC_ONLY))} == set(compared)


class _Reference(StepObserver):
    """Whether the step's log π_ref is the one the sampler process sent with the batch."""

    def __init__(self):
        self.from_sampler, self.sent = [], None

    def rollouts(self, rollouts):
        self.sent = rollouts.ref_logp

    def reference(self, ref_logp):
        self.from_sampler.append(self.sent is not None and ref_logp is self.sent)


class _Record(StepObserver):
    def rollouts(self, rollouts):
        self.batch, self.rewards = rollouts.batch, rollouts.rewards

    def advantages(self, batch, advantages, mask, stats):
        self.advantages, self.mask = advantages, mask


def _logp(model, batch):
    with torch.no_grad():
        logp, _ = token_logprobs(
            model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask, temperature=1.0
        )
    return logp  # [N, T]


def test_a_stale_batch_is_trained_on_its_stamped_log_probs(base_model_dir, tmp_path):
    trainer = _trainer(
        base_model_dir, tmp_path, "rollout.max_staleness=2", "algo.beta=0", "algo.aggregation=token_mean"
    )
    assert isinstance(trainer.context.sampler, RolloutProcess)
    versions, stale = [], 0
    try:
        for step in range(3):
            versions.append({k: v.detach().clone() for k, v in trainer.policy.state_dict().items()})
            record = _Record()
            metrics = trainer.step(step, record)
            batch = record.batch
            sampled = batch.versions[batch.completion_mask.bool()].unique().tolist()
            assert len(sampled) == 1 and step - 2 <= sampled[0] <= step  # one version per batch, within N
            v = sampled[0]
            assert metrics["rollout/staleness_max"] == step - v
            stale += step > v
            # the stamped old log-probs are the sampling version's, not the trainer's newer weights
            scorer = type(trainer.policy)(trainer.policy.config).eval()
            scorer.load_state_dict(versions[v])
            mask = batch.completion_mask.bool()
            torch.testing.assert_close(_logp(scorer, batch)[mask], batch.old_logp[mask], atol=2e-4, rtol=0)
            scorer.load_state_dict(versions[step])
            current = _logp(scorer, batch)  # [N, T] π_θ at the update's single pass
            if step > v:
                assert (current - batch.old_logp)[mask].abs().max() > 1e-3
            mismatch = (current - batch.old_logp)[mask].abs().mean()
            assert metrics["rollout/logprob_mismatch"] == pytest.approx(float(mismatch), abs=1e-6)
            # the clipped surrogate by hand (token mean, β = 0) from the stamped log-probs
            ratio = torch.exp(current - batch.old_logp)  # [N, T]
            adv = record.advantages[:, None]  # [N, 1]
            surrogate = torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
            loss = -surrogate[record.mask.bool()].sum() / record.mask.sum()
            assert metrics["loss"] == pytest.approx(float(loss), abs=1e-5)
            clipped = ((ratio < 0.8) & (adv < 0)) | ((ratio > 1.2) & (adv > 0))
            assert metrics["clip_ratio/region_mean"] == pytest.approx(float(clipped[mask].double().mean()), abs=1e-6)
        assert stale >= 1  # step 1's batch was asked for before the first update: always one version old

        # a dead sampler: the next step says so and stops, instead of waiting forever
        trainer.context.sampler.process.kill()
        started = time.perf_counter()
        with pytest.raises(SamplerProcessError, match="sampler process .* exited with code"):
            trainer.cfg.train.steps = 5
            trainer.step(3)
        assert time.perf_counter() - started < 30
    finally:
        trainer.close()


def _math_verify_in_a_worker(conn) -> None:
    from rlvr.verifiers.math import MathVerifier

    verifier = MathVerifier()
    try:
        outcome = verifier.pool.run_batch([("1/2", "\\frac{2}{4}", None)])[0]  # math-verify runs in a worker
        conn.send((outcome.status, outcome.detail))
    finally:
        verifier.close()


def test_the_sampler_process_can_start_the_verifiers_worker_processes():
    # math, smt, reasoning-gym and rubric checks run in worker processes (workers.py); a daemonic
    # sampler process could not start them, and failed the run on the first answer that needed one
    here, there = multiprocessing.get_context("spawn").Pipe()
    process = start_sampler_process(_math_verify_in_a_worker, (there,))
    try:
        while not here.poll(0.5):
            assert process.is_alive(), f"the sampler process died (exit code {process.exitcode})"
        status, detail = here.recv()
        assert status == "ok", detail
    finally:
        process.join(timeout=30)
    assert process.exitcode == 0


def test_an_async_run_resumes_from_its_checkpoint_and_samples_the_lost_batch_again(base_model_dir, tmp_path):
    sets = [f"model.name={base_model_dir}", *SMALL, "task.num_eval=4", "train.eval_samples=1",
            "rollout.max_staleness=1", "train.save_every=1"]  # fmt: skip
    train(load_config(None, [*sets, "train.steps=2"]), tmp_path, progress=False)  # batch 2 was in flight
    resumed = train(load_config(None, [*sets, "train.steps=3"]), tmp_path, resume=True, progress=False)
    assert [s["to_step"] for s in resumed["segments"]] == [2, 3]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = {row["step"]: row for row in rows if "reward" in row}
    assert sorted(steps) == [1, 2, 3]
    assert steps[2]["rollout/staleness_max"] == 1  # asked for before the first update
    assert steps[3]["rollout/policy_version"] == 2 and steps[3]["rollout/staleness_max"] == 0  # sampled again, fresh


def test_a_weight_sync_packs_every_dtype_and_shape_and_unpacks_the_same_tensors():
    state = {
        "odd": torch.randn(3, 5),  # 60 bytes: padded to the next multiple of ALIGN
        "half": torch.randn(7).to(torch.bfloat16),  # 14 bytes, and the next tensor must still align
        "scalar": torch.tensor(2.5, dtype=torch.float64),
        "count": torch.arange(4, dtype=torch.int64).reshape(2, 2),
        "strided": torch.randn(4, 6).t(),  # not contiguous
    }
    spec, flat = pack_state(state)
    assert flat.dtype == np.uint8 and flat.size % ALIGN == 0
    got = unpack_state(spec, bytearray(flat.tobytes()))
    assert list(got) == list(state)
    for name, tensor in state.items():
        assert got[name].dtype == tensor.dtype and got[name].shape == tensor.shape
        assert torch.equal(got[name], tensor), name
    with pytest.raises(ValueError, match="does not match its spec"):
        unpack_state(spec, bytearray(flat.size + ALIGN))


def test_the_sampler_process_samples_the_first_batch_before_the_first_step(base_model_dir, tmp_path):
    # the process starts sampling when the run is built, so its start and first batch overlap the
    # base model's evaluation instead of the first step's wait
    trainer = _trainer(base_model_dir, tmp_path, "rollout.max_staleness=1")
    try:
        process = trainer.context.sampler
        assert isinstance(process, RolloutProcess) and process.requested == 2  # batches 0 and 1 asked for
        assert process.conn.poll(120), "no batch arrived before the first step asked for one"
        metrics = trainer.step(0)
        assert metrics["rollout/policy_version"] == 0 and metrics["rollout/staleness_max"] == 0
    finally:
        trainer.close()
    # closed: the process is gone and no thread of the run is left to run into the interpreter's exit
    assert not process.process.is_alive() and not process.writer.is_alive()


def test_no_thread_of_the_run_keeps_the_trainer_s_side_alive(base_model_dir, tmp_path):
    # an object whose last reference went on the writer thread was freed there, and freeing its
    # tensors while the interpreter shut down aborted the process; so the thread holds none: once
    # the run drops its side, the side is freed at once (here), and its finalizer ends the process
    trainer = _trainer(base_model_dir, tmp_path, "rollout.max_staleness=1")
    side = trainer.context.sampler
    assert isinstance(side, RolloutProcess) and side.writer.is_alive()
    alive, process, writer = weakref.ref(side), side.process, side.writer
    del side
    trainer.context.sampler = None
    gc.collect()
    assert alive() is None, gc.get_referrers(alive())
    assert not process.is_alive() and not writer.is_alive()
    trainer.close()
