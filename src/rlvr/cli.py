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
    print(f"run directory: {out} (config.yaml, metrics.jsonl, summary.json, final/, checkpoint/)")
    return 0


def _build_base_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build-base",
        help="rebuild the embedded tiny base model (supervised warm-up, deterministic)",
        description="Warm up the embedded tiny Llama on arith solutions of which a share contain a "
        "mistake, and save it in Hugging Face format. rlvr ships this model; this reproduces it.",
    )
    p.add_argument("--out", help="where to save it (default: the cache that 'tiny-arith' is loaded from)")
    p.set_defaults(func=_cmd_build_base)


def _cmd_build_base(args: argparse.Namespace) -> int:
    from rlvr.models import build_embedded, embedded_path

    out = Path(args.out) if args.out else embedded_path()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} exists and is not empty; remove it or pick another folder")
    _quiet_hugging_face()
    print(f"rlvr build-base: warming up the embedded model -> {out}")
    build_embedded(out, report=True)
    print(f"saved: {out} (AutoModelForCausalLM.from_pretrained loads it)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr", description="Reinforcement learning with verifiable rewards.")
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _build_base_parser(sub)
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
