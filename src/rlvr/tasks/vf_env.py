"""An environment with the `verifiers` contract as a task source (task.name=verifiers).

A `verifiers` environment package (its module named by task.vf_env, importable from the venv or
from task.vf_path) exposes ``load_environment(**kwargs)``, which returns a ``vf.SingleTurnEnv``:
a dataset, maybe an ``eval_dataset``, and a rubric of weighted reward functions. Its rows become
rlvr rows whose verifier (rlvr.verifiers.vf_rubric) scores a completion with that rubric:
``{"type": "verifiers", "env": NAME, "args": {...}, "path": DIR, "row": {the dataset row}}``.

- **Splits.** Training rows are the first task.num_train rows of its dataset, held-out rows the
  first task.num_eval of its eval_dataset. An environment without an eval_dataset has the last
  task.num_eval rows of its dataset held out, and they are never trained on.
- **Prompts.** verifiers formats each row as chat messages: an optional system message (the
  environment's ``system_prompt``), then the question as the user message. The rlvr prompt is the
  user message's text. The system message is not sent on its own: rlvr's system turn is
  task.system_prompt, one for the whole run, and each row keeps the environment's in
  ``meta["system_prompt"]`` so that it can be copied there (instruct models). Rows with few-shot
  turns or non-text content are refused: a prompt is one user turn.
- **Where it runs.** The environment loads in a worker process (rlvr.verifiers._vf_worker says
  why), and its rows come back as JSON data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.types import Query
from rlvr.workers import WorkerPool

ROWS_JOB = "rlvr.verifiers._vf_worker:rows"

LOAD_TIMEOUT_S = 600.0
"""Longest an environment may take to load and hand over its rows (some download a dataset)."""


def load(
    env_id: str, args: dict[str, Any], *, path: str = "", num_train: int, num_eval: int
) -> tuple[list[Query], list[Query]]:
    """(train rows, held-out rows) of environment ``env_id`` built with ``args``; a ValueError
    says what is wrong with the environment or its rows."""
    path = str(Path(path).resolve()) if path else ""
    with WorkerPool(ROWS_JOB, size=1, timeout_s=LOAD_TIMEOUT_S, memory_limit_mb=None) as pool:
        outcome = pool.run(env_id, args, path, num_train, num_eval)
    if outcome.status != "ok":
        raise ValueError(f"task.vf_env={env_id!r}: loading the environment failed: {outcome.detail}")
    kind, value = outcome.value
    if kind == "error":
        raise ValueError(value)
    criteria = {"type": "verifiers", "env": env_id, "args": args, **({"path": path} if path else {})}
    train = [_query(env_id, "train", index, row, criteria) for index, row in value["train"]]
    heldout = [_query(env_id, "heldout", index, row, criteria) for index, row in value["eval"]]
    if not train or not heldout:
        empty = "dataset" if not train else value["eval_from"]
        raise ValueError(f"environment {env_id!r} has no rows in its {empty}")
    return train, heldout


def _query(env_id: str, split: str, index: int, row: dict[str, Any], criteria: dict[str, Any]) -> Query:
    system, user = split_prompt(row.get("prompt"), where=f"environment {env_id!r}, {split} row {index}")
    meta = {"task": "verifiers", "env": env_id, **({"system_prompt": system} if system else {})}
    return Query(id=f"vf-{env_id}-{split}-{index}", prompt=user, verifier={**criteria, "row": row}, meta=meta)


def split_prompt(messages: Any, *, where: str) -> tuple[str, str]:
    """(system text or "", user text) of a verifiers prompt: [system?, user]; a ValueError otherwise."""
    if isinstance(messages, str):
        return "", messages
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{where}: its prompt is {type(messages).__name__}, not a list of chat messages")
    roles = [message.get("role") if isinstance(message, dict) else None for message in messages]
    if roles not in (["user"], ["system", "user"]):
        raise ValueError(
            f"{where}: its prompt has the turns {roles}; rlvr prompts are one user turn, after at most one "
            "system turn (few-shot turns are not supported)"
        )
    contents = [message.get("content") for message in messages]
    if not all(isinstance(content, str) for content in contents):
        raise ValueError(f"{where}: a prompt message's content is not plain text")
    return ("", contents[0]) if len(contents) == 1 else (contents[0], contents[1])
