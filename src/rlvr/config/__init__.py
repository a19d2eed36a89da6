"""Typed configuration: one dataclass per concern (schema.py), YAML presets and `--set key=value`
overrides (loading.py), and the checks that refuse a configuration that cannot work (checks.py).

Every field carries a one-line docstring (the string right below it); `rlvr train --help` shows
them, so the help and the code cannot drift. Validation errors name the field and say what to do.
"""

from rlvr.config.checks import TRACKER_PACKAGES, sampling_problem, tracker_problem, validate
from rlvr.config.loading import (
    apply_mapping,
    config_from_dict,
    describe_fields,
    field_docs,
    load_config,
    parse_override,
    read_yaml,
)
from rlvr.config.schema import (
    EVAL_FIELDS,
    AlgoConfig,
    ConfigError,
    HfFormat,
    ModelConfig,
    OptimConfig,
    PPOConfig,
    RewardConfig,
    RolloutConfig,
    RunConfig,
    TaskConfig,
    TrainConfig,
    eval_fields,
    eval_set_problem,
    sections,
)

__all__ = [
    "EVAL_FIELDS",
    "TRACKER_PACKAGES",
    "AlgoConfig",
    "ConfigError",
    "HfFormat",
    "ModelConfig",
    "OptimConfig",
    "PPOConfig",
    "RewardConfig",
    "RolloutConfig",
    "RunConfig",
    "TaskConfig",
    "TrainConfig",
    "apply_mapping",
    "config_from_dict",
    "describe_fields",
    "eval_fields",
    "eval_set_problem",
    "field_docs",
    "load_config",
    "parse_override",
    "read_yaml",
    "sampling_problem",
    "sections",
    "tracker_problem",
    "validate",
]
