"""Generated Coq lemmas: distinct, split by statement, and each closed by its family's proof in real Coq."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from rlvr.tasks.proofs import FAMILIES, make_queries, reference_proof
from rlvr.types import Verdict
from rlvr.verifiers.coq import CoqVerifier


def test_lemmas_are_distinct_even_over_families_and_never_shared_by_the_splits():
    train = make_queries(250, split="train", seed=0)
    heldout = make_queries(50, split="heldout", seed=0)
    assert len({q.prompt for q in train}) == 250 and len({q.id for q in train}) == 250
    assert not {q.prompt for q in train} & {q.prompt for q in heldout}
    assert Counter(q.meta["family"] for q in train) == dict.fromkeys(FAMILIES, 50)
    assert make_queries(250, split="train", seed=0) == train
    assert make_queries(250, split="train", seed=1) != train
    for query in train[:20]:
        assert query.verifier["statement"] == f"Theorem lemma_{query.id.split('-')[-1]} : {query.prompt}."


def test_asking_beyond_a_family_names_it():
    with pytest.raises(ValueError, match="family 'app_nil'"):
        make_queries(500, split="train", seed=0, families=("app_nil",))
    with pytest.raises(ValueError, match="unknown lemma families"):
        make_queries(5, split="train", seed=0, families=("geometry",))


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed (setup.sh installs it)")
def test_each_family_is_closed_by_its_proof_and_not_by_the_other_strategy():
    """The reference proofs pass in real Coq; swapping computation and induction between the
    add_left and add_right families fails, so the family decides the proof."""
    rows = make_queries(20, split="train", seed=3) + make_queries(10, split="heldout", seed=3)
    verifier = CoqVerifier()
    try:
        results = verifier.verify_batch([(q, f"<answer>{reference_proof(q)}</answer>") for q in rows])
        assert [r.verdict for r in results] == [Verdict.PASS] * len(rows), [r.detail for r in results]
        by_family = {q.meta["family"]: q for q in rows}
        swapped = [
            (by_family["add_right"], reference_proof(by_family["add_left"])),
            (by_family["app_nil"], "intros l. reflexivity."),
        ]
        for query, proof in swapped:
            assert verifier.verify(query, f"<answer>{proof}</answer>").verdict is Verdict.FAIL
    finally:
        verifier.close()


def test_task_proofs_loads_through_the_config_and_names_what_runs_out():
    from rlvr.config import load_config
    from rlvr.tasks import load_task
    from rlvr.tasks.dataset import DatasetError

    cfg = load_config(overrides=["task.name=proofs", "task.num_train=100", "task.num_eval=20"])
    train, heldout = load_task(cfg.task)
    assert (len(train), len(heldout)) == (100, 20) and train[0].verifier["type"] == "coq"
    with pytest.raises(DatasetError, match=r"family .*task.num_train / num_eval"):
        load_task(load_config(overrides=["task.name=proofs"]).task)  # the default 2000 is too many


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed (setup.sh installs it)")
def test_the_tiny_model_trains_on_proofs_with_every_completion_checked_by_coq(train_updates):
    updates = train_updates("task.name=proofs", "task.num_train=20", "task.num_eval=5", max_new_tokens=48)
    assert [m["step"] for m in updates] == [1, 2] and all(m["verifier/unscorable"] == 0 for m in updates)


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed (setup.sh installs it)")
def test_rlvr_train_ends_the_coq_session_it_holds(base_model_dir, tmp_path, cli):
    """The coq verifier's session runs as a sandbox uid; `rlvr train` closes the registry's
    verifiers when it ends, so no session outlives the command (also when run in-process)."""
    from rlvr.verifiers.registry import get_verifier
    from tests.sandbox.leaks import sandbox_uid_processes

    before = set(sandbox_uid_processes())
    query = make_queries(1, split="train", seed=0, families=("add_left",))[0]
    assert get_verifier("coq").verify(query, f"<answer>{reference_proof(query)}</answer>").verdict is Verdict.PASS
    assert set(sandbox_uid_processes()) - before  # the session is up
    run = cli(
        "train", "--quiet", "--out", str(tmp_path / "run"), "--set", f"model.name={base_model_dir}",
        "--set", "task.num_train=10", "--set", "task.num_eval=4", "--set", "train.eval_samples=1",
        "--set", "train.steps=1", "--set", "train.batch_queries=2", "--set", "rollout.group_size=2",
        "--set", "train.threads=1",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert not set(sandbox_uid_processes()) - before
