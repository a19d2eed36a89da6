"""The task registry: every built-in task is a record, and config validation reads the records."""

import subprocess
import sys
from types import SimpleNamespace

import pytest

from rlvr.config import EVAL_FIELDS, ConfigError, eval_fields, load_config
from rlvr.tasks import registry
from rlvr.tasks.registry import Task, UnknownTaskError, get_task, load_heldout, load_task, step_metrics, task_names

BUILT_IN = ["arith", "jsonl", "hf", "funcsynth", "reasoning_gym", "verifiers", "proofs"]


def test_the_built_in_tasks_are_registered_with_their_row_types():
    assert task_names() == BUILT_IN
    row_types = {name: get_task(name).row_type for name in BUILT_IN}
    assert row_types == {"arith": "math", "jsonl": None, "hf": None, "funcsynth": "python",
                         "reasoning_gym": "reasoning_gym", "verifiers": "verifiers", "proofs": "coq"}  # fmt: skip
    assert [name for name in BUILT_IN if get_task(name).reasoning_checker] == ["arith"]
    assert all(get_task(name).heldout for name in BUILT_IN)  # each says what its held-out split is


def test_an_unknown_task_is_refused_with_the_registered_names():
    with pytest.raises(UnknownTaskError, match="registered tasks: arith, jsonl, hf"):
        get_task("gsm8k")
    with pytest.raises(ConfigError) as err:
        load_config(None, ["task.name=nope"])
    assert str(err.value) == f"task.name must be one of {', '.join(BUILT_IN)} (got 'nope')"


def test_the_cli_refuses_an_unknown_task_in_one_line_with_exit_2(cli):
    done = cli("train", "--set", "task.name=nope")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"rlvr: error: task.name must be one of {', '.join(BUILT_IN)} (got 'nope')"
    ]


def _toy(section):
    return [], []


def _seeded(cfg):
    return None if cfg.task.data_seed else "toy needs task.data_seed"


def test_a_registered_task_is_a_valid_task_name_and_its_checks_run(monkeypatch):
    needs_seed = Task("toy", _toy, heldout="none", checks=(_seeded,))
    monkeypatch.setitem(registry._TASKS, "toy", needs_seed)
    with pytest.raises(ConfigError, match="^toy needs task.data_seed$"):
        load_config(None, ["task.name=toy"])
    cfg = load_config(None, ["task.name=toy", "task.data_seed=3"])
    assert cfg.task.name == "toy" and load_task(cfg.task) == ([], [])


def test_a_task_s_own_fields_are_refused_with_another_task():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["task.vf_env=gsm8k"])
    assert str(err.value) == (
        "task.vf_env / task.vf_args / task.vf_path apply only with task.name=verifiers (got task.name=arith)"
    )


def test_checks_that_read_a_task_s_traits():
    with pytest.raises(ConfigError, match="needs task.name=arith, the task with a reasoning checker"):
        load_config(None, ["reward.reasoning_weight=1", "task.name=funcsynth"])
    with pytest.raises(ConfigError, match=r"task 'reasoning_gym' has reasoning_gym rows; use it with a math task"):
        load_config(None, ["reward.fidelity=lenient", "task.name=reasoning_gym", "task.rg_dataset=chain_sum"])
    with pytest.raises(ConfigError, match=r"task.min_operand must be in \[0, 9\] for task.digits=1"):
        load_config(None, ["task.min_operand=10"])
    load_config(None, ["task.min_operand=10", "task.name=funcsynth"])  # an arith setting, unread by funcsynth


def test_arith_step_metrics_count_self_checks_and_other_tasks_have_none():
    texts = [
        "<think>1+2=3!2+1=3</think><answer>3</answer>",  # checked, right
        "<think>1+2=4!2+1=3#1+2=3</think><answer>3</answer>",  # checked and redone, right
        "<think>1+2=4</think><answer>4</answer>",  # unchecked, wrong
    ]
    scored = [SimpleNamespace(correct=c) for c in (True, True, False)]
    metrics = step_metrics("arith", texts, scored)
    assert metrics == {
        "selfcheck/rate": 2 / 3,
        "selfcheck/redo_rate": 1 / 3,
        "selfcheck/accuracy_checked": 1.0,  # both checked ones are right
        "selfcheck/accuracy_unchecked": 0.0,
    }
    assert step_metrics("funcsynth", texts, scored) == {}


def test_the_held_out_split_alone_is_the_one_training_holds_out():
    cfg = load_config(None, ["task.num_train=20", "task.num_eval=7"])
    assert load_heldout(cfg.task) == load_task(cfg.task)[1]
    funcsynth = load_config(None, ["task.name=funcsynth", "task.num_train=20", "task.num_eval=7"])
    assert load_heldout(funcsynth.task) == load_task(funcsynth.task)[1]


def test_eval_fields_are_the_task_s_held_out_fields_and_the_shared_ones():
    assert eval_fields("arith") == EVAL_FIELDS
    assert EVAL_FIELDS[:5] == ("task.operands", "task.digits", "task.max_value", "task.min_operand", "task.data_seed")
    assert eval_fields("jsonl")[:2] == ("task.train_path", "task.eval_path")
    assert "task.operands" not in eval_fields("funcsynth") and "task.data_seed" in eval_fields("funcsynth")


def test_naming_tasks_loads_neither_torch_nor_a_task_s_modules():
    code = "import sys, rlvr.config; assert not {'torch', 'rlvr.tasks.arith'} & set(sys.modules), sorted(sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]
