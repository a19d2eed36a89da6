"""The real `rlvr compare` command on a tiny budget: GRPO and DPO side by side, files, refusals."""

import json

import pytest
import yaml

TINY = ["--config", "configs/smoke.yaml", "--set", "train.threads=1", "--set", "task.num_eval=8"]


@pytest.mark.slow
def test_compare_grpo_and_dpo_end_to_end(tmp_path, cli):
    out = tmp_path / "cmp"
    done = cli(
        "compare",
        "--algorithms",
        "grpo,dpo",
        "--seeds",
        "0,1",
        "--steps",
        "8",
        *TINY,
        "--n",
        "4",
        "--num-queries",
        "6",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "[4/4] dpo, seed 1" in done.stdout  # progress names each run as it starts
    assert "| quantity | grpo | dpo | base model |" in done.stdout
    assert "| memory: reference_weights (peak, MiB) |" in done.stdout  # measured memory/* metrics, per component
    report = json.loads((out / "compare.json").read_text())
    assert report["seeds"] == [0, 1] and report["steps"] == 8 and report["k"] == [1, 2, 4]
    assert list(report["algorithms"]) == ["grpo", "dpo"]
    for name, algo in report["algorithms"].items():
        for seed in (0, 1):
            run = out / f"{name}-seed{seed}"
            cfg = yaml.safe_load((run / "config.yaml").read_text())
            assert cfg["algo"]["algorithm"] == name and cfg["train"]["seed"] == seed and cfg["train"]["steps"] == 8
            assert cfg["train"]["batch_queries"] == 4 and cfg["rollout"]["group_size"] == 4  # same budget
            assert {"pass@1"} <= set(json.loads((run / "summary.json").read_text())["final"])
            rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            assert len([r for r in rows if "reward" in r]) == 8
            if name == "dpo":
                assert all("dpo/pairs" in r for r in rows if "reward" in r)
        answer, cot = algo["pass@k"]["mean"], algo["cot_pass@k"]["mean"]
        assert answer == sorted(answer) and all(c <= a + 1e-12 for a, c in zip(answer, cot))
        assert algo["distinct_correct"]["mean"] >= algo["queries_solved"]["mean"] > 0
        assert algo["final_reward"]["std"] is not None and algo["reward_jitter"]["mean"] >= 0
        assert algo["memory"]["memory/policy_weights"]["mean"] > 0 and algo["wall_s"]["mean"] > 0
        # both hold the frozen reference (GRPO for its β = 0.04 KL, DPO always), as big as the policy
        assert algo["memory"]["memory/reference_weights"]["mean"] == algo["memory"]["memory/policy_weights"]["mean"]
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "compare.md").read_text().startswith("| quantity |")
    again = cli("compare", "--algorithms", "grpo,dpo", "--seeds", "0,1", "--steps", "9", *TINY, "--out", str(out))
    assert again.returncode == 2 and "holds a run of other settings (train.steps: 8 there, 9 now)" in again.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "0"], "reward spread across seeds needs at least 2"),
        (["--seeds", "0,0"], "repeats a seed"),
        (["--steps", "3"], "too few to measure reward stability"),
        (["--algorithms", "grpo,nope"], "unknown algorithm 'nope'"),
        (["--seeds", "0,x"], "expected comma-separated integers"),
        (["--n", "1"], "needs n >= 2"),
    ],
)
def test_budgets_too_small_and_bad_names_are_refused(args, message, tmp_path, cli):
    done = cli("compare", *args, "--out", str(tmp_path / "cmp"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "cmp").exists()
