"""`rlvr verify`: verify completions against their queries, JSONL in, a table and JSONL out."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlvr.cli.common import USAGE_ERROR, UsageError, add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "verify",
        run,
        help="verify completions against their queries (JSONL in, a table and JSONL results out)",
        description='Verify each row {"query": {dataset row}, "completion": "..."} of a JSONL file with '
        "the query's own verifier; print verdict and error-class counts and throughput. A bad row gets an "
        "error line naming it and the rest still run; exit code 2 if any row was bad. See docs/verifiers.md.",
        out="write one JSON result per row here (JSONL)",
    )
    p.add_argument("--input", required=True, help='JSONL file, one {"query", "completion"} object per line')
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object instead of a table")


def run(args: argparse.Namespace) -> int:
    from rlvr.verifiers.registry import close_verifiers
    from rlvr.verifiers.rows import verify_rows

    path = Path(args.input)
    if not path.is_file():
        raise UsageError(f"--input {path}: no such file")
    try:
        report = verify_rows(path.read_text(encoding="utf-8").splitlines())
    finally:
        close_verifiers()
    for record in report.records:
        if "bad_row" in record:
            print(f"rlvr verify: row {record['row']}: {record['bad_row']}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.summary()))
    else:
        print(f"rlvr verify: {len(report.records)} rows from {path}: {report.checked} checked, {report.bad} bad")
        print("\n".join(report.table_lines()))
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in report.records), encoding="utf-8")
        if not args.json:
            print(f"results: {args.out}")
    return USAGE_ERROR if report.bad else 0
