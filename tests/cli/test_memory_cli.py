"""`rlvr memory`: the table, the JSON, and one-line errors with exit code 2."""

import json
from pathlib import Path

import pytest

from rlvr.cli import main


def test_table_names_every_component_with_units(capsys):
    assert main(["memory", "--model", "Qwen2.5-7B", "--algorithm", "ppo"]) == 0
    out = capsys.readouterr().out
    for name in ("policy_weights", "critic_optimizer", "reference_weights", "activations", "kv_cache", "peak_total"):
        assert name in out
    assert "GiB" in out and "7.62B parameters" in out


def test_json_matches_the_flags(capsys):
    assert (
        main(
            [
                "memory",
                "--model",
                "tiny-arith",
                "--precision",
                "fp32",
                "--beta",
                "0",
                "--json",
                "--prompt-len",
                "8",
                "--completion-len",
                "16",
                "--batch",
                "4",
                "--micro-batch",
                "8",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    components = report["components"]
    assert "reference_weights" not in components  # GRPO with beta = 0
    assert components["policy_weights"]["bytes"] == 4 * report["parameters"]
    assert report["setup"]["group"] == 8


def test_dpo_defaults_to_pairs(capsys):
    assert main(["memory", "--algorithm", "dpo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["group"] == 2
    assert main(["memory", "--algorithm", "dpo", "--online-pairs", "16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["group"] == 8  # sampled online: G completions per query


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "gpt-17"], "presets: tiny-arith"),
        (["--model", "/no/such/config.json"], "no such file"),
        (["--gpus", "3"], "evenly over 3 GPUs"),
        (["--sharding", "zero5"], "--sharding zero5: unknown"),
        (["--optimizer", "lion"], "unknown optimizer"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(capsys, argv, message):
    assert main(["memory", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_unreadable_config_json(tmp_path, capsys):
    bad = tmp_path / "config.json"
    bad.write_text("{")
    assert main(["memory", "--model", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_sequence_lengths_default_to_the_models_and_are_stated(tmp_path, capsys):
    from rlvr.config import RolloutConfig

    def setup(*argv):
        assert main(["memory", *argv, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)["setup"]
        return report["prompt_len"], report["completion_len"]

    # tiny-arith: what rlvr train runs by default (8-token arith prompts, rollout.max_new_tokens),
    # not 256 + 1024 = 1,280 tokens for a model built for 128
    assert setup() == (8, RolloutConfig().max_new_tokens)
    assert main(["memory"]) == 0
    assert "sequences: P = 8 prompt + T = 40 completion tokens (rlvr train's default run on tiny-arith;" in (
        capsys.readouterr().out
    )
    assert setup("--model", "Qwen2.5-7B") == (256, 1024)  # no context given: the long-answer defaults
    config = json.loads(
        (Path(__file__).resolve().parents[2] / "src/rlvr/bases/assets/tiny-arith/config.json").read_text()
    )
    short = tmp_path / "config.json"
    short.write_text(json.dumps({**config, "max_position_embeddings": 500}))
    assert setup("--model", str(short)) == (100, 400)  # 1 : 4, as 256 : 1024, within its 500 positions
    assert main(["memory", "--model", str(short)]) == 0
    assert "(256 + 1024 scaled to the model's 500-token context;" in capsys.readouterr().out
    assert setup("--prompt-len", "30", "--completion-len", "70") == (30, 70)
    assert main(["memory", "--prompt-len", "30", "--completion-len", "70"]) == 0
    assert "sequences:" not in capsys.readouterr().out  # given, not assumed
    assert main(["memory", "--prompt-len", "30"]) == 0
    assert "P = 30 prompt + T = 40 completion tokens (rlvr train's default run" in capsys.readouterr().out
