"""`rlvr inspect` and `rlvr grad-variance` as a user runs them: the real CLI (in this process), real tiny model."""

import json

import pytest

SMALL = [
    "--set",
    "train.batch_queries=4",
    "--set",
    "rollout.group_size=4",
    "--set",
    "task.num_eval=8",
    "--set",
    "train.eval_samples=2",
    "--set",
    "task.num_train=40",
    "--set",
    "train.threads=1",
    "--set",
    "optim.micro_batch_size=8",
]


@pytest.mark.slow
def test_inspect_a_run_step_repeats_the_real_update(base_model_dir, tmp_path, cli):
    run, inspected = tmp_path / "run", tmp_path / "inspect"
    done = cli(
        "train", "--set", f"model.name={base_model_dir}", "--set", "train.steps=1", *SMALL, "--out", str(run), "--quiet"
    )
    assert done.returncode == 0, done.stderr
    # the run holds a checkpoint after step 1, so step 2 is inspected from the run's own state ...
    done = cli("inspect", "--run", str(run), "--step", "2", "--out", str(inspected))
    assert done.returncode == 0, done.stderr
    assert "checkpoint after step 1" in done.stdout and (inspected / "capture.html").is_file()
    capture = json.loads((inspected / "capture.json").read_text())
    # ... and then the run itself takes step 2: the inspector saw exactly the update it made
    done = cli("train", "--resume", str(run), "--set", "train.steps=2", "--quiet")
    assert done.returncode == 0, done.stderr
    logged = next(
        json.loads(line)
        for line in (run / "metrics.jsonl").read_text().splitlines()
        if json.loads(line).get("step") == 2 and "loss" in json.loads(line)
    )
    assert capture["loss"] == pytest.approx(logged["loss"], rel=1e-6, abs=1e-9)
    assert capture["grad_norm"] == pytest.approx(logged["grad_norm"], rel=1e-6)
    assert capture["update_norm"] == pytest.approx(logged["update_norm"], rel=1e-6)
    assert capture["grad_noise"]["grad/variance"] == pytest.approx(logged["grad/variance"], rel=1e-6)
    assert sum(map(sum, capture["rewards"])) / 16 == pytest.approx(logged["reward"])
    # a step with no weights kept before it is shown from the nearest saved ones, and says which
    done = cli("inspect", "--run", str(run), "--step", "2", "--out", str(tmp_path / "again"))
    assert done.returncode == 0 and "warning: no model kept after step 1" in done.stdout
    assert "inspected from the model in final/ after step 2" in done.stdout and "--step 3 repeats" in done.stdout

    done = cli(
        "inspect",
        "--replay",
        str(inspected / "capture.json"),
        "--set",
        "algo.beta=0",
        "--set",
        "algo.aggregation=token_mean",
        "--set",
        "algo.algorithm=gspo",
    )
    assert done.returncode == 0, done.stderr
    assert "cosine" in done.stdout and "|g_new - g_captured|" in done.stdout
    result = json.loads((inspected / "replay.json").read_text())
    assert result["config"]["algorithm"] == "gspo" and result["config"]["aggregation"] == "token_mean"
    assert result["loss_before"] == pytest.approx(capture["loss"], rel=1e-5, abs=1e-7)
    assert "replay_weight_difference" in (inspected / "replay.html").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["inspect", "--run", "/nonexistent", "--step", "1"], "no run there"),
        (["inspect", "--run", "/nonexistent"], "needs --step"),
        (["inspect", "--replay", "/nonexistent/capture.json", "--set", "algo.beta=0"], "no such file"),
        (["inspect", "--config", "configs/smoke.yaml", "--set", "algo.beta=-1"], "algo.beta must be >= 0"),
        (["grad-variance", "--group-sizes", "1,2"], "every G must be >= 2"),
        (["grad-variance", "--group-sizes", "two"], "comma-separated integers"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, cli):
    done = cli(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_replay_refuses_settings_that_made_the_batch(base_model_dir, tmp_path, cli):
    done = cli(
        "inspect",
        "--config",
        "configs/smoke.yaml",
        "--set",
        f"model.name={base_model_dir}",
        "--set",
        "train.threads=1",
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    capture = str(tmp_path / "capture.json")
    done = cli("inspect", "--replay", capture, "--set", "rollout.group_size=8")
    assert done.returncode == 2 and "only algo.*" in done.stderr
    done = cli("inspect", "--replay", capture)
    assert done.returncode == 2 and "at least one --set" in done.stderr


def test_grad_variance_writes_a_row_per_group_size(base_model_dir, tmp_path, cli):
    out = tmp_path / "gv.json"
    done = cli(
        "grad-variance",
        "--set",
        f"model.name={base_model_dir}",
        "--set",
        "train.batch_queries=3",
        "--set",
        "train.threads=1",
        "--set",
        "algo.beta=0",
        "--group-sizes",
        "2,4",
        "--batches",
        "1",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert "B_simple" in done.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [r["group_size"] for r in rows] == [2, 4] and all(r["prompts"] == 3 for r in rows)
    for r in rows:
        assert r["trace"] >= 0 and r["variance"] == pytest.approx(r["trace"] / 3)


def test_inspect_with_lora_over_a_fully_trained_run_captures_and_replays_the_adapters(base_model_dir, tmp_path, cli):
    run, inspected = tmp_path / "run", tmp_path / "inspect"
    small = [*SMALL, "--set", "task.num_eval=4", "--set", "train.eval_samples=1"]
    done = cli("train", "--set", f"model.name={base_model_dir}", "--set", "train.steps=1", *small, "--out", str(run))
    assert done.returncode == 0, done.stderr
    # the run's checkpoint holds full weights, which do not fit a LoRA policy: step 2 is shown from
    # the base with fresh adapters, and the capture says so
    lora = ["--set", "model.lora_rank=4", "--set", "optim.lr=1e-2"]
    done = cli("inspect", "--run", str(run), "--step", "2", *lora, "--out", str(inspected))
    assert done.returncode == 0, done.stderr
    assert "holds a fully fine-tuned model, not LoRA adapters" in done.stdout
    capture = json.loads((inspected / "capture.json").read_text())
    assert capture["config"]["lora_rank"] == 4 and "fresh LoRA adapters r=4" in capture["source"]["policy"]
    saved = {p.name for p in (inspected / "policy").iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= saved and "model.safetensors" not in saved
    assert capture["grad_norm"] > 0 and abs(capture["stats"]["kl"]) < 1e-6  # B = 0: π_θ is the base, π_ref
    # the replay rebuilds the base with the captured adapters: the captured loss and the gradient,
    # the adapters' alone, come back
    done = cli("inspect", "--replay", str(inspected / "capture.json"), "--set", "algo.aggregation=token_mean")
    assert done.returncode == 0, done.stderr
    result = json.loads((inspected / "replay.json").read_text())
    assert result["loss_before"] == pytest.approx(capture["loss"], rel=1e-5, abs=1e-7)
    assert result["grad_norm_before"] == pytest.approx(capture["grad_norm"], rel=1e-5)


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory):
    """A finished 4-step run that kept the model after step 2 (train.keep_every=2) and checkpointed
    only at the end (train.save_every=0): models after steps 2 and 4, and the base."""
    from rlvr.config import load_config
    from rlvr.engine.loop import train

    run = tmp_path_factory.mktemp("kept") / "run"
    sets = [s for s in SMALL if s != "--set"] + ["train.steps=4", "train.keep_every=2", "train.save_every=0"]
    train(load_config(None, sets), run, progress=False)
    return run


def test_inspect_a_step_starts_from_the_model_kept_before_it(kept_run, tmp_path, cli):
    from safetensors.torch import load_file

    done = cli("inspect", "--run", str(kept_run), "--step", "3", "--out", str(tmp_path / "i3"))
    assert done.returncode == 0, done.stderr
    assert "the model in steps/2/ after step 2 (weights only" in done.stdout and "warning" not in done.stdout
    # the captured pass started from exactly the kept weights (one pass: nothing moved before it)
    kept, captured = (
        load_file(kept_run / "steps/2/model.safetensors"),
        load_file(tmp_path / "i3/policy/model.safetensors"),
    )
    assert kept.keys() == captured.keys() and all(kept[name].equal(captured[name]) for name in kept)
    capture = json.loads((tmp_path / "i3" / "capture.json").read_text())
    assert capture["source"]["step"] == 3 and "warning" not in capture["source"]


def test_inspect_a_step_without_a_kept_model_says_which_weights_it_uses(kept_run, tmp_path, cli):
    # step 4 starts from the model after step 3, which no one kept: the nearest (after step 2 or 4;
    # a tie goes to the later) is steps/4/, and the output says so, never silently the base
    done = cli("inspect", "--run", str(kept_run), "--step", "4", "--out", str(tmp_path / "i4"))
    assert done.returncode == 0, done.stderr
    warning = next(line for line in done.stdout.splitlines() if line.startswith("warning:"))
    assert "no model kept after step 3 (train.keep_every=N" in warning and "after steps 2, 4" in warning
    assert "step 4 is inspected from the model in steps/4/ after step 4" in warning
    assert "--step 5 repeats the run's own update from its checkpoint" in warning


@pytest.mark.parametrize("step", ["6", "500"])
def test_inspect_refuses_a_step_the_run_never_took(kept_run, tmp_path, cli, step):
    done = cli("inspect", "--run", str(kept_run), "--step", step, "--out", str(tmp_path / "never"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"rlvr: error: --step {step}: {kept_run} took steps 1-4; inspect a step from 1 to 5 "
        "(5: the update it would take next)"
    )
    assert not (tmp_path / "never").exists()
