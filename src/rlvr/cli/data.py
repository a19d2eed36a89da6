"""`rlvr data check`: validate every row of a dataset file before training on it."""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from rlvr.cli.common import UsageError
from rlvr.config import HfFormat

if typing.TYPE_CHECKING:
    from rlvr.tasks.hf import ColumnMap


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="check a dataset file before training on it")
    data = p.add_subparsers(dest="data_command", required=True)
    check = data.add_parser(
        "check",
        help="validate every row of a dataset file and name each bad one",
        description="Read FILE as training would read it and validate every row, not stopping at the first "
        "bad one: print how many rows are good and each bad row (a repeated id and an unknown verifier "
        "type included). Exit code 0 when every row is good, 2 otherwise. See docs/integrations.md.",
    )
    check.add_argument("file", metavar="FILE", help="a dataset file (or a directory in Hugging Face layout)")
    check.add_argument(
        "--format",
        dest="file_format",
        default="rows",
        choices=("rows", *typing.get_args(HfFormat)),
        help="rows: rlvr JSONL rows {id, prompt, verifier} (task.name=jsonl, the default); columns, gsm8k, "
        "math: a .jsonl/.json/.parquet/.csv file mapped as task.name=hf with that task.hf_format",
    )
    check.add_argument("--prompt-column", metavar="C", help="prompt column (task.hf_prompt_column)")
    check.add_argument("--answer-column", metavar="C", help="answer or solution column (task.hf_answer_column)")
    check.add_argument("--verifier-column", metavar="C", help="column of full criteria (task.hf_verifier_column)")
    check.add_argument("--id-column", metavar="C", help="column of row ids (task.hf_id_column)")
    check.add_argument("--split", help="split of a directory in Hugging Face layout (default train)")
    check.set_defaults(func=run_check)


def _columns(args: argparse.Namespace, path: Path) -> ColumnMap | None:
    """The column mapping the flags give (None for rlvr rows); flags that do not fit are a UsageError."""
    from rlvr.tasks.hf import ColumnMap

    named = (args.prompt_column, args.answer_column, args.verifier_column, args.id_column)
    if args.file_format == "rows":
        if any(named) or args.split:
            raise UsageError("--format rows reads rlvr rows, which have no columns to map or splits; drop the "
                             "column and --split flags, or pick --format columns, gsm8k or math")  # fmt: skip
        if path.suffix in (".parquet", ".csv") or path.is_dir():
            kind = "a directory" if path.is_dir() else f"a {path.suffix} file"
            raise UsageError(f"{path}: --format rows reads one JSONL file; for {kind} pass --format columns, "
                             "gsm8k or math")  # fmt: skip
        return None
    if args.split and path.is_file():
        raise UsageError(f"--split {args.split}: {path} is a single file (one split); --split picks one of a directory")
    if args.verifier_column and args.file_format != "columns":
        raise UsageError(f"--format {args.file_format} cuts the answer out of a solution column; --verifier-column "
                         "gives whole criteria instead: use it with --format columns")  # fmt: skip
    prompt, answer, verifier, id_column = (name or "" for name in named)
    return ColumnMap.for_format(args.file_format, prompt=prompt, answer=answer, verifier=verifier, id=id_column)


def run_check(args: argparse.Namespace) -> int:
    from rlvr.tasks.check import check_file
    from rlvr.tasks.dataset import DatasetError
    from rlvr.verifiers.registry import close_verifiers, criteria_problem, known_types

    path = Path(args.file)
    columns = _columns(args, path)
    try:
        report = check_file(
            path,
            args.file_format,
            columns=columns,
            split=args.split or "train",
            verifier_types=known_types(),
            criteria_problem=criteria_problem,
        )
    finally:
        close_verifiers()
    source = f"{path} [{args.split or 'train'}]" if path.is_dir() else str(path)
    print(f"rlvr data check: {source} (format {args.file_format}): {report.good} of {report.rows} rows good")
    for line in report.problem_lines(limit=20):
        print(f"  {line}")
    if report.problems:
        raise DatasetError(f"{path}: {len(report.problems)} of {report.rows} rows are bad ({report.numbering})")
    return 0
