"""Checks per second of the coq verifier (one persistent coqtop) against a fresh `coqc` per check,
both in the bubblewrap sandbox, measured in one run on this machine.

    .venv/bin/python benchmarks/coq_throughput.py              # about a minute on 2 cores
    .venv/bin/python benchmarks/coq_throughput.py --checks 5   # a quick look

Two row kinds: a boolean lemma with no preamble (`negb (negb b) = b`, `destruct b; reflexivity`)
and a linear-arithmetic lemma whose preamble is `Require Import Lia` (`intros; lia`). Each check
proves a distinct statement (the constant differs), so nothing is reused but what the verifier
keeps on purpose: the session and the loaded preamble. The fresh baseline writes the same file the
verifier's protocol amounts to (preamble, module, statement, proof, Print Assumptions) and runs
`coqc` on it in a new sandbox, the way the lean verifier runs `lean`.

The machine is shared: the headline is the ratio measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from rlvr.sandbox import SandboxLimits, run_untrusted
from rlvr.types import Query, Verdict
from rlvr.verifiers.coq import CoqVerifier
from rlvr.verifiers.coq_session import FINDLIB_CONF, findlib_conf

KINDS = {
    "bool (no preamble)": ("", "Theorem t{i} : forall b : bool, negb (negb b) = b /\\ {i} = {i}.", "intros b. split. destruct b; reflexivity. reflexivity."),
    "lia (Require Import Lia)": ("Require Import Lia.", "Theorem t{i} : forall n : nat, n + {i} >= {i}.", "intros. lia."),
}  # fmt: skip


def fresh_check(preamble: str, statement: str, proof: str, name: str) -> bool:
    source = f"{preamble}\nModule M.\n{statement}\nProof.\n{proof}\nQed.\nEnd M.\nPrint Assumptions M.{name}.\n"
    run = run_untrusted(
        [shutil.which("coqc") or "coqc", "-q", "/sandbox/P.v"],
        files={"/sandbox/P.v": source.encode(), FINDLIB_CONF: findlib_conf()},
        env={"OCAMLFIND_CONF": FINDLIB_CONF},
        limits=SandboxLimits(wall_s=60, cpu_s=60, memory_mb=4096, processes=8),
    )
    return run.exit_code == 0 and b"Closed under the global context" in run.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=20)
    args = parser.parse_args()
    verifier = CoqVerifier()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.checks} checks per kind and mode")
    for kind, (preamble, statement, proof) in KINDS.items():
        rows = [
            Query(f"q{i}", "", {"type": "coq", "statement": statement.format(i=i), "preamble": preamble})
            for i in range(args.checks)
        ]
        verifier.verify(rows[0], f"<answer>{proof}</answer>")  # start the session, load the preamble
        started = time.perf_counter()
        results = [verifier.verify(row, f"<answer>{proof}</answer>") for row in rows]
        persistent = time.perf_counter() - started
        assert all(r.verdict is Verdict.PASS for r in results), [
            r.detail for r in results if r.verdict is not Verdict.PASS
        ]
        started = time.perf_counter()
        passed = [fresh_check(preamble, statement.format(i=i), proof, f"t{i}") for i in range(args.checks)]
        fresh = time.perf_counter() - started
        assert all(passed)
        print(
            f"{kind:26s} persistent coqtop {args.checks / persistent:7.1f} checks/s   "
            f"fresh coqc {args.checks / fresh:6.2f} checks/s   ratio {fresh / persistent:6.1f}x"
        )
    verifier.close()


if __name__ == "__main__":
    main()
