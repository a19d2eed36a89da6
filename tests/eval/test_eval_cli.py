"""The real `rlvr eval` command on the shipped tiny model: JSON contract, PNG, user errors."""

import json

import pytest


def test_eval_writes_json_and_png(base_model_dir, tmp_path, cli):
    out = tmp_path / "ev"
    done = cli(
        "eval",
        "--model",
        str(base_model_dir),
        "--base",
        "tiny-arith",
        "--n",
        "4",
        "--k",
        "1,2,4",
        "--num-queries",
        "6",
        "--seed",
        "3",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert "CoT-pass@k" in done.stdout and "pass@k:" in done.stdout
    report = json.loads((out / "eval.json").read_text())
    assert {"task", "n", "k", "num_queries", "temperature", "seed", "models", "crossing"} <= set(report)
    assert report["n"] == 4 and report["k"] == [1, 2, 4] and report["num_queries"] == 6
    assert set(report["models"]) == {"model", "base"} and set(report["crossing"]) == {"pass@k", "cot_pass@k"}
    for result in report["models"].values():
        answer, cot = result["pass@k"], result["cot_pass@k"]
        assert len(answer) == len(cot) == 3
        assert all(0 <= v <= 1 for v in answer + cot)
        assert answer == sorted(answer)  # pass@k never falls as k grows
        assert all(c <= a + 1e-12 for a, c in zip(answer, cot))  # right reasoning implies right answer
        assert len(result["per_query"]) == len(result["query_ids"]) == 6  # every query, scorable or not
    # the same weights and the same seed sample the same completions: identical curves, no crossing
    assert report["models"]["model"]["pass@k"] == report["models"]["base"]["pass@k"]
    assert report["crossing"] == {"pass@k": None, "cot_pass@k": None}
    assert (out / "passk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "samples.jsonl").is_file() and (out / "samples_lm_eval.jsonl").is_file()
    assert "model-base pass@k" in done.stdout and "% [" in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n", "4", "--k", "1,8"], "--k 8 exceeds --n 4"),
        (["--k", "1,two"], "rlvr eval: error: argument --k: expected comma-separated integers"),
        (["--k", "0,1"], "argument --k: every k must be >= 1"),
        (["--n", "0"], "argument --n: expected an integer >= 1"),
        (["--num-queries", "-3"], "argument --num-queries: expected an integer >= 1"),
        (["--temperature", "0"], "argument --temperature: expected a number > 0"),
        (["--base", "/nonexistent"], "--base /nonexistent: neither a built-in base (tiny-arith"),
        (["--set", "algo.beta=0.1"], "rlvr eval takes only task.operands"),
        (["--set", "task.operands=zero"], "task.operands"),
        (["--set", "task.operands=1"], "task.operands"),
        (["--task", "nope"], "argument --task: invalid choice: 'nope' (choose from 'arith', 'jsonl', 'hf'"),
        (["--task", "funcsynth", "--set", "task.operands=5"], "rlvr eval takes only task.data_seed"),
        (["--task", "jsonl"], "task.name=jsonl needs task.train_path and task.eval_path"),
    ],
)
def test_user_errors_exit_2_with_one_line_and_no_traceback(args, message, base_model_dir, tmp_path, cli):
    done = cli("eval", "--model", str(base_model_dir), *args, "--out", str(tmp_path / "ev"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "ev").exists()


def test_missing_model_dir_is_a_user_error(tmp_path, cli):
    done = cli("eval", "--model", str(tmp_path / "nope"))
    assert done.returncode == 2 and "neither a built-in base (tiny-arith" in done.stderr


def test_set_evaluates_another_held_out_spec(tmp_path, cli):
    """--set task.operands=5: the held-out queries are the trainer's for that spec (longer chains)."""
    from rlvr.config import TaskConfig
    from rlvr.studies.passk_eval import evaluate_passk
    from rlvr.tasks.arith import ArithSpec, make_queries

    sets = ("--set", "task.operands=5", "--set", "rollout.max_new_tokens=64")
    done = cli("eval", "--model", "tiny-arith", "--n", "2", "--k", "1,2", "--num-queries", "3", *sets,
               "--out", str(tmp_path / "ev"), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert report["spec"]["operands"] == 5 and report["max_new_tokens"] == 64
    expected = make_queries(3, split="heldout", seed=0, spec=ArithSpec(operands=5))
    assert all(q.prompt.count("(") == 3 for q in expected)  # 5 operands: 4 operations, 3 parentheses
    direct = evaluate_passk("tiny-arith", base=None, task=TaskConfig(operands=5), n=2, ks=[1, 2], num_queries=3,
                            temperature=1.0, seed=0, out=tmp_path / "direct", progress=False,
                            max_new_tokens=64)  # fmt: skip
    assert direct["models"]["model"]["per_query"] == report["models"]["model"]["per_query"]


def test_any_registered_task_is_evaluated_and_cot_pass_at_k_is_unavailable_without_a_checker(tmp_path, cli):
    """funcsynth has no reasoning checker: its CoT-pass@k is null and the table says n/a, never 0."""
    out = tmp_path / "ev"
    done = cli("eval", "--task", "funcsynth", "--model", "tiny-arith", "--base", "tiny-arith", "--n", "2",
               "--k", "1,2", "--num-queries", "3", "--set", "task.data_seed=1", "--out", str(out), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "held-out funcsynth queries" in done.stdout and "n/a" in done.stdout
    assert "CoT-pass@k: unavailable for task 'funcsynth' (no reasoning checker)" in done.stdout
    report = json.loads((out / "eval.json").read_text())
    assert report["task"] == "funcsynth" and report["spec"] == {"data_seed": 1} and report["num_queries"] == 3
    assert all(m["cot_pass@k"] is None and len(m["pass@k"]) == 2 for m in report["models"].values())
    assert report["crossing"]["cot_pass@k"] is None
