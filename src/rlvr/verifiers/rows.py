"""Verify a file of ``{"query": {dataset row}, "completion": "..."}`` rows: what ``rlvr verify`` runs.

Good rows are grouped by verifier type and each group goes through ``verify_batch`` in one call,
so pooled verifiers (the python sandbox pool, the math workers) run them side by side. A bad row
(malformed JSON, no verification criteria, an unknown type) becomes a record naming the problem;
the others still run.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rlvr.types import Query
from rlvr.verifiers.registry import get_verifier, known_types


@dataclass
class VerifyReport:
    records: list[dict[str, Any]]
    """One per non-blank row, in file order: the result's fields, or ``bad_row`` with the reason."""
    wall_s: float
    checked: int = 0
    bad: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    error_classes: dict[str, int] = field(default_factory=dict)

    @property
    def checks_per_s(self) -> float:
        return self.checked / self.wall_s if self.wall_s > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "rows": len(self.records),
            "checked": self.checked,
            "bad": self.bad,
            "verdicts": self.verdicts,
            "error_classes": self.error_classes,
            "wall_s": round(self.wall_s, 3),
            "checks_per_s": round(self.checks_per_s, 1),
        }

    def table_lines(self) -> list[str]:
        """Rows per verdict and per error class, then the throughput, as `rlvr verify` prints them."""
        lines = []
        for title, counts in (("verdict", self.verdicts), ("error class", self.error_classes)):
            lines.append(f"  {title:<20} {'rows':>6}")
            lines.extend(f"  {name:<20} {count:>6}" for name, count in counts.items())
        lines.append(f"throughput: {self.checked} checks in {self.wall_s:.2f} s = {self.checks_per_s:.1f} checks/s")
        return lines


def parse_row(line: str) -> tuple[str | None, Any]:
    """(None, (query, completion)) for a good row, else (why it is bad, the query id or None)."""
    try:
        row = json.loads(line)
    except ValueError as error:
        return f"malformed JSON ({error})", None
    if (
        not isinstance(row, dict)
        or not isinstance(row.get("query"), dict)
        or not isinstance(row.get("completion"), str)
    ):
        return 'expected an object with "query" (an object) and "completion" (a string)', None
    query, query_id = row["query"], row["query"].get("id")
    criteria = query.get("verifier")
    if not isinstance(criteria, dict) or not isinstance(criteria.get("type"), str):
        return 'the query has no verification criteria (a "verifier" object with a "type")', query_id
    if criteria["type"] not in known_types():
        return f"unknown verifier type {criteria['type']!r}; known types: {', '.join(known_types())}", query_id
    query_id = "" if query_id is None else str(query_id)
    return None, (Query(query_id, str(query.get("prompt", "")), criteria), row["completion"])


def verify_rows(lines: list[str]) -> VerifyReport:
    """Parse and verify every non-blank line; see the module docstring."""
    started = time.perf_counter()
    records: list[dict[str, Any]] = []
    by_type: dict[str, list[tuple[int, Query, str]]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        problem, parsed = parse_row(line)
        if problem is not None:
            records.append({"row": number, "query_id": parsed, "bad_row": problem})
            continue
        query, completion = parsed
        by_type.setdefault(query.verifier["type"], []).append((len(records), query, completion))
        records.append({"row": number})
    for type_name, items in by_type.items():
        results = get_verifier(type_name).verify_batch([(query, completion) for _, query, completion in items])
        for (index, query, _), result in zip(items, results, strict=True):
            records[index] = {**records[index], "query_id": query.id or None, **result.to_dict()}
    checked = [r for r in records if "verdict" in r]
    return VerifyReport(
        records=records,
        wall_s=time.perf_counter() - started,
        checked=len(checked),
        bad=len(records) - len(checked),
        verdicts=dict(sorted(Counter(r["verdict"] for r in checked).items())),
        error_classes=dict(sorted(Counter(r["error_class"] for r in checked).items())),
    )
