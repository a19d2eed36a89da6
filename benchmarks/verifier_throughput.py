"""Checks per second of the sandboxed python verifier (pooled vs a fresh sandbox per check) and of
the math verifier, measured in one run on this machine.

    python benchmarks/verifier_throughput.py            # ~1 min on 2 cores
    python benchmarks/verifier_throughput.py --quick    # smoke check, ~15 s

The python task has 10 tests; every check runs a distinct (but correct) completion so that
nothing can be reused between checks. Modes, interleaved over R rounds, medians reported:

- pool: ``PythonVerifier(isolation="pool")``, one ``verify_batch`` over all checks (the trainer's
  call), with ``--slots`` pre-forked slots (default: one per core).
- fresh: ``PythonVerifier(isolation="fresh")``: a new bubblewrap sandbox and interpreter per check,
  one at a time; and fresh-parallel: the same from ``--slots`` threads at once, the best a
  fresh-per-check harness can do on these cores.

Layers (``--layers``): what each namespace a pool job gets of its own costs. The same pooled
check with each job in a new mount namespace only (fresh tmpfs and /proc, the floor of the design),
then with each of pid, ipc, uts and net added alone, then the default set (pool.JOB_LAYERS: pid,
ipc and uts; jobs make unix sockets only, which stands in for a network namespace). Each row's
cost is the time per check above the floor's.

Math: ``MathVerifier.verify_batch`` over distinct answers, none cached (there is no cache): plain
integers and fractions of integers written another way than the reference (both judged exactly
in-process), and surds that only a symbolic comparison can match (math-verify, in its worker
processes).

The machine is shared: the headline is the ratio measured in the same run, and the load average is
printed beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from rlvr.sandbox.pool import JOB_LAYERS, SandboxPool
from rlvr.types import Query, Verdict
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.python import DRIVER, PythonVerifier

QUERY = Query(
    "bench",
    "",
    {
        "type": "python",
        "entry_point": "f",
        "tests": [{"args": [x], "expected": x * x + 3 * x - 7} for x in range(-5, 0)],
        "hidden_tests": [{"args": [x], "expected": x * x + 3 * x - 7} for x in range(1, 6)],
    },
)


def python_items(count: int, salt: str) -> list[tuple[Query, str]]:
    return [
        (QUERY, f"def f(x):\n    # candidate {salt}-{i}\n    return x * x + 3 * x - {7 + 0 * i}\n")
        for i in range(count)
    ]


def fraction_items(count: int, salt: int) -> list[tuple[Query, str]]:
    """\\frac{n}{d} answered as 2n/2d: equal, written differently (judged as exact rationals)."""
    items = []
    for i in range(count):
        numerator, denominator = 2 * i + 1 + salt, 2 * i + 3 + salt  # coprime (consecutive odd numbers)
        query = Query(f"m{i}", "", {"type": "math", "answer": f"\\frac{{{numerator}}}{{{denominator}}}"})
        items.append((query, f"<answer>{2 * numerator}/{2 * denominator}</answer>"))
    return items


def symbolic_items(count: int, salt: int) -> list[tuple[Query, str]]:
    """k*sqrt(2) answered as sqrt(2k^2): only a symbolic comparison (math-verify) can tell."""
    return [
        (
            Query(f"s{i}", "", {"type": "math", "answer": f"{i + salt}\\sqrt{{2}}"}),
            f"<answer>\\sqrt{{{2 * (i + salt) ** 2}}}</answer>",
        )
        for i in range(count)
    ]


LAYER_ROWS = {
    "mount namespace only (the floor)": (),
    "+ pid namespace": ("pid",),
    "+ ipc namespace": ("ipc",),
    "+ uts namespace": ("uts",),
    "+ net namespace": ("net",),
    f"default ({', '.join(JOB_LAYERS)})": JOB_LAYERS,
}


def layered(layers: tuple[str, ...], slots: int) -> PythonVerifier:
    """The pooled python verifier with each job given ``layers`` (the benchmark's pricing knob)."""
    verifier = PythonVerifier(isolation="pool", slots=slots)
    verifier._pool = SandboxPool({"python": DRIVER}, slots=slots, layers=layers)
    return verifier


def layer_costs(slots: int, checks: int, rounds: int) -> None:
    """Checks/s for each LAYER_ROWS set, interleaved over ``rounds``, and ms per check over the floor."""
    verifiers = {label: layered(layers, slots) for label, layers in LAYER_ROWS.items()}
    rates: dict[str, list[float]] = {label: [] for label in verifiers}
    for label, verifier in verifiers.items():
        rate(verifier.verify_batch, python_items(2 * slots, f"warm-{label}"))
    for r in range(rounds):
        for label, verifier in verifiers.items():
            rates[label].append(rate(verifier.verify_batch, python_items(checks, f"l{r}-{label}")))
    for verifier in verifiers.values():
        verifier.close()
    median = {label: statistics.median(values) for label, values in rates.items()}
    floor = median["mount namespace only (the floor)"]
    print(
        f"\npool job layers ({slots} slots, {checks} checks x {rounds} rounds, load average {os.getloadavg()[0]:.2f})"
    )
    print(f"{'each job gets':<40}{'checks/s':>10}{'ms/check over floor':>22}")
    for label, value in median.items():
        extra = slots * 1000 * (1 / value - 1 / floor)  # per slot: a slot runs one check at a time
        print(f"{label:<40}{value:>10.0f}{extra:>22.2f}")


def rate(fn, items) -> float:
    start = time.perf_counter()
    results = fn(items)
    elapsed = time.perf_counter() - start
    bad = [r for r in results if r.verdict is not Verdict.PASS]
    if bad:
        raise SystemExit(f"benchmark answer did not pass: {bad[0]}")
    return len(items) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pool-checks", type=int, default=600)
    parser.add_argument("--fresh-checks", type=int, default=40)
    parser.add_argument("--math-checks", type=int, default=2000)
    parser.add_argument("--symbolic-checks", type=int, default=200)
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--quick", action="store_true", help="1 round, fewer checks")
    parser.add_argument("--layers", action="store_true", help="also price each namespace a pool job gets")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.pool_checks, args.fresh_checks, args.math_checks, args.symbolic_checks = 1, 150, 10, 300, 40

    pooled = PythonVerifier(isolation="pool", slots=args.slots)
    fresh = PythonVerifier(isolation="fresh")
    maths = MathVerifier()
    # Warm-up (not timed): slots start, the self-checks run, math workers load their grammar.
    rate(pooled.verify_batch, python_items(2 * args.slots, "warm"))
    rate(fresh.verify_batch, python_items(1, "warm"))
    rate(maths.verify_batch, symbolic_items(10, 10**6))

    def fresh_parallel(items):
        with ThreadPoolExecutor(args.slots) as threads:
            return list(threads.map(lambda item: fresh.verify(*item), items))

    rates: dict[str, list[float]] = {
        name: [] for name in ("pool", "fresh", "fresh_parallel", "math_int", "math_fraction", "math_symbolic")
    }
    for r in range(args.rounds):
        rates["pool"].append(rate(pooled.verify_batch, python_items(args.pool_checks, f"p{r}")))
        rates["fresh"].append(rate(fresh.verify_batch, python_items(args.fresh_checks, f"f{r}")))
        rates["fresh_parallel"].append(rate(fresh_parallel, python_items(args.fresh_checks, f"q{r}")))
        ints = [
            (Query(f"i{i}", "", {"type": "math", "answer": str(i)}), f"<answer>+{i}</answer>")
            for i in range(args.math_checks)
        ]
        rates["math_int"].append(rate(maths.verify_batch, ints))
        rates["math_fraction"].append(rate(maths.verify_batch, fraction_items(args.math_checks, 1000 * (r + 1))))
        rates["math_symbolic"].append(rate(maths.verify_batch, symbolic_items(args.symbolic_checks, 1000 * (r + 1))))
    pooled.close()
    maths.close()

    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"cores {os.cpu_count()}, slots {args.slots}, rounds {args.rounds}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'verifier':<40}{'checks/s':>10}")
    rows = [
        ("python, 10 tests, pooled sandbox", "pool"),
        ("python, 10 tests, fresh sandbox", "fresh"),
        (f"python, 10 tests, fresh sandbox x{args.slots} threads", "fresh_parallel"),
        ("math, integers (exact, in-process)", "math_int"),
        ("math, fractions (exact, in-process)", "math_fraction"),
        ("math, surds (math-verify workers)", "math_symbolic"),
    ]
    for label, key in rows:
        print(f"{label:<40}{median[key]:>10.0f}")
    print(
        f"pooled / fresh: {median['pool'] / median['fresh']:.1f}x; "
        f"pooled / fresh x{args.slots} threads: {median['pool'] / median['fresh_parallel']:.1f}x"
    )
    if args.layers:
        layer_costs(args.slots, args.pool_checks, args.rounds)


if __name__ == "__main__":
    main()
