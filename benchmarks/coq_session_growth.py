"""Time per Coq check as a session ages, with and without recycling, measured in one run.

    .venv/bin/python benchmarks/coq_session_growth.py               # 600 checks each way, about a minute on 2 cores
    .venv/bin/python benchmarks/coq_session_growth.py --checks 200  # a quick look

The coq verifier keeps one coqtop and undoes each check with `Reset`; what it undoes are the
definitions, not all of coqtop's bookkeeping, so every check runs a little slower than the one
before. This prints the seconds per 100 checks of rlvr.tasks.proofs' training lemmas (each proved
by its reference proof, all must pass) in one session that is never recycled for its count
(recycle_after_checks=0) and with the verifier's default recycling (RECYCLE_AFTER_CHECKS), the two
interleaved block by block, and the totals' ratio.
"""

from __future__ import annotations

import argparse
import time

from rlvr.tasks.proofs import make_queries, reference_proof
from rlvr.types import Verdict
from rlvr.verifiers.coq import RECYCLE_AFTER_CHECKS, CoqVerifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=600)
    args = parser.parse_args()
    queries = make_queries(args.checks, split="train", seed=0)
    verifiers = {"never recycled": CoqVerifier(recycle_after_checks=0),
                 f"recycled every {RECYCLE_AFTER_CHECKS}": CoqVerifier()}  # fmt: skip
    totals = dict.fromkeys(verifiers, 0.0)
    print(f"{'checks':>10} " + " ".join(f"{name:>22}" for name in verifiers) + "   (seconds per block)")
    for first in range(0, args.checks, 100):
        block = queries[first : first + 100]
        row = []
        for name, verifier in verifiers.items():
            start = time.perf_counter()
            for query in block:
                result = verifier.verify(query, f"<answer>{reference_proof(query)}</answer>")
                assert result.verdict == Verdict.PASS, (query.id, result)
            seconds = time.perf_counter() - start
            totals[name] += seconds
            row.append(f"{seconds:22.2f}")
        print(f"{first:>4}-{first + len(block) - 1:<5} " + " ".join(row))
    never, recycled = totals.values()
    print(f"{'total':>10} " + " ".join(f"{t:22.2f}" for t in totals.values()) + f"   ratio {never / recycled:.2f}x")
    for name, verifier in verifiers.items():
        print(f"{name}: {verifier.sessions_started} sessions started")
        verifier.close()


if __name__ == "__main__":
    main()
