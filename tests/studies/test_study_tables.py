"""A study's shipped raw data (studies/results/<study>.json) and the tables the pages show from it:
every marked table in README.md and docs/ is exactly what `rlvr reproduce --tables` prints, and
every number in it recomputes from the per-query counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlvr.studies.reproduce import STUDIES
from rlvr.studies.study_data import arm_row, marked, pass1, selfcheck_table, shipped, study_table

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_BLOCK = re.compile(r"<!-- study table: ([\w-]+) .*?-->\n.*?\n<!-- end study table -->", re.S)


def _blocks() -> list[tuple[str, str, str]]:
    """(page, study, the block as the page shows it) for every marked table."""
    return [
        (path.name, match.group(1), match.group(0))
        for path in PAGES
        for match in _BLOCK.finditer(path.read_text(encoding="utf-8"))
    ]


def test_every_marked_table_in_the_pages_is_the_one_its_data_gives():
    blocks = _blocks()
    assert {study for _, study, _ in blocks} >= set(shipped()), "a shipped study's table is missing from the pages"
    for page, study, shown in blocks:
        assert study in shipped(), f"{page}: a table of {study!r}, which ships no data"
        assert shown == marked(study, study_table(shipped()[study])), f"{page}: run `rlvr reproduce --tables`"


@pytest.mark.parametrize("name", list(shipped()))
def test_shipped_data_keeps_every_query_of_every_seed_and_arm(name: str):
    data = shipped()[name]
    study = STUDIES[name]
    assert data["schema"] == "rlvr.study/1" and data["falsifier"] == study.falsifier
    assert list(data["arms"]) == [arm.value for arm in study.arms]
    for arm, entry in data["arms"].items():
        assert entry["reward"] and len(entry["seeds"]) >= 3, arm
        for run in entry["seeds"]:
            counts = run["per_query"]
            assert len(counts["query_ids"]) == len(counts["base"]) == len(counts["trained"]) >= 50
            assert run["passk"]["sampling_seed"] == run["seed"]  # each seed's base is its own draw
            # the per-query counts give the curve the evaluation reported
            assert pass1(counts["trained"]) == pytest.approx(run["passk"]["model_pass@k"][0])
            assert pass1(counts["base"]) == pytest.approx(run["passk"]["base_pass@k"][0])


def _seed(seed: int, base: list[list[int]], trained: list[list[int]], clipped: float | None) -> dict:
    greedy = {"base": 1.0, "final": 0.9}
    return {"seed": seed, "per_query": {"base": base, "trained": trained}, "heldout": {"gold_greedy": greedy},
            "clipped_tokens": clipped}  # fmt: skip


def test_an_arm_row_is_recomputed_from_per_query_counts():
    entry = {
        "reward": "gold correctness",
        "seeds": [
            _seed(0, [[4, 1], [4, 3]], [[4, 4], [4, 3]], 0.01),  # 50% -> 87.5%
            _seed(1, [[4, 2], [4, 2]], [[4, 1], [4, 2]], 0.03),  # 50% -> 37.5%
        ],
    }
    row = arm_row("gold", entry)
    assert (
        row
        == "| gold | gold correctness | 50.0 ± 0.0 → 62.5 ± 35.4 | +12.5 ± 35.4 | 1 of 2 | 100.0 ± 0.0 → 90.0 ± 0.0 | 2.0 ± 1.4 |"
    )


def test_tables_print_from_shipped_data_or_a_study_folder(cli, tmp_path: Path):
    if shipped():
        printed = cli("reproduce", "--tables")
        assert printed.returncode == 0 and printed.stdout.strip() == "\n\n".join(
            marked(name, study_table(data)) for name, data in shipped().items()
        )
    missing = cli("reproduce", "length-bias", "--tables", "--out", str(tmp_path))
    assert missing.returncode == 2 and "length-bias.json: no such file" in missing.stderr
    data = {"arms": {"gold": {"reward": "r", "seeds": [_seed(0, [[2, 1]], [[2, 2]], None)]}}}
    data["arms"]["gold"]["seeds"][0]["passk"] = {"n": 2, "k": [1, 2]}
    (tmp_path / "length-bias.json").write_text(json.dumps(data))
    own = cli("reproduce", "length-bias", "--tables", "--out", str(tmp_path))
    assert own.returncode == 0 and "| gold | r | 50.0 → 100.0 | +50.0 | 1 of 1 |" in own.stdout
    (tmp_path / "self-verification.json").write_text('{"arms": {"gold": {}}}')
    broken = cli("reproduce", "self-verification", "--tables", "--out", str(tmp_path))
    assert broken.returncode == 2 and "not a study's data file" in broken.stderr
    unknown = cli("reproduce", "nope", "--tables")
    assert unknown.returncode == 2 and "unknown study 'nope'" in unknown.stderr
    if "length-bias" not in shipped():
        refused = cli("reproduce", "length-bias", "--tables")
        assert refused.returncode == 2 and "has no shipped data yet" in refused.stderr


def test_a_self_check_row_reads_the_first_and_last_steps_of_each_seed():
    """20 steps: the first 10 and the last 10, apart; a check's worth is checked minus unchecked."""

    def record(rate_early: float, rate_late: float, paid_early: float, paid_late: float) -> dict:
        return {
            "step": list(range(1, 21)),
            "selfcheck/rate": [rate_early] * 10 + [rate_late] * 10,
            "selfcheck/accuracy_checked": [0.5 + paid_early] * 10 + [None] + [0.5 + paid_late] * 9,
            "selfcheck/accuracy_unchecked": [0.5] * 20,
        }

    data = {"arms": {"gold": {"seeds": [{"curves": record(0.3, 0.1, 0.2, -0.1)},
                                        {"curves": record(0.5, 0.1, 0.1, -0.3)}]}}}  # fmt: skip
    (row,) = selfcheck_table(data).splitlines()[2:]
    assert row == "| gold | 40.0 ± 14.1 → 10.0 ± 0.0 | +15.0 ± 7.1 | -20.0 ± 14.1 |"
