"""Command-line front end. Each subcommand parses arguments and calls one library function.

Errors a user can cause (bad config, missing files, malformed rows) print one line that says
what is wrong and what to do, and exit with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rlvr.config import describe_fields, load_config
from rlvr.errors import UserError

USAGE_ERROR = 2


class UsageError(UserError):
    """A bad combination of command-line flags."""


def _quiet_hugging_face() -> None:
    """rlvr shows its own progress; HF's bars for every save and load are noise."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def _train_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a policy with GRPO (no arguments: the embedded tiny model on arith)",
        description="Train with GRPO: sample G completions per query, verify, group-normalise, update.",
        epilog="settable keys (--set section.key=value):\n" + describe_fields(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="YAML preset (see configs/); --set overrides it")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config field, e.g. --set algo.beta=0.1 (repeatable)")
    p.add_argument("--seed", type=int, help="shorthand for --set train.seed=N")
    p.add_argument("--out", help="run directory (default: runs/<time>-seed<N>)")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the run in DIR from its last checkpoint (with --set train.steps=N to extend it)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_train)


def _cmd_train(args: argparse.Namespace) -> int:
    import time

    import yaml

    if args.resume:
        from rlvr.train.checkpoint import find_checkpoint

        run = Path(args.resume)
        if not (run / "config.yaml").is_file() or find_checkpoint(run) is None:
            raise UsageError(f"--resume {run}: no run with a checkpoint there (expected config.yaml and checkpoint/)")
        if args.config or args.seed is not None or args.out:
            raise UsageError("--resume continues a run with its own saved config and directory; "
                             "drop --config/--seed/--out (--set may change fields, e.g. train.steps to extend it)")
        from rlvr.config import config_from_dict

        cfg = config_from_dict(yaml.safe_load((run / "config.yaml").read_text()))
        cfg = load_config(None, args.overrides, base=cfg)
        out = run
    else:
        overrides = list(args.overrides) + ([f"train.seed={args.seed}"] if args.seed is not None else [])
        cfg = load_config(args.config, overrides)
        out = Path(args.out) if args.out else Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{cfg.train.seed}"
        if (out / "config.yaml").exists():
            raise UsageError(f"--out {out} already holds a run; continue it with --resume {out} or pick another --out")
    from rlvr.train.loop import train

    _quiet_hugging_face()
    print(f"rlvr train: {cfg.algo.algorithm} on task '{cfg.task.name}' with model '{cfg.model.name}' -> {out}")
    summary = train(cfg, out, resume=bool(args.resume), progress=not args.quiet)
    base, final = summary["base"], summary["final"]
    print(
        f"held-out pass@1 (n={final['n']}, T={cfg.rollout.temperature}): "
        f"{base['pass@1']:.3f} -> {final['pass@1']:.3f} ({100 * (final['pass@1'] - base['pass@1']):+.1f} points); "
        f"greedy {base['greedy']:.3f} -> {final['greedy']:.3f}; "
        f"{summary['steps']} steps in {summary['wall_s']:.0f} s"
    )
    if cfg.reward.fidelity != "gold":
        print(f"gold verifier (reward.fidelity={cfg.reward.fidelity} trained): held-out gold pass@1 "
              f"{base['gold_pass@1']:.3f} -> {final['gold_pass@1']:.3f}; hacking rate "
              f"{base['hacking_rate']:.3f} -> {final['hacking_rate']:.3f} (docs/hacking.md)")
    print(f"run directory: {out} (config.yaml, metrics.jsonl, summary.json, final/, checkpoint/)")
    return 0


def _eval_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="pass@k and CoT-pass@k curves of a model (and its base) on held-out queries",
        description="Sample n completions per held-out query, estimate pass@k (Chen et al. 2021) and "
        "CoT-pass@k (right answer and right reasoning) for each k, and name the k where the base "
        "model's curve catches up with the trained one, if it does. See docs/evaluation.md.",
    )
    p.add_argument("--model", required=True, help="'tiny-arith' or a Hugging Face model directory (e.g. a run's final/)")
    p.add_argument("--base", help="a second model to compare against, usually the one training started from")
    p.add_argument("--task", default="arith", choices=["arith"], help="task whose held-out split is used")
    p.add_argument("--n", type=int, default=16, help="samples per query (default 16); every k must be <= n")
    p.add_argument("--k", default="1,2,4,8,16", help="comma-separated k values (default 1,2,4,8,16)")
    p.add_argument("--num-queries", type=int, default=200, help="held-out queries (default 200)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default 1.0)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed, the same for both models (default 0)")
    p.add_argument("--out", default="eval", help="folder for eval.json and passk.png (default ./eval)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_eval)


def _parse_ks(text: str, n: int) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(f"--k {text!r}: expected comma-separated integers, e.g. --k 1,2,4,8") from None
    if not ks or ks[0] < 1:
        raise UsageError(f"--k {text!r}: every k must be an integer >= 1")
    if ks[-1] > n:
        raise UsageError(f"--k {ks[-1]} exceeds --n {n}: pass@k needs at least k samples per query; "
                         f"raise --n or drop that k")
    return ks


def _cmd_eval(args: argparse.Namespace) -> int:
    if args.n < 1 or args.num_queries < 1:
        raise UsageError("--n and --num-queries must be >= 1")
    if args.temperature <= 0:
        raise UsageError("--temperature must be > 0 (pass@k is estimated from sampled completions)")
    ks = _parse_ks(args.k, args.n)
    for flag, name in (("--model", args.model), ("--base", args.base)):
        if name and name != "tiny-arith" and not (Path(name).expanduser() / "config.json").is_file():
            raise UsageError(f"{flag} {name}: neither 'tiny-arith' nor a directory with a Hugging Face config.json")
    from rlvr.train.passk_eval import evaluate_passk

    _quiet_hugging_face()
    out = Path(args.out)
    print(f"rlvr eval: {args.num_queries} held-out {args.task} queries x n={args.n} samples at "
          f"T={args.temperature} -> {out}")
    report = evaluate_passk(args.model, base=args.base, task=args.task, n=args.n, ks=ks,
                            num_queries=args.num_queries, temperature=args.temperature, seed=args.seed,
                            out=out, progress=not args.quiet)
    print(format_eval_table(report))
    print(f"saved: {out / 'eval.json'}, {out / 'passk.png'}")
    return 0


def format_eval_table(report: dict) -> str:
    """The printed table: one row per k, pass@k and CoT-pass@k in percent for each model."""
    def pct(values: list[float] | None, i: int) -> str:
        return "n/a" if values is None else f"{100 * values[i]:.1f}%"

    models = report["models"]
    header = "   k" + "".join(f"  {label + ' pass@k':>14}  {label + ' CoT-pass@k':>18}" for label in models)
    rows = [header]
    for i, k in enumerate(report["k"]):
        rows.append(f"{k:>4}" + "".join(f"  {pct(m['pass@k'], i):>14}  {pct(m['cot_pass@k'], i):>18}"
                                         for m in models.values()))
    if "base" in models:
        for key, name in (("pass@k", "pass@k"), ("cot_pass@k", "CoT-pass@k")):
            k = report["crossing"][key]
            if models["base"][key] is None:
                rows.append(f"{name}: unavailable for task '{report['task']}' (no reasoning checker)")
            elif k is None:
                rows.append(f"{name}: the curves do not cross (base never catches up from below at these k)")
            else:
                rows.append(f"{name}: base catches up with the trained model at k={k}")
    unscorable = {label: m["unscorable"] for label, m in models.items() if m["unscorable"]}
    if unscorable:
        rows.append(f"unscorable samples (kept out of n): {unscorable}")
    return "\n".join(rows)


def _build_base_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build-base",
        help="rebuild the embedded tiny base model (supervised warm-up, deterministic)",
        description="Warm up the embedded tiny Llama on arith solutions of which a share contain a "
        "mistake, and save it in Hugging Face format. rlvr ships this model; this reproduces it.",
    )
    p.add_argument("--out", help="where to save it (default: the cache that 'tiny-arith' is loaded from)")
    p.add_argument("--task", default="arith", choices=["arith", "funcsynth"],
                   help="arith: 'tiny-arith' (default); funcsynth: 'tiny-funcsynth', warmed up on honest, "
                   "lookup-table and wrong answers (docs/hacking.md)")
    p.set_defaults(func=_cmd_build_base)


def _cmd_build_base(args: argparse.Namespace) -> int:
    from rlvr.models import build_embedded, cache_root, embedded_path, funcsynth_base

    builders = {"arith": (build_embedded, embedded_path), "funcsynth": (funcsynth_base.build,
                                                                         lambda: funcsynth_base.cache_path(cache_root()))}
    build, default_path = builders[args.task]
    out = Path(args.out) if args.out else default_path()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} exists and is not empty; remove it or pick another folder")
    _quiet_hugging_face()
    print(f"rlvr build-base: warming up the embedded model on {args.task} -> {out}")
    build(out, report=True)
    print(f"saved: {out} (AutoModelForCausalLM.from_pretrained loads it)")
    return 0


def _verify_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="verify completions against their queries (JSONL in, a table and JSONL results out)",
        description="Verify each row {\"query\": {dataset row}, \"completion\": \"...\"} of a JSONL file with "
        "the query's own verifier; print verdict and error-class counts and throughput. A bad row gets an "
        "error line naming it and the rest still run; exit code 2 if any row was bad. See docs/verifiers.md.",
    )
    p.add_argument("--input", required=True, help="JSONL file, one {\"query\", \"completion\"} object per line")
    p.add_argument("--out", help="write one JSON result per row here (JSONL)")
    p.set_defaults(func=_cmd_verify)


def _parse_verify_row(line: str) -> tuple[str | None, object]:
    """(None, Query and completion) for a good row, else (why it is bad, the query id or None)."""
    import json

    from rlvr.types import Query
    from rlvr.verifiers.registry import known_types

    try:
        row = json.loads(line)
    except ValueError as error:
        return f"malformed JSON ({error})", None
    if not isinstance(row, dict) or not isinstance(row.get("query"), dict) or not isinstance(row.get("completion"), str):
        return 'expected an object with "query" (an object) and "completion" (a string)', None
    query, query_id = row["query"], row["query"].get("id")
    criteria = query.get("verifier")
    if not isinstance(criteria, dict) or not isinstance(criteria.get("type"), str):
        return 'the query has no verification criteria (a "verifier" object with a "type")', query_id
    if criteria["type"] not in known_types():
        return f"unknown verifier type {criteria['type']!r}; known types: {', '.join(known_types())}", query_id
    query_id = "" if query_id is None else str(query_id)
    return None, (Query(query_id, str(query.get("prompt", "")), criteria), row["completion"])


def _cmd_verify(args: argparse.Namespace) -> int:
    import json
    import time
    from collections import Counter

    from rlvr.verifiers.registry import close_verifiers, get_verifier

    path = Path(args.input)
    if not path.is_file():
        raise UsageError(f"--input {path}: no such file")
    records, bad = [], 0
    started = time.perf_counter()
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            problem, parsed = _parse_verify_row(line)
            if problem is not None:
                bad += 1
                print(f"rlvr verify: row {number}: {problem}", file=sys.stderr)
                records.append({"row": number, "query_id": parsed, "bad_row": problem})
                continue
            query, completion = parsed
            result = get_verifier(query.verifier["type"]).verify(query, completion)
            records.append({"row": number, "query_id": query.id or None, **result.to_dict()})
    finally:
        close_verifiers()
    wall = time.perf_counter() - started
    checked = [r for r in records if "verdict" in r]
    print(f"rlvr verify: {len(records)} rows from {path}: {len(checked)} checked, {bad} bad")
    for title, key in (("verdict", "verdict"), ("error class", "error_class")):
        print(f"  {title:<20} {'rows':>6}")
        for name, count in sorted(Counter(r[key] for r in checked).items()):
            print(f"  {name:<20} {count:>6}")
    rate = len(checked) / wall if wall > 0 else 0.0
    print(f"throughput: {len(checked)} checks in {wall:.2f} s = {rate:.1f} checks/s (one after another)")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        print(f"results: {args.out}")
    return USAGE_ERROR if bad else 0


def _sweep_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="a grid of real training runs (e.g. verifier fidelity x seeds) and a table of final metrics",
        description="Run `rlvr train` for every combination of the --grid values and --seeds, each into "
        "its own run directory under --out, then print and save (sweep.json, sweep.png) held-out gold "
        "pass@1, training-verifier pass@1, hacking rate and wall time per run. Finished runs are read "
        "back, not rerun. See docs/hacking.md.",
    )
    p.add_argument("--config", help="YAML preset every run starts from (see configs/)")
    p.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2",
                   help="a config field and its values, e.g. reward.fidelity=gold,visible_only (repeatable)")
    p.add_argument("--seeds", default="0", help="comma-separated training seeds (default 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config field in every run (repeatable)")
    p.add_argument("--out", required=True, help="sweep folder: one run directory per grid point and seed")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from rlvr.train.sweep import format_table, parse_grid, parse_seeds, plan, run_sweep

    grid, seeds = parse_grid(args.grid), parse_seeds(args.seeds)
    runs = plan(args.config, grid, seeds, args.overrides)  # validates every point before the first run
    _quiet_hugging_face()
    print(f"rlvr sweep: {len(runs)} runs -> {args.out}")
    report = run_sweep(args.config, grid, seeds, args.out, overrides=args.overrides, progress=not args.quiet)
    print(format_table(report))
    print(f"saved: {Path(args.out) / 'sweep.json'}, {Path(args.out) / 'sweep.png'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr", description="Reinforcement learning with verifiable rewards.")
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _eval_parser(sub)
    _build_base_parser(sub)
    _verify_parser(sub)
    _sweep_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as err:
        print(f"rlvr: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("rlvr: interrupted; a run with a checkpoint continues with --resume DIR", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
