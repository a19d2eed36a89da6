"""reasoning-gym as a task source (task.name=reasoning_gym): one of its procedural datasets,
generated with the config's difficulty arguments, as rlvr rows.

Each row carries what its verifier needs to call that dataset's own ``score_answer``:
``{"type": "reasoning_gym", "dataset": NAME, "config": {...}, "entry": {question, answer,
metadata}, "partial_credit": bool}`` (rlvr.verifiers.reasoning_gym; ``partial_credit`` is
``task.rg_partial_credit``). The prompt is the question as reasoning-gym writes
it; the model answers inside ``<answer>...</answer>`` like every rlvr task.

Training rows are the dataset at seed ``data_seed``; held-out rows are drawn at seed
``data_seed + HELDOUT_SEED_OFFSET``, and any whose question is also a training question is
skipped, so the two splits never share a question. Within a split questions are distinct, as in
task.name=arith: a difficulty range too narrow for the asked size is an error, not silent repeats.
"""

from __future__ import annotations

import json
from typing import Any

from rlvr.types import Query

HELDOUT_SEED_OFFSET = 1_000_003
"""Held-out rows come from this far past data_seed (reasoning-gym seeds item i with seed + i)."""

SEARCH_FACTOR = 4
"""Items drawn per row asked for, at most, before a split is declared exhausted."""

TUPLE_TAG, ITEMS_TAG = "__tuple__", "__items__"
"""JSON has no tuples and only string keys, and some scorers compare tuples (ARC grids) or read
int-keyed maps (graph_color): such values are kept as {TUPLE_TAG: [...]} and {ITEMS_TAG: [[key,
value], ...]}, and rlvr.verifiers._rg_worker.decode rebuilds them."""


def encode(value: Any, where: str = "entry") -> Any:
    """``value`` as plain JSON data, tuples and non-string keys tagged; a ValueError names what
    cannot be stored."""
    if isinstance(value, tuple):
        return {TUPLE_TAG: [encode(item, where) for item in value]}
    if isinstance(value, list):
        return [encode(item, where) for item in value]
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: encode(item, f"{where}.{key}") for key, item in value.items()}
        return {ITEMS_TAG: [[encode(key, where), encode(item, f"{where}[{key!r}]")] for key, item in value.items()]}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError(f"{where} holds a {type(value).__name__}, which a JSON row cannot hold")


REFUSED = {
    "composite": "composite mixes other datasets under one name, so rlvr cannot apply each one's own "
    "checks; generate rows for each dataset instead",
}
"""Datasets rlvr refuses to generate or score, with the reason (the verifier refuses their rows)."""


def known_datasets() -> list[str]:
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS)


def build(name: str, config: dict[str, Any], *, seed: int, size: int) -> Any:
    """reasoning-gym's dataset object; a ValueError says what is wrong with the name or config."""
    import reasoning_gym

    if name in REFUSED:
        raise ValueError(f"task.rg_dataset={name!r} is refused: {REFUSED[name]}")
    if name not in known_datasets():
        close = [known for known in known_datasets() if name[:4] in known] or known_datasets()[:8]
        raise ValueError(f"task.rg_dataset={name!r} is not a reasoning-gym dataset; e.g. {', '.join(close[:8])}")
    reserved = sorted({"seed", "size"} & set(config))
    if reserved:
        raise ValueError(f"task.rg_config sets {', '.join(reserved)}; use task.data_seed and task.num_train / num_eval")
    try:
        return reasoning_gym.create_dataset(name, seed=seed, size=size, **config)
    except TypeError as error:  # an argument its config class does not have
        raise ValueError(f"task.rg_config does not fit {name}: {error}") from None
    except (AssertionError, ValueError) as error:  # its config's own validation
        raise ValueError(f"task.rg_config is invalid for {name}: {error or 'rejected by its config'}") from None


def make_queries(
    name: str,
    config: dict[str, Any],
    *,
    split: str,
    seed: int,
    n: int,
    skip: frozenset[str] = frozenset(),
    partial_credit: bool = False,
) -> list[Query]:
    """``n`` rows with distinct questions (none in ``skip``), in reasoning-gym's order at ``seed``;
    ``partial_credit`` lets their verifier pay a score below 1 as partial reward."""
    dataset = build(name, config, seed=seed, size=n * SEARCH_FACTOR)
    config = encode(dict(config), "task.rg_config")
    rows: list[Query] = []
    seen = set(skip)
    for index in range(n * SEARCH_FACTOR):
        item = dataset[index]
        question = item["question"]
        if question in seen:
            continue
        seen.add(question)
        entry = encode({"question": question, "answer": item["answer"], "metadata": item.get("metadata", {})})
        rows.append(
            Query(
                id=f"rg-{name}-{split}-{index}",
                prompt=question,
                verifier={
                    "type": "reasoning_gym",
                    "dataset": name,
                    "config": config,
                    "entry": entry,
                    "partial_credit": partial_credit,
                },
                meta={"task": "reasoning_gym", "dataset": name},
            )
        )
        if len(rows) == n:
            return rows
    raise ValueError(
        f"reasoning_gym {name}: only {len(rows)} distinct {split} questions in {n * SEARCH_FACTOR} draws "
        f"with task.rg_config={json.dumps(config)}; ask for fewer (task.num_train / num_eval) or widen the difficulty"
    )


def load(
    name: str,
    config: dict[str, Any],
    *,
    seed: int,
    num_train: int,
    num_eval: int,
    partial_credit: bool = False,
) -> tuple[list[Query], list[Query]]:
    """(train rows, held-out rows) as task.name=reasoning_gym makes them."""
    train = make_queries(name, config, split="train", seed=seed, n=num_train, partial_credit=partial_credit)
    questions = frozenset(query.prompt for query in train)
    heldout_seed = seed + HELDOUT_SEED_OFFSET
    heldout = make_queries(
        name, config, split="heldout", seed=heldout_seed, n=num_eval, skip=questions, partial_credit=partial_credit
    )
    return train, heldout
