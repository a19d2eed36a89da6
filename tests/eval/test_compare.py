"""The pure numbers of `rlvr compare` on hand-made metric rows."""

import math

from rlvr.algos import ALGORITHMS
from rlvr.eval.compare import (
    NOT_MEASURED,
    final_reward,
    format_table,
    peak_memory,
    reward_jitter,
    step_rewards,
    summarize_algorithm,
)
from rlvr.studies.compare import DEFAULT_ALGORITHMS, known_algorithms, resolve_algorithms


def test_jitter_and_final_reward_by_hand():
    # rewards 0.2, 0.6, 0.4, 0.4: changes 0.4, 0.2, 0.0 → jitter 0.2; last quarter (1 step) → 0.4
    rewards = [0.2, 0.6, 0.4, 0.4]
    assert math.isclose(reward_jitter(rewards), 0.2)
    assert final_reward(rewards) == 0.4
    # 8 steps: the last quarter is the last 2 steps
    assert math.isclose(final_reward([0, 0, 0, 0, 0, 0, 0.5, 1.0]), 0.75)
    assert reward_jitter([0.5]) is None and final_reward([]) is None


def test_a_steady_trend_has_less_jitter_than_noise_of_the_same_range():
    trend = [i / 10 for i in range(11)]  # 0 → 1 in steps of 0.1
    noise = [0.0, 1.0] * 5 + [0.0]  # the same range, jumping every step
    assert reward_jitter(trend) < reward_jitter(noise) / 5


def test_step_rewards_skip_eval_rows_and_nulls():
    rows = [{"step": 1, "reward": 0.5}, {"step": 2, "reward": None}, {"step": 2, "eval/pass@1": 0.3}]
    assert step_rewards(rows) == [0.5]


def test_memory_is_the_logged_peak_or_not_measured():
    rows = [{"memory/params_bytes": 10, "memory/activations_bytes": 5}, {"memory/activations_bytes": 7, "reward": 1}]
    assert peak_memory(rows) == {"memory/params_bytes": 10, "memory/activations_bytes": 7}
    assert peak_memory([{"reward": 1.0}]) == {}


def _run(seed, rewards, memory=None, passk=(0.5, 0.75), cot=(0.25, 0.5)):
    rows = [
        {
            "step": i + 1,
            "reward": r,
            "explore/distinct_correct": 3 * (i + 1),
            "explore/queries_solved": i + 1,
            **(memory or {}),
        }
        for i, r in enumerate(rewards)
    ]
    return {
        "seed": seed,
        "rows": rows,
        "wall_s": 10.0 + seed,
        "passk": {"pass@k": list(passk), "cot_pass@k": list(cot)},
    }


def test_summary_over_seeds_by_hand():
    runs = [_run(0, [0.0, 0.5, 0.5, 1.0]), _run(1, [0.0, 0.0, 0.5, 0.5], passk=(0.3, 0.55))]
    summary = summarize_algorithm(runs)
    # final rewards 1.0 and 0.5: mean 0.75, Bessel std sqrt(((0.25)^2 * 2) / 1) = 0.3536
    assert math.isclose(summary["final_reward"]["mean"], 0.75)
    assert math.isclose(summary["final_reward"]["std"], math.sqrt(0.125))
    # jitter: (0.5 + 0 + 0.5) / 3 = 1/3 and (0 + 0.5 + 0) / 3 = 1/6 → mean 0.25
    assert math.isclose(summary["reward_jitter"]["mean"], 0.25)
    assert summary["distinct_correct"]["mean"] == 12 and summary["queries_solved"]["mean"] == 4
    assert math.isclose(summary["pass@k"]["mean"][0], 0.4) and math.isclose(summary["pass@k"]["mean"][1], 0.65)
    assert summary["memory"] == NOT_MEASURED and summary["wall_s"]["mean"] == 10.5


def test_table_says_not_measured_and_shows_logged_memory():
    plain = summarize_algorithm([_run(0, [0.1, 0.2]), _run(1, [0.2, 0.3])])
    measured = summarize_algorithm(
        [_run(s, [0.1, 0.2], memory={"memory/policy_weights": (1 + s) * 2**20}) for s in (0, 1)]
    )
    report = {"k": [1, 2], "algorithms": {"grpo": plain, "dpo": measured}, "base": None}
    table = format_table(report)
    lines = table.splitlines()
    assert lines[0] == "| quantity | grpo | dpo |"
    memory_line = next(line for line in lines if line.startswith("| memory: policy_weights (peak, MiB)"))
    assert "not measured" in memory_line and "1.50 ± 0.71" in memory_line  # 1 and 2 MiB over two seeds
    assert all(line.count("|") == 4 for line in lines)  # no cell breaks the Markdown table


def test_default_algorithms_are_those_the_registry_has():
    run, skipped = resolve_algorithms(None)
    assert set(ALGORITHMS) <= set(known_algorithms())
    assert run == [a for a in DEFAULT_ALGORITHMS if a in known_algorithms()] and "grpo" in run and "dpo" in run
    assert set(run) | set(skipped) == set(DEFAULT_ALGORITHMS) and not set(run) & set(skipped)
