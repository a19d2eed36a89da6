"""Dataset layouts (task.hf_format): GSM8K and MATH answers cut out of their solutions, the same
rows read from JSONL, Parquet and CSV files, and every bad row named by the checker."""

from __future__ import annotations

import json
import re
import typing

import pytest

from rlvr.config import ConfigError, HfFormat, TaskConfig, load_config
from rlvr.tasks import load_task
from rlvr.tasks.check import check_file
from rlvr.tasks.dataset import DatasetError
from rlvr.tasks.formats import FORMATS, AnswerNotFound, boxed_answer, gsm8k_answer
from rlvr.tasks.hf import ColumnMap, load_hf_queries
from rlvr.verifiers import RewardFunction

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("datasets")

# The first record of GSM8K's train split (openai/gsm8k, "main" config), calculator annotations kept.
NATALIA = {
    "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
}
GSM8K = [
    NATALIA,
    {"question": "A town has 1,000 houses and builds 234 more. How many now?", "answer": "1000+234=1234\n#### 1,234"},
]
MATH = [
    {"problem": "What is $\\frac{1}{4} + \\frac{1}{4}$?", "solution": "It is $\\boxed{\\frac{1}{2}}$.", "level": "1"},
    {"problem": "Solve $x - 3 = 4$.", "solution": "Add 3: $x = 7$, so $x = \\boxed{7}$.", "level": "1"},
]


def write(path, records):
    """``records`` as the file type ``path`` names: JSON Lines, Parquet or CSV."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
    elif path.suffix == ".parquet":
        pd.DataFrame.from_records(records).to_parquet(path)
    else:
        pd.DataFrame.from_records(records).to_csv(path, index=False)  # quotes the multi-line solutions
    return path


@pytest.mark.parametrize(
    "solution, answer",
    [
        (NATALIA["answer"], "72"),
        ("... so 1,234 in all.\n#### 1,234", "1234"),  # thousands separators go
        ("#### 1,234,567", "1234567"),
        ("#### -3", "-3"),
        ("#### 1,2", "1,2"),  # not a thousands separator: two digits follow the comma
        ("wrong: #### 5\nfixed: #### 6", "6"),  # the last marker counts
        ("####7", "7"),
    ],
)
def test_gsm8k_answer_is_the_text_after_the_last_marker(solution, answer):
    assert gsm8k_answer(solution) == answer


@pytest.mark.parametrize(
    "solution, answer",
    [
        ("so $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),  # nested braces kept
        ("$\\boxed{\\frac{\\sqrt{3}}{2}}$", "\\frac{\\sqrt{3}}{2}"),
        ("first $\\boxed{3}$, then $\\boxed{4}$", "4"),  # the last box counts
        ("$\\boxed{1}$ and finally \\fbox{2}", "2"),
        ("$\\boxed{\\{1, 2\\}}$", "\\{1, 2\\}"),  # \{ and \} are literal braces, not grouping
        ("$\\boxed{\\left\\{ x \\right.}$", "\\left\\{ x \\right."),  # a lone \{ opens no group
        ("$\\boxed 5$.", "5"),  # no braces: up to the '$'
        ("$\\boxed {x + 1}$", "x + 1"),
        ("$\\boxed{\\text{(C)}}$ \\boxedtext{9}", "\\text{(C)}"),  # \boxedtext is another command
    ],
)
def test_math_answer_is_the_last_box(solution, answer):
    assert boxed_answer(solution) == answer


@pytest.mark.parametrize(
    "extract, solution, reason",
    [
        (gsm8k_answer, "The answer is 72.", "no '####'"),
        (gsm8k_answer, "so #### \n", "nothing after the last '####'"),
        (boxed_answer, "The answer is $7$.", "no \\boxed{...}"),
        (boxed_answer, "$\\boxed{\\frac{1}{2}$", "unbalanced braces"),
        (boxed_answer, "$\\boxed{}$", "is empty"),
    ],
)
def test_a_solution_without_an_answer_says_why(extract, solution, reason):
    with pytest.raises(AnswerNotFound, match=re.escape(reason)):
        extract(solution)


def test_every_config_format_has_a_layout_and_columns_keeps_the_config_defaults():
    assert set(FORMATS) == set(typing.get_args(HfFormat))
    assert (FORMATS["columns"].prompt_column, FORMATS["columns"].answer_column) == (
        TaskConfig().hf_prompt_column,
        TaskConfig().hf_answer_column,
    )
    # A column left at its default takes the layout's; one the user named stays.
    assert ColumnMap.for_format("gsm8k", prompt="prompt") == ColumnMap("question", "answer", layout="gsm8k")
    assert ColumnMap.for_format("math") == ColumnMap("problem", "solution", layout="math")
    assert ColumnMap.for_format("math", prompt="q", answer="worked").prompt == "q"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_gsm8k_rows_from_each_file_type_are_scored_by_the_math_verifier(tmp_path, suffix):
    queries = load_hf_queries(write(tmp_path / f"gsm8k{suffix}", GSM8K), "train", ColumnMap.for_format("gsm8k"))
    assert [(q.id, q.prompt, q.verifier) for q in queries] == [
        ("train-0", NATALIA["question"], {"type": "math", "answer": "72"}),
        ("train-1", GSM8K[1]["question"], {"type": "math", "answer": "1234"}),
    ]
    reward = RewardFunction()
    assert reward.score(queries[1], "1000 + 234 <answer>1234</answer>").reward == 1.0
    assert reward.score(queries[1], "<answer>1243</answer>").reward == 0.0


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_math_rows_keep_latex_answers_that_the_verifier_compares_by_value(tmp_path, suffix):
    queries = load_hf_queries(write(tmp_path / f"math{suffix}", MATH), "train", ColumnMap.for_format("math"))
    assert [q.verifier["answer"] for q in queries] == ["\\frac{1}{2}", "7"]
    reward = RewardFunction()
    assert reward.score(queries[0], "<answer>0.5</answer>").reward == 1.0  # 1/2 as a decimal: the same value
    assert reward.score(queries[0], "<answer>\\frac{1}{3}</answer>").reward == 0.0


def test_task_config_reads_a_gsm8k_directory_without_naming_columns(tmp_path):
    data = tmp_path / "gsm8k" / "main"
    data.mkdir(parents=True)
    write(data / "train-00000-of-00001.parquet", GSM8K)
    write(data / "test-00000-of-00001.parquet", GSM8K[:1])
    cfg = load_config(None, ["task.name=hf", f"task.hf_path={tmp_path / 'gsm8k'}", "task.hf_format=gsm8k"])
    train, heldout = load_task(cfg.task)
    assert [q.verifier["answer"] for q in train] == ["72", "1234"]
    assert [(q.id, q.verifier["answer"]) for q in heldout] == [("test-0", "72")]
    with pytest.raises(ConfigError, match="task.hf_format=gsm8k cuts the answer.*task.hf_verifier_column=c"):
        load_config(None, ["task.name=hf", "task.hf_path=x", "task.hf_format=gsm8k", "task.hf_verifier_column=c"])


def test_training_stops_at_the_first_bad_row_and_names_its_file_and_line_or_index(tmp_path):
    path = write(tmp_path / "gsm8k.csv", [*GSM8K, {"question": "2+2?", "answer": "It is 4."}])
    with pytest.raises(DatasetError) as error:
        load_hf_queries(path, "train", ColumnMap.for_format("gsm8k"))
    # The header is line 1; Natalia's three-line solution takes lines 2-4, the next record 5-6.
    assert f"{path}:7: column 'answer' (task.hf_format=gsm8k): no '####'" in str(error.value)
    path = write(tmp_path / "math.parquet", [{"problem": "p", "solution": "$\\boxed{\\frac{1}{2}$"}, *MATH])
    with pytest.raises(DatasetError, match=r"math.parquet row index 0: .*unbalanced braces"):
        load_hf_queries(path, "train", ColumnMap.for_format("math"))


def test_the_checker_names_every_bad_row_of_an_hf_file(tmp_path):
    records = [
        GSM8K[0],
        {"question": "no marker", "answer": "just 5"},
        GSM8K[1],
        {"question": "", "answer": "#### 3"},
        {"question": "empty", "answer": "#### "},
    ]
    report = check_file(write(tmp_path / "gsm8k.parquet", records), "gsm8k")
    assert report.good == 2 and report.rows == 5
    assert [place.number for place, _ in report.problems] == [1, 3, 4]  # Parquet: row indices from 0
    assert "no '####'" in report.problems[0][1] and "column 'question' must be non-empty text" in report.problems[1][1]
    assert report.numbering == "row indices count from 0"
    assert report.problem_lines()[0].startswith("row index 1: column 'answer'")


def test_the_checker_names_every_bad_jsonl_row_including_repeated_ids(tmp_path):
    good = {"id": "a", "prompt": "1+1", "verifier": {"type": "math", "answer": "2"}}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"id": "b", "prompt": "2+2"}),
        "",  # blank lines are skipped, but still counted: row numbers are line numbers
        json.dumps({**good, "prompt": "again"}),
        json.dumps({**good, "id": "c", "verifier": {"type": "maths", "answer": "2"}}),
        json.dumps({**good, "id": "d"}),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = check_file(path, verifier_types={"math", "python"})
    assert report.good == 2 and report.rows == 6
    assert [place.number for place, _ in report.problems] == [2, 3, 5, 6]
    reasons = {place.number: reason for place, reason in report.problems}
    assert reasons[2].startswith("not valid JSON") and reasons[3].startswith("missing 'verifier'")
    assert reasons[5] == "id 'a' repeats the one on line 1 (ids must be unique)"
    assert reasons[6] == "unknown verifier type 'maths'; known types: math, python"
    assert check_file(path).good == 3  # without known types, 'maths' is not checked


def test_the_checker_lists_twenty_bad_rows_then_counts_the_rest(tmp_path):
    path = write(tmp_path / "math.jsonl", [{"problem": f"p{i}", "solution": "no box"} for i in range(23)])
    lines = check_file(path, "math").problem_lines(limit=20)
    assert len(lines) == 21 and lines[0].startswith("line 1: column 'solution'") and lines[-1] == "... and 3 more"


def test_the_checker_stops_only_when_no_row_can_be_read(tmp_path):
    path = write(tmp_path / "qa.csv", [{"q": "1+1", "a": 2}])
    with pytest.raises(DatasetError, match=r"no column 'question' \(task.hf_prompt_column\); columns: q, a"):
        check_file(path, "gsm8k")
    with pytest.raises(DatasetError, match="not found"):
        check_file(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match="empty.jsonl: no rows"):
        check_file(tmp_path / "empty.jsonl")
