"""Python verifier jobs as Ray tasks on a local 2-CPU Ray cluster, in the real bubblewrap sandbox;
a Ray worker killed mid-task has its chunk rerun elsewhere, and every completion is judged once."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

import rlvr
from rlvr.integrations.ray_verify import RayVerifier, RayVerifiers
from rlvr.types import Query, Verdict
from rlvr.verifiers import RewardFunction

ray = pytest.importorskip("ray", reason="the Ray backend is the 'ray' extra: pip install -e '.[ray]'")
psutil = pytest.importorskip("psutil")

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

SLOW_ADD = "import time\n\ndef add(a, b):\n    time.sleep(1.5)\n    return a {op} b\n"
"""Each job sleeps 1.5 s inside the sandbox: long enough to find and kill the worker running it."""


@pytest.fixture(scope="module")
def ray_cluster():
    source_root = str(Path(rlvr.__file__).parents[1])  # workers import this tree's rlvr, as the driver does
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": source_root, "OMP_NUM_THREADS": "1"}},
    )
    yield
    ray.shutdown()


def _items(n: int) -> tuple[list[tuple[Query, str]], list[bool]]:
    """n python completions; every third one is wrong (returns a - b)."""
    items, correct = [], []
    for i in range(n):
        query = Query(
            f"q{i}",
            "write add",
            {"type": "python", "entry_point": "add", "tests": [{"args": [i, 2], "expected": i + 2}]},
        )
        right = i % 3 != 2
        items.append((query, f"```python\n{SLOW_ADD.format(op='+' if right else '-')}```"))
        correct.append(right)
    return items, correct


def _running_verify_tasks() -> list[psutil.Process]:
    """Ray names a worker process after the task it is running ("ray::verify_chunk")."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if cmdline.startswith("ray::verify_chunk"):
            found.append(process)
    return found


def _verify_killing_one_worker(verifier: RayVerifier, items: list) -> tuple[list, int]:
    """verify_batch in a thread; meanwhile SIGKILL the first Ray worker seen running a chunk."""
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("results", verifier.verify_batch(items)))
    thread.start()
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline:
        running = _running_verify_tasks()
        if running:
            killed = running[0].pid
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    thread.join(timeout=180)
    assert killed is not None, "no Ray worker was seen running a verify task"
    return outcome["results"], killed


def test_killed_worker_is_retried_and_nothing_is_lost_or_counted_twice(ray_cluster):
    items, correct = _items(8)
    verifier = RayVerifier("python", chunk_size=2, max_retries=3)
    results, killed = _verify_killing_one_worker(verifier, items)
    assert len(results) == len(items)
    assert [r.verdict is Verdict.PASS for r in results] == correct  # each in its place, judged once
    assert sum(r.verdict is Verdict.PASS for r in results) == correct.count(True)
    assert all(r.verdict in (Verdict.PASS, Verdict.FAIL) for r in results), [r.detail for r in results]
    assert None not in verifier.last_worker_pids and killed not in verifier.last_worker_pids  # rerun elsewhere


def test_reward_function_on_ray_matches_local_verdicts(ray_cluster):
    math_rows = [
        (Query("m1", "2+2=", {"type": "math", "answer": "4"}), "<answer>4</answer>"),
        (Query("m2", "half", {"type": "math", "answer": "1/2"}), "<answer>0.5</answer>"),
        (Query("m3", "bad", {"type": "math", "answer": ""}), "<answer>1</answer>"),
    ]
    python_rows = _items(3)[0]
    items = [*math_rows, *python_rows]
    on_ray = RewardFunction(verifier_for=RayVerifiers(chunk_size=2)).score_batch(items)
    local = RewardFunction().score_batch(items)
    assert [s.reward for s in on_ray] == [s.reward for s in local] == [1.0, 1.0, None, 1.0, 1.0, 0.0]


def test_chunk_whose_retries_are_used_up_is_unscorable_not_wrong(ray_cluster):
    items, correct = _items(4)
    verifier = RayVerifier("python", chunk_size=2, max_retries=0)
    results, _ = _verify_killing_one_worker(verifier, items)
    lost = [i for i, pid in enumerate(verifier.last_worker_pids) if pid is None]
    assert len(lost) == 1  # the killed chunk, with no retry left
    for index, (result, right) in enumerate(zip(results, correct)):
        if index // 2 in lost:
            assert result.verdict is Verdict.ERROR and not result.scorable and "Ray worker lost" in result.detail
        else:
            assert (result.verdict is Verdict.PASS) == right


def test_training_step_verifies_on_ray_with_the_backend_setting(ray_cluster, base_model_dir, tmp_path):
    from rlvr.config import load_config
    from rlvr.engine.loop import Trainer

    cfg = load_config(
        None,
        [
            f"model.name={base_model_dir}",
            "train.batch_queries=2",
            "rollout.group_size=4",
            "task.num_train=20",
            "task.num_eval=4",
            "rollout.max_new_tokens=24",
            "reward.backend=ray",
        ],
    )
    trainer = Trainer(cfg, tmp_path)
    metrics = trainer.step(0)
    verifier = trainer.reward_fn._verifier_for("math")
    assert isinstance(verifier, RayVerifier)
    pids = verifier.last_worker_pids
    assert pids and all(pid is not None and pid != os.getpid() for pid in pids)  # judged in Ray workers
    assert metrics["verifier/unscorable"] == 0 and 0.0 <= metrics["reward"] <= 1.0
