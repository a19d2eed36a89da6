"""`rlvr compare` run again with the same --out continues, and evaluates each base once per seed:
real tiny runs, counted at the trainer's own calls (nothing of the model is mocked)."""

from __future__ import annotations

import json

import pytest

from rlvr import rundir
from rlvr.config import load_config
from rlvr.engine import loop
from rlvr.engine.loop import Trainer, train
from rlvr.rollout.heldout import HeldoutResult
from rlvr.studies import compare

SETS = ["train.threads=1", "task.num_eval=4", "train.eval_samples=2", "task.num_train=40"]
SIZE = {"n": 2, "ks": [1, 2], "num_queries": 2, "progress": False}


class Counter:
    """Wraps a function: counts its calls and passes them on, optionally raising at call `stop_at`."""

    def __init__(self, function, stop_at: int | None = None):
        self.function, self.stop_at, self.calls = function, stop_at, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return self.function(*args, **kwargs)


def _compare(out, steps=8):
    return compare.compare_algorithms(
        ["grpo", "dpo"], seeds=[0, 1], steps=steps, config="configs/smoke.yaml", overrides=SETS, out=out, **SIZE
    )


def test_a_base_is_evaluated_once_per_seed_and_shared(tmp_path, monkeypatch):
    evaluations = Counter(loop.evaluate_heldout)
    monkeypatch.setattr(loop, "evaluate_heldout", evaluations)
    _compare(tmp_path / "cmp")
    # 4 runs: one base evaluation per seed (2), not per run (4), and each run's final one (4)
    assert evaluations.calls == 2 + 4
    for seed in (0, 1):
        shared = json.loads((tmp_path / "cmp" / f"base-eval-seed{seed}.json").read_text())["base"]
        for algorithm in ("grpo", "dpo"):
            assert rundir.read_summary(tmp_path / "cmp" / f"{algorithm}-seed{seed}")["base"] == shared
    # a run that evaluates its own base (DPO, seed 1, alone) gets exactly the shared one: the
    # evaluation depends on the base, split, sampling and seed, not on the algorithm
    alone = train(
        load_config("configs/smoke.yaml", [*SETS, "algo.algorithm=dpo", "train.seed=1", "train.steps=1"]),
        tmp_path / "alone",
        progress=False,
    )
    assert alone["base"] == json.loads((tmp_path / "cmp" / "base-eval-seed1.json").read_text())["base"]
    assert evaluations.calls == 2 + 4 + 2


def test_an_interrupted_comparison_continues_where_it_stopped(tmp_path, monkeypatch):
    out = tmp_path / "cmp"
    # stop in the 6th step of the third run (DPO, seed 0): the first two are finished, the third
    # has its checkpoint after step 5 (train.save_every=1), the fourth never started
    steps = Counter(Trainer.step, stop_at=8 + 8 + 6)
    monkeypatch.setattr(Trainer, "step", lambda trainer, *args: steps(trainer, *args))
    with pytest.raises(KeyboardInterrupt):
        _compare(out)
    monkeypatch.undo()
    finished = {name: (out / name / "summary.json").read_text() for name in ("grpo-seed0", "grpo-seed1")}
    assert not (out / "dpo-seed0" / "summary.json").exists() and not (out / "dpo-seed1").exists()

    trainings, evaluations = Counter(compare.run), Counter(loop.evaluate_heldout)
    monkeypatch.setattr(compare, "run", trainings)
    monkeypatch.setattr(loop, "evaluate_heldout", evaluations)
    report = _compare(out)
    assert trainings.calls == 2  # the interrupted run and the one never started; the finished two are kept
    assert evaluations.calls == 2  # their final evaluations: the bases were evaluated by the first call
    assert {name: (out / name / "summary.json").read_text() for name in finished} == finished
    resumed = rundir.read_summary(out / "dpo-seed0")
    assert [s["from_step"] for s in resumed["segments"]] == [0, 5] and resumed["steps"] == 8
    assert [row["step"] for row in rundir.read_metrics(out / "dpo-seed0") if "reward" in row] == list(range(1, 9))
    assert report["algorithms"]["dpo"]["seeds"] == [0, 1] and report["base"]["pass@k"]["mean"][0] is not None

    # a third call finds everything done: no training, no evaluation, the same report
    assert _compare(out) == report and trainings.calls == 2 and evaluations.calls == 2


def test_a_run_of_other_settings_is_refused_not_resumed(tmp_path, cli):
    out = tmp_path / "cmp"
    run = out / "grpo-seed0"
    rundir_cfg = load_config("configs/smoke.yaml", [*SETS, "algo.algorithm=grpo", "train.seed=0", "train.steps=8"])
    run.mkdir(parents=True)
    rundir.write_config(run, rundir_cfg.to_dict())
    args = ["compare", "--algorithms", "grpo,dpo", "--config", "configs/smoke.yaml", "--out", str(out)]
    sets = [item for s in SETS for item in ("--set", s)]
    done = cli(*args, *sets, "--steps", "9")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"rlvr: error: {run} holds a run of other settings (train.steps: 8 there, 9 now); "
        "rerun with the same flags to continue it, or pick another --out"
    )
    assert sorted(p.name for p in out.iterdir()) == ["grpo-seed0"]  # nothing else was started


def test_a_held_out_result_reads_back_as_written():
    result = HeldoutResult(0.5, 0.25, 4, 8, 1, gold_pass_at_1=0.4, hacking_rate=0.1, pass_at_k={2: 0.7, 4: 0.9})
    assert HeldoutResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    plain = HeldoutResult(0.5, 0.25, 4, 8, 0, tool_use_rate=0.3)
    assert HeldoutResult.from_dict(plain.to_dict()) == plain
