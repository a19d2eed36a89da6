"""Tasks by name: what ``task.name`` selects. Each task registers one ``Task`` record with everything
the rest of rlvr needs to know about it: how its queries load, what its settings must satisfy, the
verifier type of its rows, its reasoning checker (CoT-pass@k), its extra step metrics and its
held-out split. The engine, the config and the CLI look a task up here and never name one.

Registered: arith, jsonl, hf, funcsynth, reasoning_gym, verifiers (the adapter for environments
with the verifiers contract) and proofs. The tool task is not a task of its own: it is arith with
``rollout.tools=python`` (configs/arith-tool.yaml); any task's rollouts may call the tool.

A record's functions import their module when first called, as the verifier registry's factories
do, so naming a task (config validation, ``rlvr train --help``) loads neither torch nor a task's
dependencies. They take config sections duck-typed (the task section's ``.num_eval``, a run
config's ``.task`` and ``.reward``): tasks/ sits below config/, which validates against this
registry, and never imports it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rlvr.errors import UserError
from rlvr.eval.cot import ReasoningChecker, check_arith_reasoning

if TYPE_CHECKING:
    from rlvr.types import Query

Split = tuple[list["Query"], list["Query"]]
Check = Callable[[Any], "str | None"]
"""fn(run config) -> what is wrong with it for this task, or None."""
StepMetrics = Callable[[Sequence[str], Sequence[Any]], dict[str, float]]
"""fn(the step's completions, their scores (each with `.correct`)) -> metrics to log."""


class Package(NamedTuple):
    """An optional package a task needs: its import name, its name on PyPI, the extra installing it."""

    module: str
    name: str
    extra: str


@dataclass(frozen=True)
class Task:
    name: str
    load: Callable[[Any], Split]
    """task section -> (train queries, held-out queries); a ValueError says what to fix."""
    heldout: str
    """What the held-out split is, in one sentence."""
    load_heldout: Callable[[Any], list[Query]] | None = None
    """task section -> the held-out queries alone, where they need no training queries; None: `load`'s."""
    heldout_fields: tuple[str, ...] = ()
    """Task fields that decide the held-out split besides data_seed (`rlvr eval --set` takes them)."""
    checks: tuple[Check, ...] = ()
    """What a run config must satisfy for this task; run only when it is the selected task."""
    exclusive_fields: tuple[str, ...] = ()
    """Task fields only this task reads: set with another task, they are refused."""
    needs: Package | None = None
    """The optional package it loads its data with, if any."""
    row_type: str | None = None
    """The verifier type of every row it makes (a verifiers/registry.py name); None: each row brings its own."""
    reasoning_checker: ReasoningChecker | None = None
    """(query, completion) -> is every reasoning step right (CoT-pass@k, reward.reasoning_weight); None: no checker."""
    step_metrics: StepMetrics | None = None
    """Extra metrics of each training step, e.g. arith's self-check marks."""
    answer_kind: Callable[[str], str] | None = None
    """completion -> which of `answer_kinds` its answer is (warm-up reports)."""
    answer_kinds: tuple[str, ...] = ()
    reference_solution: Callable[[Query], str] | None = None
    """query -> a right worked completion in the task's format (the supervised controls of a study,
    studies/supervised.py); None: the task has none."""


class UnknownTaskError(UserError):
    """A task name nobody registered; the message lists the registered ones."""

    def __init__(self, name: object) -> None:
        super().__init__(f"unknown task {name!r}; registered tasks: {', '.join(task_names())}")
        self.name = name


_TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    if task.name in _TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    _TASKS[task.name] = task
    return task


def task_names() -> list[str]:
    """Registered task names, in the order they were registered."""
    return list(_TASKS)


def registered() -> list[Task]:
    return list(_TASKS.values())


def get_task(name: str) -> Task:
    if name not in _TASKS:
        raise UnknownTaskError(name)
    return _TASKS[name]


def load_task(section: Any) -> Split:
    """(train queries, held-out queries) of the task section's task."""
    return _as_dataset_error(lambda: get_task(section.name).load(section))


def load_heldout(section: Any) -> list[Query]:
    """The held-out queries of the task section's task, without the training ones where it can."""
    task = get_task(section.name)
    if task.load_heldout is None:
        return _as_dataset_error(lambda: task.load(section))[1]
    return _as_dataset_error(lambda: task.load_heldout(section))


def _as_dataset_error(load: Callable[[], Any]) -> Any:
    from rlvr.tasks.dataset import DatasetError

    try:
        return load()
    except ValueError as err:  # DatasetError and arith's "not enough queries" both say what to fix
        raise DatasetError(str(err)) from None


def reasoning_checker(name: str) -> ReasoningChecker | None:
    """The reasoning checker of task `name`, or None when it has none or is not a task."""
    task = _TASKS.get(name)
    return task.reasoning_checker if task else None


def step_metrics(name: str, texts: Sequence[str], scored: Sequence[Any]) -> dict[str, float]:
    """Task `name`'s extra metrics of a step's completions; {} for a task without any."""
    hook = get_task(name).step_metrics
    return hook(texts, scored) if hook else {}


# --------------------------------------------------------------------------- the built-in tasks


def _arith(section: Any) -> Split:
    from rlvr.tasks.arith import make_mixed_queries, parse_mix, spec_of

    try:
        mix = parse_mix(section.train_mix) if section.train_mix else {section.operands: section.num_train}
    except ValueError as err:
        raise ValueError(f"task.train_mix: {err}") from None
    train = make_mixed_queries(mix, split="train", seed=section.data_seed, spec=spec_of(section))
    return train, _arith_heldout(section)


def _arith_heldout(section: Any) -> list[Query]:
    from rlvr.tasks.arith import make_queries, spec_of

    return make_queries(section.num_eval, split="heldout", seed=section.data_seed, spec=spec_of(section))


def _arith_min_operand(cfg: Any) -> str | None:
    t = cfg.task
    if not 0 <= t.min_operand < 10**t.digits:
        return f"task.min_operand must be in [0, {10**t.digits - 1}] for task.digits={t.digits} (got {t.min_operand})"
    return None


def _arith_step_metrics(texts: Sequence[str], scored: Sequence[Any]) -> dict[str, float]:
    from rlvr.tasks.arith import self_check_metrics

    return self_check_metrics(texts, scored)


def _arith_solution(query: Query) -> str:
    from rlvr.tasks.arith import worked_solution

    return worked_solution(query, rng=random.Random(0))  # error_rate 0: every step right, whatever rng draws


def _jsonl(section: Any) -> Split:
    from rlvr.tasks.dataset import load_jsonl

    return load_jsonl(section.train_path), load_jsonl(section.eval_path)


def _jsonl_paths(cfg: Any) -> str | None:
    if not (cfg.task.train_path and cfg.task.eval_path):
        return "task.name=jsonl needs task.train_path and task.eval_path (JSONL files of dataset rows)"
    return None


def _hf(section: Any) -> Split:
    from rlvr.tasks.hf import ColumnMap, load_hf_task  # imports `datasets` only here

    columns = ColumnMap.for_format(
        section.hf_format,
        prompt=section.hf_prompt_column,
        answer=section.hf_answer_column,
        verifier=section.hf_verifier_column,
        id=section.hf_id_column,
    )
    return load_hf_task(section.hf_path, section.hf_split, section.hf_eval_path, section.hf_eval_split, columns)


def _hf_path(cfg: Any) -> str | None:
    if not cfg.task.hf_path:
        return "task.name=hf needs task.hf_path (a local .jsonl/.parquet/.csv file or a Hugging Face dataset directory)"
    return None


def _hf_format(cfg: Any) -> str | None:
    t = cfg.task
    if t.hf_format != "columns" and t.hf_verifier_column:
        return (
            f"task.hf_format={t.hf_format} cuts the answer out of a solution column, but task.hf_verifier_column="
            f"{t.hf_verifier_column} gives whole criteria; drop one of them (hf_format=columns reads a verifier column)"
        )
    return None


def _funcsynth(section: Any) -> Split:
    from rlvr.tasks.funcsynth import make_queries

    return make_queries(section.num_train, split="train", seed=section.data_seed), _funcsynth_heldout(section)


def _funcsynth_heldout(section: Any) -> list[Query]:
    from rlvr.tasks.funcsynth import make_queries

    return make_queries(section.num_eval, split="heldout", seed=section.data_seed)


def _funcsynth_answer_kind(completion: str) -> str:
    from rlvr.tasks.funcsynth import answer_kind

    return answer_kind(completion)


def _reasoning_gym(section: Any) -> Split:
    from rlvr.tasks.reasoning_gym import load  # imports reasoning_gym only here

    return load(
        section.rg_dataset,
        section.rg_config,
        seed=section.data_seed,
        num_train=section.num_train,
        num_eval=section.num_eval,
        partial_credit=section.rg_partial_credit,
    )


def _rg_dataset(cfg: Any) -> str | None:
    if not cfg.task.rg_dataset:
        return "task.name=reasoning_gym needs task.rg_dataset, e.g. chain_sum (docs/integrations.md lists how to see them all)"
    return None


def _verifiers(section: Any) -> Split:
    from rlvr.tasks.vf_env import load  # the environment loads in a worker process, never here

    return load(
        section.vf_env, section.vf_args, path=section.vf_path, num_train=section.num_train, num_eval=section.num_eval
    )


def _vf_env(cfg: Any) -> str | None:
    t = cfg.task
    if not t.vf_env:
        return "task.name=verifiers needs task.vf_env, the environment's id or module name (e.g. gsm8k)"
    if t.vf_path and not Path(t.vf_path).is_dir():
        return f"task.vf_path={t.vf_path} is not a directory; give the directory that holds the {t.vf_env} module"
    return None


def _proofs(section: Any) -> Split:
    from rlvr.tasks.proofs import make_queries

    return make_queries(section.num_train, split="train", seed=section.data_seed), _proofs_heldout(section)


def _proofs_heldout(section: Any) -> list[Query]:
    from rlvr.tasks.proofs import make_queries

    return make_queries(section.num_eval, split="heldout", seed=section.data_seed)


_GENERATED = "task.num_eval generated queries, disjoint from training by a hash of the prompt, seeded by task.data_seed"

register(
    Task(
        "arith",
        _arith,
        heldout=f"{_GENERATED}, each with task.operands numbers (whatever task.train_mix trains on)",
        load_heldout=_arith_heldout,
        heldout_fields=("operands", "digits", "max_value", "min_operand"),
        checks=(_arith_min_operand,),
        row_type="math",
        reasoning_checker=check_arith_reasoning,
        step_metrics=_arith_step_metrics,
        reference_solution=_arith_solution,
    )
)
register(Task("jsonl", _jsonl, heldout="the rows of task.eval_path", heldout_fields=("train_path", "eval_path"),
              checks=(_jsonl_paths,)))  # fmt: skip
register(
    Task(
        "hf",
        _hf,
        heldout="task.hf_eval_path, or the split task.hf_eval_split of task.hf_path",
        heldout_fields=(
            "hf_path",
            "hf_split",
            "hf_eval_path",
            "hf_eval_split",
            "hf_format",
            "hf_prompt_column",
            "hf_answer_column",
            "hf_verifier_column",
            "hf_id_column",
        ),  # fmt: skip
        checks=(_hf_path, _hf_format),
    )
)
register(
    Task(
        "funcsynth",
        _funcsynth,
        heldout=_GENERATED,
        load_heldout=_funcsynth_heldout,
        row_type="python",
        answer_kind=_funcsynth_answer_kind,
        answer_kinds=("formula", "lookup", "other"),
    )
)
register(
    Task(
        "reasoning_gym",
        _reasoning_gym,
        heldout="task.num_eval rows of the dataset at a seed of its own, none with a training question",
        heldout_fields=("rg_dataset", "rg_config", "rg_partial_credit"),
        checks=(_rg_dataset,),
        exclusive_fields=("rg_dataset", "rg_config", "rg_partial_credit"),
        needs=Package("reasoning_gym", "reasoning-gym", "reasoning_gym"),
        row_type="reasoning_gym",
    )
)
register(
    Task(
        "verifiers",
        _verifiers,
        heldout="at most task.num_eval rows of the environment's eval_dataset (without one: the last rows of its dataset)",
        heldout_fields=("vf_env", "vf_args", "vf_path"),
        checks=(_vf_env,),
        exclusive_fields=("vf_env", "vf_args", "vf_path"),
        needs=Package("verifiers", "verifiers", "verifiers"),
        row_type="verifiers",
    )
)
register(Task("proofs", _proofs, heldout=_GENERATED, load_heldout=_proofs_heldout, row_type="coq"))
