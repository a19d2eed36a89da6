"""Built-in tasks and dataset loading: each returns (train queries, held-out queries)."""

from __future__ import annotations

from rlvr.config import TaskConfig
from rlvr.tasks.arith import ArithSpec, make_mixed_queries, make_queries, parse_mix
from rlvr.tasks.dataset import DatasetError, load_jsonl
from rlvr.types import Query


def arith_spec(cfg: TaskConfig) -> ArithSpec:
    """The arith generator's spec as a task config sets it."""
    return ArithSpec(operands=cfg.operands, digits=cfg.digits, max_value=cfg.max_value, min_operand=cfg.min_operand)


def _arith(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    spec = arith_spec(cfg)
    try:
        mix = parse_mix(cfg.train_mix) if cfg.train_mix else {cfg.operands: cfg.num_train}
    except ValueError as err:
        raise ValueError(f"task.train_mix: {err}") from None
    train = make_mixed_queries(mix, split="train", seed=cfg.data_seed, spec=spec)
    heldout = make_queries(cfg.num_eval, split="heldout", seed=cfg.data_seed, spec=spec)
    return train, heldout


def _funcsynth(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    from rlvr.tasks import funcsynth

    train = funcsynth.make_queries(cfg.num_train, split="train", seed=cfg.data_seed)
    heldout = funcsynth.make_queries(cfg.num_eval, split="heldout", seed=cfg.data_seed)
    return train, heldout


def _jsonl(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    return load_jsonl(cfg.train_path), load_jsonl(cfg.eval_path)


def _hf(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    from rlvr.tasks.hf import ColumnMap, load_hf_task  # imports `datasets` only here

    columns = ColumnMap.for_format(
        cfg.hf_format,
        prompt=cfg.hf_prompt_column,
        answer=cfg.hf_answer_column,
        verifier=cfg.hf_verifier_column,
        id=cfg.hf_id_column,
    )
    return load_hf_task(cfg.hf_path, cfg.hf_split, cfg.hf_eval_path, cfg.hf_eval_split, columns)


def _reasoning_gym(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    from rlvr.tasks import reasoning_gym  # imports reasoning_gym only here

    return reasoning_gym.load(
        cfg.rg_dataset,
        cfg.rg_config,
        seed=cfg.data_seed,
        num_train=cfg.num_train,
        num_eval=cfg.num_eval,
        partial_credit=cfg.rg_partial_credit,
    )


def _verifiers(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    from rlvr.tasks import vf_env  # the environment loads in a worker process, never here

    return vf_env.load(cfg.vf_env, cfg.vf_args, path=cfg.vf_path, num_train=cfg.num_train, num_eval=cfg.num_eval)


def _proofs(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    from rlvr.tasks import proofs

    train = proofs.make_queries(cfg.num_train, split="train", seed=cfg.data_seed)
    heldout = proofs.make_queries(cfg.num_eval, split="heldout", seed=cfg.data_seed)
    return train, heldout


TASKS = {
    "arith": _arith,
    "jsonl": _jsonl,
    "hf": _hf,
    "funcsynth": _funcsynth,
    "reasoning_gym": _reasoning_gym,
    "verifiers": _verifiers,
    "proofs": _proofs,
}


def load_task(cfg: TaskConfig) -> tuple[list[Query], list[Query]]:
    try:
        return TASKS[cfg.name](cfg)
    except ValueError as err:  # DatasetError and arith's "not enough queries" both say what to fix
        raise DatasetError(str(err)) from None
