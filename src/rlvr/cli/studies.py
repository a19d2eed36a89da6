"""The commands that run many trainings: `rlvr atlas`, `rlvr sweep`, `rlvr compare`, `rlvr reproduce`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rlvr.cli.common import Flag, RegistryHelp, UsageError, add_command, add_quiet, quiet_hugging_face
from rlvr.cli.validators import SEEDS, int_at_least, int_list, name_list

JOBS_HELP = "runs side by side, one torch thread each (default: one per core)"


def _command_line(name: str) -> str | None:
    """The `rlvr NAME ...` line that started this process, for the study's record; None in-process."""
    return f"rlvr {name} " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 and sys.argv[1] == name else None


def add_atlas_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "atlas",
        run_atlas,
        help="real runs around the default config, one knob at a time (fidelity, algorithm, G, beta, lr, "
        "max_staleness), for the lab",
        description="Train every value of every knob (verifier fidelity, algorithm, G, beta, learning rate, "
        "max_staleness) "
        "around the default configuration, a few seeds each, several single-thread runs side by side; "
        "finished runs are kept and interrupted ones resume. Writes <out>/runs/ and <out>/atlas.json (the index "
        "and each run's small results; the lab reads the runs, and the package ships one such file).",
        out=Flag("atlas folder: runs/ and atlas.json", required=True),
    )
    p.add_argument(
        "--knobs",
        type=name_list,
        help="comma-separated knobs to build (default: all of fidelity, algorithm, group_size, beta, lr, "
        "max_staleness)",
    )
    p.add_argument("--seeds", type=SEEDS, default="0,1,2", help="comma-separated training seeds (default 0,1,2)")
    p.add_argument("--steps", type=int, default=60, help="training steps per run (default 60)")
    p.add_argument("--jobs", type=int_at_least(1), help=JOBS_HELP)
    p.add_argument(
        "--reuse",
        metavar="ATLAS_JSON",
        help="a previous atlas.json (e.g. the shipped src/rlvr/lab/atlas/atlas.json) whose run cards stand in "
        "for runs of an unchanged configuration, seed and length instead of training them again",
    )
    add_quiet(p)


def run_atlas(args: argparse.Namespace) -> int:
    from rlvr.studies.atlas import build_atlas

    index = build_atlas(
        args.out,
        knobs=args.knobs or None,
        seeds=tuple(args.seeds),
        steps=args.steps,
        jobs=args.jobs,
        progress=not args.quiet,
        command=_command_line("atlas"),
        reuse=args.reuse,
    )
    runs = sum(len(v["runs"]) for values in index["knobs"].values() for v in values)
    print(
        f"rlvr atlas: {index['runs_made']} runs made in {index['call_wall_s']:.0f} s "
        f"(the whole build: {index['build_wall_s']:.0f} s); {len(index.get('reused', {}).get('runs', []))} kept "
        f"from --reuse; "
        f"{len(index['knobs'])} knobs, {runs} (value, seed) pairs; index: {Path(args.out) / 'atlas.json'}"
    )
    return 0


def add_sweep_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "sweep",
        run_sweep,
        help="a grid of real training runs (e.g. verifier fidelity x seeds) and a table of final metrics",
        description="Run `rlvr train` for every combination of the --grid values and --seeds, each into "
        "its own run directory under --out, then print and save (sweep.json, sweep.png) held-out gold "
        "pass@1, training-verifier pass@1, hacking rate and wall time per run. Finished runs are read "
        "back, not rerun. See docs/hacking.md.",
        config="YAML preset every run starts from (see configs/)",
        overrides="override one config field in every run (repeatable)",
        out=Flag("sweep folder: one run directory per grid point and seed", required=True),
    )
    p.add_argument(
        "--grid",
        action="append",
        required=True,
        metavar="KEY=V1,V2",
        help="a config field and its values, e.g. reward.fidelity=gold,visible_only (repeatable)",
    )
    p.add_argument("--seeds", type=SEEDS, default="0", help="comma-separated training seeds (default 0)")
    add_quiet(p, "no progress bars")


def run_sweep(args: argparse.Namespace) -> int:
    from rlvr.studies import sweep

    grid = sweep.parse_grid(args.grid)
    runs = sweep.plan(args.config, grid, args.seeds, args.overrides)  # validates every point before the first run
    quiet_hugging_face()
    print(f"rlvr sweep: {len(runs)} runs -> {args.out}")
    report = sweep.run_sweep(args.config, grid, args.seeds, args.out, overrides=args.overrides, progress=not args.quiet)
    print(sweep.format_table(report))
    print(f"saved: {Path(args.out) / 'sweep.json'}, {Path(args.out) / 'sweep.png'}")
    return 0


def add_compare_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "compare",
        run_compare,
        help="train several algorithms on the same budget and seeds and compare them (table, JSON, PNG)",
        description="Train each algorithm with each seed on the same task, model and prompt budget (the "
        "--config preset with --set overrides; only algo.algorithm, train.seed and train.steps differ), "
        "then compare memory (measured memory/* metrics), online exploration, reward stability, held-out "
        "pass@1 / pass@k / CoT-pass@k and wall time. Each run is an ordinary run directory under --out. "
        "The same command again with the same --out continues: finished runs are kept, interrupted ones "
        "resume from their checkpoint, a run of other settings there is refused. The base model is "
        "evaluated once per seed and shared by the runs of every algorithm (they draw the same held-out "
        "samples). See docs/algorithms.md.",
        config="base YAML preset shared by every run (see configs/)",
        overrides="override one config field for every run (repeatable)",
        out="folder for the runs and compare.{json,md,png} (default runs/compare-<time>); an existing one continues",
    )
    p.add_argument(
        "--algorithms", type=name_list, help="comma-separated (default: those of grpo,ppo,dpo this build has)"
    )
    p.add_argument(
        "--seeds", type=int_list("seed", "0,1"), default="0,1", help="comma-separated seeds, at least 2 (default 0,1)"
    )
    p.add_argument("--steps", type=int, default=50, help="training steps per run (default 50)")
    p.add_argument("--n", type=int, default=16, help="held-out samples per query for pass@k (default 16)")
    p.add_argument(
        "--num-queries",
        type=int_at_least(0, " (0 = the whole held-out split)"),
        default=100,
        help="held-out queries for pass@k (default 100, 0 = all)",
    )
    add_quiet(p, "no progress output")


def run_compare(args: argparse.Namespace) -> int:
    from rlvr.eval.compare import format_table
    from rlvr.studies.compare import check_budget, compare_algorithms, default_out, passk_ks, resolve_algorithms

    algorithms, skipped = resolve_algorithms(args.algorithms)
    ks = passk_ks(args.n)
    check_budget(args.seeds, args.steps, args.n, ks)  # refused before anything is printed
    out = Path(args.out) if args.out else default_out()
    quiet_hugging_face()
    if skipped:
        print(f"rlvr compare: not in this build, skipped: {', '.join(skipped)}")
    print(f"rlvr compare: {', '.join(algorithms)} x seeds {args.seeds}, {args.steps} steps each -> {out}")
    report = compare_algorithms(
        algorithms,
        seeds=args.seeds,
        steps=args.steps,
        config=args.config,
        overrides=args.overrides,
        out=out,
        n=args.n,
        ks=ks,
        num_queries=args.num_queries or None,
        progress=not args.quiet,
    )
    print(format_table(report))
    print(
        f"saved: {out / 'compare.json'}, {out / 'compare.md'}, {out / 'compare.png'}; runs in {out}/<algorithm>-seed<N>/"
    )
    return 0


def add_reproduce_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "reproduce",
        run_reproduce,
        help="measure a published claim about RLVR end to end (rlvr reproduce --list names the studies)",
        description="Run one study ({studies}) end to end: its arms over several seeds (single-thread runs side by side; "
        "an interrupted study resumes), pass@k evaluations where the claim needs them, then print each "
        "paper's claim beside the measured numbers and write <out>/reproduce.json and <out>/reproduce.png. "
        "`rlvr reproduce --list` names the studies and their time on 2 cores.",
        out="study folder: runs/, reproduce.json, reproduce.png (default runs/reproduce/NAME)",
        formatter_class=RegistryHelp,  # the description names every study
    )
    p.add_argument("name", nargs="?", help="the study (see --list)")
    p.add_argument("--list", action="store_true", help="list the studies and exit")
    p.add_argument(
        "--tables",
        action="store_true",
        help="print the study's table (every study's without NAME) from its shipped data, or from "
        "<out>/NAME.json with --out, as the docs show it, and exit",
    )
    p.add_argument(
        "--seeds", type=SEEDS, help="comma-separated training seeds (default: the study's, 0,1,2 or 0-4, see --list)"
    )
    p.add_argument("--steps", type=int, help="training steps per run (default: the study's, see --list)")
    p.add_argument(
        "--eval-queries",
        type=int_at_least(1),
        help="held-out queries of each pass@k evaluation (default: the study's, 100 or 50: what the docs' numbers use)",
    )
    p.add_argument(
        "--support-k",
        type=int_at_least(1),
        help="draws per query of the support reading (default: the study's, 4096 for expansion)",
    )
    p.add_argument("--jobs", type=int_at_least(1), help=JOBS_HELP)
    add_quiet(p)


def run_reproduce(args: argparse.Namespace) -> int:
    from rlvr.studies.reproduce import STUDIES, card_lines, reproduce, study_list

    if args.list:
        print("\n".join(study_list()))
        return 0
    if args.tables:
        from rlvr.studies.study_data import tables_text

        if args.name and args.name not in STUDIES:
            raise UsageError(f"unknown study {args.name!r}; known: {', '.join(STUDIES)} (rlvr reproduce --list)")
        print(tables_text(args.name, Path(args.out) if args.out else None))
        return 0
    if not args.name:
        raise UsageError(f"name a study: rlvr reproduce NAME, one of {', '.join(STUDIES)} (or --list)")
    out = Path(args.out or Path("runs") / "reproduce" / args.name)
    card = reproduce(
        args.name,
        out,
        seeds=None if args.seeds is None else tuple(args.seeds),
        steps=args.steps,
        jobs=args.jobs,
        progress=not args.quiet,
        command=_command_line("reproduce"),
        eval_queries=args.eval_queries,
        support_k=args.support_k,
    )
    print("\n".join(card_lines(card)))
    print(f"card: {out / 'reproduce.json'}, {out / 'reproduce.png'}")
    return 0
