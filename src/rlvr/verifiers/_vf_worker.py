"""Jobs that run a `verifiers` environment inside ``WorkerPool`` processes (never in the trainer's).

An environment package exposes ``load_environment(**kwargs)``, which returns a ``vf.SingleTurnEnv``
holding a dataset (and maybe an ``eval_dataset``) and a rubric: reward functions with weights. Two
jobs use one: ``rows`` reads its datasets for rlvr.tasks.vf_env, and ``score`` scores one
completion with its rubric for rlvr.verifiers.vf_rubric. Both load the environment through
verifiers' own ``vf.load_environment(env_id, **args)``, once per process and (env, args, path).

They run here because loading an environment does more than build data: ``Environment.__init__``
installs SIGINT and SIGTERM handlers and an atexit teardown in the process that builds it, and
verifiers imports openai, anthropic and datasets (3 s, 240 MB). This worker puts its own signal
handling back after each load (the pool ignores Ctrl-C in workers; the trainer decides).

Imports verifiers and the standard library only (no ``rlvr.types``, which would pull torch into
every worker). Results are plain tuples.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib.metadata
import inspect
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # datasets' "Map: 100%" lines, per worker

from tqdm.std import TqdmDefaultWriteLock  # noqa: E402

import verifiers as vf  # noqa: E402  (after the variable above, which datasets reads on import)

# The rubric logs every reward function that raises; this worker reports them in the result instead.
logging.getLogger("verifiers").setLevel(logging.CRITICAL + 1)

# tqdm takes a multiprocessing semaphore for its first bar (datasets' map makes a bar even with
# bars off); a worker the pool kills never gives it back, and the trainer's resource tracker then
# warns of "leaked semaphore objects" at exit. This worker's bars need no lock across processes.
TqdmDefaultWriteLock.mp_lock = None


class EnvProblem(ValueError):
    """An environment that cannot be loaded or used here; the message says why and what to do."""


_ENVS: dict[str, Any] = {}
"""(env, args, path) as JSON -> the loaded environment, or the EnvProblem it raised."""

_RAISED: list[str] = []
"""Reward functions that raised during the current ``score`` job: "name: Class: message"."""

_NOT_NUMBERS: list[str] = []
"""Reward functions that returned something ``float()`` refuses during the current job (the
rubric scores those 0 too): "name returned None"."""


def environment(env_id: str, args: dict[str, Any], path: str) -> Any:
    """The single-turn environment ``vf.load_environment(env_id, **args)`` returns (cached, with
    its reward functions watched for exceptions); an EnvProblem if there is none or it does not fit."""
    key = json.dumps([env_id, args, path], sort_keys=True)
    if key not in _ENVS:
        try:
            _ENVS[key] = _load(env_id, args, path)
        except EnvProblem as problem:
            _ENVS[key] = problem
    if isinstance(_ENVS[key], EnvProblem):
        raise _ENVS[key]
    return _ENVS[key]


def _load(env_id: str, args: dict[str, Any], path: str) -> Any:
    if not hasattr(vf, "SingleTurnEnv"):
        version = importlib.metadata.version("verifiers")
        raise EnvProblem(
            f"verifiers {version} has no classic environments (vf.SingleTurnEnv); "
            "install the pinned version: .venv/bin/pip install -e '.[verifiers]'"
        )
    if path and path not in sys.path:
        sys.path.insert(0, path)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = vf.load_environment(env_id, **args)
    except Exception as error:  # verifiers wraps import and load failures in ValueError/RuntimeError
        cause = f" ({type(error.__cause__).__name__}: {error.__cause__})" if error.__cause__ else ""
        raise EnvProblem(f"task.vf_env={env_id!r} did not load: {error}{cause}") from None
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    _check_fits(env_id, env)
    _watch(env.rubric)
    return env


def _check_fits(env_id: str, env: Any) -> None:
    """Refuses what rlvr cannot score one completion at a time, with nothing but the text."""
    if not isinstance(env, vf.SingleTurnEnv):
        kind = type(env).__name__
        raise EnvProblem(
            f"environment {env_id!r} is a {kind}, not a SingleTurnEnv: rlvr trains on one prompt and one "
            "completion per row, so multi-turn, tool and grouped environments are not supported"
        )
    rubrics = list(_rubrics(env.rubric))
    if any(rubric.has_group_rewards for rubric in rubrics):
        raise EnvProblem(
            f"environment {env_id!r} has group reward functions (they score several completions together); "
            "rlvr's verifiers score one completion at a time"
        )
    if any(isinstance(rubric, vf.JudgeRubric) for rubric in rubrics):
        raise EnvProblem(f"environment {env_id!r} scores with a judge model (JudgeRubric), which needs an API server")
    low, high = reward_range(env.rubric)
    if high <= low:
        raise EnvProblem(f"environment {env_id!r}'s rubric has no reward function with a nonzero weight")


def _rubrics(rubric: Any) -> Iterator[Any]:
    """The rubric and, for a RubricGroup (a SingleTurnEnv's rubric is one, with a 0-weight
    num_turns monitor beside the env's own), every rubric inside it."""
    yield rubric
    for inner in getattr(rubric, "rubrics", None) or []:
        yield from _rubrics(inner)


def _weighted_funcs(rubric: Any) -> list[tuple[Any, float]]:
    """(reward function, weight) of the rubric and the rubrics inside it; weight 0 is a metric."""
    return [pair for inner in _rubrics(rubric) for pair in zip(inner.funcs, inner.weights, strict=True)]


def reward_range(rubric: Any) -> tuple[float, float]:
    """Lowest and highest reward the rubric's weighted sum can give when each reward function
    returns a value in [0, 1], as verifiers' reward functions do: (sum of the negative weights,
    sum of the positive ones)."""
    weights = [weight for _, weight in _weighted_funcs(rubric)]
    return sum(min(weight, 0.0) for weight in weights), sum(max(weight, 0.0) for weight in weights)


def _watch(rubric: Any) -> None:
    """Wraps each reward function so that an exception it raises (noted in _RAISED) or a value
    that is not a number (_NOT_NUMBERS) is seen before the rubric swallows it
    (``Rubric._call_individual_reward_func`` logs it and scores 0.0).
    ``functools.wraps`` keeps the name and, through ``__wrapped__``, the signature the rubric reads
    to choose the arguments it passes."""
    for inner in _rubrics(rubric):
        inner.funcs = [_watched(func) for func in inner.funcs]


def _watched(func: Callable[..., Any]) -> Callable[..., Any]:
    name = getattr(func, "__name__", repr(func))

    def note(error: Exception) -> None:
        _RAISED.append(f"{name}: {type(error).__name__}: {error}"[:200])

    def checked(value: Any) -> Any:
        try:
            float(value)
        except (TypeError, ValueError):
            _NOT_NUMBERS.append(f"{name} returned {value!r}"[:120])
        return value

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def watched_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return checked(await func(*args, **kwargs))
            except Exception as error:
                note(error)
                raise

        return watched_async

    @functools.wraps(func)
    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return checked(func(*args, **kwargs))
        except Exception as error:
            note(error)
            raise

    return watched


# --------------------------------------------------------------------------- rows (task.name=verifiers)


def rows(env_id: str, args: dict[str, Any], path: str, num_train: int, num_eval: int) -> tuple[str, Any]:
    """("ok", {"train": [(index, row), ...], "eval": [...], "eval_from": "eval_dataset" | "dataset"})
    with the environment's rows as JSON data, or ("error", why). Training rows are the first
    ``num_train`` of its dataset; held-out rows the first ``num_eval`` of its eval_dataset or,
    without one, the last ``num_eval`` of its dataset (then left out of training)."""
    try:
        env = environment(env_id, args, path)
        if env.dataset_source is None:
            raise EnvProblem(f"environment {env_id!r} has no training dataset (only an eval_dataset)")
        train = env.get_dataset()
        if env.eval_dataset_source is not None:
            heldout, eval_from, eval_indices = env.get_eval_dataset(), "eval_dataset", range(num_eval)
            train_end = len(train)
        elif len(train) > num_eval:
            heldout, eval_from, eval_indices = train, "dataset", range(len(train) - num_eval, len(train))
            train_end = len(train) - num_eval
        else:
            raise EnvProblem(
                f"environment {env_id!r} has no eval_dataset, so its last task.num_eval={num_eval} rows are held "
                f"out, but its dataset has only {len(train)}; lower task.num_eval"
            )
        return "ok", {
            "train": _json_rows(train, range(min(num_train, train_end)), env_id, "dataset"),
            "eval": _json_rows(heldout, eval_indices[: len(heldout)], env_id, eval_from),
            "eval_from": eval_from,
        }
    except EnvProblem as problem:
        return "error", str(problem)


def _json_rows(dataset: Any, indices: range, env_id: str, name: str) -> list[tuple[int, dict[str, Any]]]:
    """(index, row) for the rows at ``indices``, each row's columns as JSON data."""
    out = []
    for index in indices:
        row = dict(dataset[index])
        try:
            out.append((index, json.loads(json.dumps(row))))
        except (TypeError, ValueError) as error:
            raise EnvProblem(f"environment {env_id!r}: row {index} of its {name} is not JSON data ({error})") from None
    return out


# --------------------------------------------------------------------------- score (verifier type "verifiers")


def score(env_id: str, args: dict[str, Any], path: str, row: dict[str, Any] | None, completion: str) -> tuple[str, Any]:
    """The rubric's reward for one completion: ("ok", (reward, low, high, metrics)), ("raised",
    "function: Class: message") when a reward function raised on it, ("bad_score", why) when a
    reward function or the rubric gave something that is not a finite number, or ("row_error", why). ``row=None`` only loads the
    environment (the pool's warm-up, off any job's clock)."""
    try:
        env = environment(env_id, args, path)
    except EnvProblem as problem:
        return "row_error", str(problem)
    if row is None:
        return "loaded", None
    try:
        state = _state(row, completion)
    except Exception as error:  # the row's prompt or task payload is not what verifiers reads
        return "row_error", f"verifiers cannot read this row: {type(error).__name__}: {error}"
    _RAISED.clear()
    _NOT_NUMBERS.clear()
    try:
        asyncio.run(env.rubric.score_rollout(state))
    except Exception as error:  # outside the reward functions: the rubric cannot score this row
        return "row_error", f"the rubric raised outside its reward functions: {type(error).__name__}: {error}"
    if _RAISED:
        return "raised", "; ".join(_RAISED)
    if _NOT_NUMBERS:
        return "bad_score", "; ".join(_NOT_NUMBERS)
    reward = state.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        return "bad_score", f"the rubric's reward is {reward!r}"[:120]
    weighted = {getattr(func, "__name__", "") for func, weight in _weighted_funcs(env.rubric) if weight}
    metrics = {name: value for name, value in (state.get("metrics") or {}).items() if name in weighted}
    low, high = reward_range(env.rubric)
    return "ok", (float(reward), low, high, metrics)


def _state(row: dict[str, Any], completion: str) -> Any:
    """The rollout state a rubric scores, built from the row as ``Environment.init_state`` builds
    it, with the completion as one assistant message (as ``SingleTurnEnv`` renders it)."""
    from verifiers.types import State, flatten_task_input
    from verifiers.utils.message_utils import normalize_messages

    state_input = copy.deepcopy(row)
    if isinstance(state_input.get("info"), str):
        state_input["info"] = json.loads(state_input["info"])
    task = flatten_task_input(state_input)
    state = State(input=task)
    state["task"] = task
    state["prompt"] = normalize_messages(task["prompt"], field_name="input.prompt")
    state["completion"] = normalize_messages([{"role": "assistant", "content": completion}], field_name="completion")
    state.update(
        trajectory=[], tool_defs=[], is_completed=True, is_truncated=False, reward=None, metrics=None, error=None
    )
    return state
