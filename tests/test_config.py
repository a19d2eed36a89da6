import subprocess
import sys

import pytest

from rlvr.config import AlgoConfig, ConfigError, RunConfig, describe_fields, field_docs, load_config


def test_defaults_are_valid_and_documented():
    cfg = load_config()
    assert cfg.rollout.group_size == 8  # the seed's G = 8
    assert cfg.algo.kl_estimator == "k3" and cfg.algo.aggregation == "sequence_mean"
    text = describe_fields()
    for section, values in RunConfig().to_dict().items():
        for key in values:
            assert f"{section}.{key} =" in text
    assert all(doc for doc in field_docs(AlgoConfig).values())
    assert set(field_docs(AlgoConfig)) == set(RunConfig().algo.__dict__)


def test_overrides_are_typed():
    cfg = load_config(
        None, ["algo.beta=0.1", "rollout.group_size=4", "algo.epsilon_high=0.28", "train.tensorboard=true"]
    )
    assert cfg.algo.beta == 0.1 and cfg.rollout.group_size == 4
    assert cfg.algo.epsilon_high == 0.28 and cfg.train.tensorboard is True
    assert load_config(None, ["algo.epsilon_high="]).algo.epsilon_high is None
    assert isinstance(load_config(None, ["optim.lr=1"]).optim.lr, float)
    assert load_config(None, ["optim.lr=1e-3"]).optim.lr == 0.001  # YAML 1.1 reads 1e-3 as text


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("algo:\n  beta: 0.2\ntrain:\n  steps: 7\n")
    cfg = load_config(path, ["train.steps=9"])
    assert cfg.algo.beta == 0.2 and cfg.train.steps == 9


@pytest.mark.parametrize(
    "override, words",
    [
        ("rollout.group_size=1", ["rollout.group_size", ">= 2", "baseline"]),
        ("algo.beta=-0.1", ["algo.beta", ">= 0"]),
        ("optim.micro_batch_size=7", ["optim.micro_batch_size=7", "divide", "128"]),
        ("algo.aggregation=mean", ["algo.aggregation", "sequence_mean"]),
        ("rollout.group_size=eight", ["rollout.group_size", "integer"]),
        ("algo.betta=0.1", ["unknown config key 'algo.betta'", "beta"]),
        ("algorithm.beta=0.1", ["unknown config section 'algorithm'"]),
        ("rollout.top_p=0", ["rollout.top_p", "(0, 1]"]),
        ("task.name=jsonl", ["task.train_path"]),
        ("beta=0.1", ["section.key"]),
    ],
)
def test_errors_name_the_field_and_the_fix(override, words):
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    for word in words:
        assert word in str(err.value)


def test_bad_yaml_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    flat = tmp_path / "flat.yaml"
    flat.write_text("beta: 0.1\n")
    with pytest.raises(ConfigError, match="section 'beta' must be a mapping"):
        load_config(flat)


def test_presets_load_and_the_default_preset_is_the_default():
    from pathlib import Path

    configs = Path(__file__).parents[1] / "configs"
    presets = sorted(configs.glob("*.yaml"))
    assert presets
    for preset in presets:
        assert preset.read_text().startswith("# rlvr train --config configs/"), preset
        load_config(preset)
    assert load_config(configs / "arith-grpo.yaml") == RunConfig()


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("algo.overlong_cache=0", "algo.overlong_cache must be in [1, rollout.max_new_tokens=40]"),
        ("algo.overlong_cache=41", "algo.overlong_cache must be in [1, rollout.max_new_tokens=40]"),
        ("algo.kl_placement=reward", "gspo"),
        ("ppo.lam=1.5", "ppo.lam must be in [0, 1]"),
        ("ppo.gamma=-0.1", "ppo.gamma must be in [0, 1]"),
        ("algo.entropy_coef=-1", "algo.entropy_coef must be >= 0"),
        ("algo.max_sampling_rounds=0", "algo.max_sampling_rounds must be > 0"),
        ("algo.kl_placement=critic", "algo.kl_placement must be one of loss, reward"),
    ],
)
def test_new_algo_fields_are_validated(override, fragment):
    extra = ["algo.overlong_penalty=true"] if "overlong" in override else []
    extra += ["algo.algorithm=gspo"] if override == "algo.kl_placement=reward" else []
    with pytest.raises(ConfigError) as err:
        load_config(None, [*extra, override])
    assert fragment in str(err.value)


def test_presets_for_dapo_and_ppo_load():
    dapo = load_config("configs/dapo.yaml")
    assert dapo.algo.dynamic_sampling and dapo.algo.overlong_penalty and dapo.algo.aggregation == "token_mean"
    ppo = load_config("configs/ppo.yaml")
    assert ppo.algo.algorithm == "ppo" and ppo.algo.kl_placement == "reward" and ppo.ppo.lam == 1.0


def test_text_that_yaml_1_1_reads_as_base_60_stays_text(tmp_path):
    # YAML 1.1 reads 4:30 as 270 and 1:3 as 63; a depth mix such as task.train_mix=4:30 must stay text
    assert load_config(None, ["task.train_mix=4:30"]).task.train_mix == "4:30"
    assert load_config(None, ["task.train_mix=1:3"]).task.train_mix == "1:3"
    path = tmp_path / "c.yaml"
    path.write_text("task:\n  train_mix: 4:30\n")
    assert load_config(path).task.train_mix == "4:30"
    with pytest.raises(ConfigError, match="train.steps must be an integer"):
        load_config(None, ["train.steps=1:30"])  # not a number any more, and said so
    cfg = load_config(None, ["optim.lr=3.0e-4", "algo.beta=.5", "train.steps=1_000", "algo.epsilon=0.2"])
    assert (cfg.optim.lr, cfg.algo.beta, cfg.train.steps, cfg.algo.epsilon) == (3e-4, 0.5, 1000, 0.2)


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        (["model.dtype=bfloat16", "rollout.dtype=bfloat16"], "model.dtype=bfloat16 needs model.lora_rank > 0"),
        (["model.dtype=bfloat16", "model.lora_rank=8"], "set rollout.dtype=bfloat16"),
        (["model.gradient_checkpointing=true", "model.forward=lean"], "use model.forward=auto or hf"),
        (["model.dtype=float16"], "model.dtype must be one of float32, bfloat16"),
        (["rollout.max_staleness=1", "algo.dynamic_sampling=true"], "cannot be sampled ahead"),
        (["rollout.max_staleness=-1"], "rollout.max_staleness must be"),
        (["algo.tis_cap=2", "algo.tis_mode=clip"], "algo.tis_mode must be one of truncate, mask"),
    ],
)
def test_precision_settings_that_cannot_work_are_refused(overrides, fragment):
    with pytest.raises(ConfigError) as err:
        load_config(None, overrides)
    assert fragment in str(err.value)


def test_the_gpu_recipe_is_bf16_lora_with_checkpointing():
    from pathlib import Path

    cfg = load_config(Path(__file__).parents[1] / "configs" / "qwen2.5-0.5b-gsm8k-lora.yaml")
    assert (cfg.model.dtype, cfg.rollout.dtype, cfg.model.gradient_checkpointing) == ("bfloat16", "bfloat16", True)
    assert cfg.model.lora_rank == 16 and cfg.task.name == "hf" and cfg.task.hf_format == "gsm8k"
    assert cfg.rollout.backend == "hf"  # vllm is a switch in a comment: this machine has no vLLM


def test_loading_a_config_imports_no_torch_unless_a_setting_needs_the_algorithm_traits():
    # rlvr train starts the sampler process of rollout.max_staleness once it has the config and
    # before torch loads (engine/sampler_launch.py); checks read the traits only where they apply
    code = (
        "import sys; from rlvr.config import load_config; "
        "load_config(None, ['rollout.max_staleness=1', 'algo.algorithm=gspo']); print('torch' in sys.modules); "
        "load_config(None, ['algo.tis_cap=2']); print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["False", "True"]
