"""VerifiersRubricVerifier: a `verifiers` environment's own rubric, in real worker processes.

The environment (tests/verifiers/vf_envs.py) pays exact 1.0 + tagged 0.2, so the rubric's range is
[0, 1.2] and its reward r scores r / 1.2."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("verifiers")

from rlvr.types import ErrorClass, Query, Verdict  # noqa: E402
from rlvr.verifiers import _vf_worker  # noqa: E402
from rlvr.verifiers.registry import get_verifier  # noqa: E402
from rlvr.verifiers.vf_rubric import VerifiersRubricVerifier  # noqa: E402

from .vf_envs import ENV_NAME, write_env  # noqa: E402


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_env(tmp_path_factory.mktemp("vf_env"))


@pytest.fixture(scope="module")
def verifier() -> Iterator[VerifiersRubricVerifier]:
    with VerifiersRubricVerifier(pool_size=1, kill_after_s=5) as v:
        yield v


def row_query(env_dir: Path, a: int = 1, *, env: str = ENV_NAME, **row_changes) -> Query:
    """The row task.name=verifiers makes of "What is a + (a+1)?" (rlvr.tasks.vf_env)."""
    question = f"What is {a} + {a + 1}?"
    prompt = [{"role": "system", "content": "Answer with the number inside <answer></answer>."},
              {"role": "user", "content": question}]  # fmt: skip
    row = {"question": question, "answer": str(2 * a + 1), "info": {"a": a}, "example_id": a, "prompt": prompt}
    row.update(row_changes)
    criteria = {"type": "verifiers", "env": env, "args": {}, "path": str(env_dir), "row": row}
    return Query(id=f"vf-{env}-train-{a}", prompt=question, verifier=criteria)


def rubric_reward(env_dir: Path, query: Query, completion: str) -> float:
    """The reward verifiers itself gives: the environment's own init_state, the completion as its
    assistant message, its rubric's score_rollout; in this process, on a fresh environment."""
    import verifiers as vf

    _vf_worker.environment(ENV_NAME, {}, str(env_dir))  # puts env_dir on sys.path, keeps signal handlers
    env = vf.load_environment(ENV_NAME)

    async def score() -> float:
        state = await env.init_state(query.verifier["row"], client=vf.ClientConfig(), model="m")
        state["completion"] = [vf.AssistantMessage(content=completion)]
        await env.rubric.score_rollout(state)
        return state["reward"]

    return asyncio.run(score())


def test_scores_are_the_rubrics_reward_over_its_range(verifier, env_dir):
    query = row_query(env_dir, 1)  # 1 + 2 = 3
    cases = [
        ("<think>1 + 2</think><answer>3</answer>", Verdict.PASS, 1.0),  # (1.0 + 0.2) / 1.2
        ("<answer>4</answer>", Verdict.PARTIAL, 0.2 / 1.2),  # only the tag pays: 0.2 / 1.2
        ("3", Verdict.FAIL, 0.0),  # no <answer>: XMLParser finds none, and no tag
    ]
    results = verifier.verify_batch([(query, completion) for completion, _, _ in cases])
    for (completion, verdict, score), result in zip(cases, results, strict=True):
        assert (result.verdict, result.score) == (verdict, pytest.approx(score)), result.detail
        assert result.score == pytest.approx(rubric_reward(env_dir, query, completion) / 1.2)
    assert results[0].detail == "reward 1.2 of 1.2 (exact=1, tagged=1)"
    assert results[1].error_class is ErrorClass.WRONG_ANSWER and "expected '3'" in results[1].detail


def test_a_reward_function_that_raises_or_hangs_fails_that_completion_only(verifier, env_dir):
    query = row_query(env_dir, 2)
    raised, hung, after = verifier.verify_batch(
        [(query, "<answer>raise</answer>"), (query, "<answer>hang</answer>"), (query, "<answer>5</answer>")]
    )
    assert (raised.verdict, raised.error_class) == (Verdict.FAIL, ErrorClass.RUNTIME_ERROR)
    assert "exact: ZeroDivisionError: asked to raise" in raised.detail
    assert (hung.verdict, hung.error_class) == (Verdict.FAIL, ErrorClass.TIMEOUT)
    assert after.verdict is Verdict.PASS  # on a fresh worker, which loaded the environment again


@pytest.mark.parametrize(
    "completion, message",
    [
        ("<answer>oversize</answer>", "gave 5.2, outside its range [0, 1.2]"),
        ("<answer>nan</answer>", "reward is nan"),
        ("<answer>none</answer>", "exact returned None"),  # verifiers would log it and pay 0
    ],
)
def test_a_reward_that_is_not_a_number_in_range_is_an_error_naming_the_row(verifier, env_dir, completion, message):
    result = verifier.verify(row_query(env_dir, 3), completion)
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.INFRASTRUCTURE)
    assert f"query 'vf-{ENV_NAME}-train-3'" in result.detail and message in result.detail


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"prompt": None}, "verifiers cannot read this row"),
        ({"task": "arith"}, "Plain string task routes are no longer supported"),  # verifiers' own refusal
    ],
)
def test_a_row_the_rubric_cannot_read_is_an_error(verifier, env_dir, changes, message):
    result = verifier.verify(row_query(env_dir, 4, **changes), "<answer>9</answer>")
    assert result.verdict is Verdict.ERROR and message in result.detail, result.detail


def test_rows_without_criteria_are_errors_before_any_worker(env_dir):
    bare = VerifiersRubricVerifier()
    query = row_query(env_dir)
    del query.verifier["row"]
    result = bare.verify(query, "<answer>3</answer>")
    assert result.verdict is Verdict.ERROR and '"row" must be' in result.detail
    assert not bare.pools  # judged in this process


def test_an_environment_that_does_not_load_is_an_error_for_its_rows(verifier, env_dir):
    result = verifier.verify(row_query(env_dir, env="no_such_env"), "<answer>3</answer>")
    assert result.verdict is Verdict.ERROR
    assert "task.vf_env='no_such_env' did not load" in result.detail and "vf-no_such_env-train-1" in result.detail


def test_loading_an_environment_keeps_this_process_signal_handlers(env_dir):
    """Environment.__init__ installs SIGINT/SIGTERM handlers; the worker pool ignores Ctrl-C in its
    workers (the trainer decides), so a load must leave them as they were."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    env = _vf_worker.environment(ENV_NAME, {"num_train": 3}, str(env_dir))
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert _vf_worker.reward_range(env.rubric) == (0.0, 1.2)


def test_the_registry_builds_it_for_verifiers_rows():
    assert isinstance(get_verifier("verifiers"), VerifiersRubricVerifier)


def test_the_worker_module_does_not_import_torch():
    """Every worker imports it; torch (through rlvr.types) would add seconds and hundreds of MB to each."""
    script = "import sys, rlvr.verifiers._vf_worker;print([m for m in ('torch', 'rlvr.types') if m in sys.modules])"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
