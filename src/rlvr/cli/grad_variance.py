"""`rlvr grad-variance`: gradient variance and noise scale for several group sizes G."""

from __future__ import annotations

import argparse

from rlvr.cli.common import Flag, UsageError, add_command, add_quiet, quiet_hugging_face
from rlvr.cli.validators import int_at_least, int_list
from rlvr.config import load_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "grad-variance",
        run,
        help="gradient variance and noise scale for several group sizes G at an equal prompt count",
        description="For each G, sample G completions for each of the same train.batch_queries prompts "
        "from the same policy, take one gradient per prompt, and estimate tr(Sigma), |G|^2, the gradient "
        "variance and the noise scale B_simple (McCandlish et al. 2018, App. A), averaged over --batches.",
        config="YAML preset (default: the built-in defaults)",
        overrides="override one config field (repeatable)",
        out=Flag("JSON file for the table (default grad_variance.json)", default="grad_variance.json"),
    )
    p.add_argument(
        "--group-sizes",
        type=int_list("G", "2,4,8,16", minimum=2, why=" (a group of one has no baseline)"),
        default="2,4,8,16",
        help="comma-separated G values, each >= 2 (default 2,4,8,16)",
    )
    p.add_argument("--batches", type=int_at_least(1), default=4, help="batches of prompts averaged per G (default 4)")
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from rlvr.algos.registry import NotPolicyGradientError, require_policy_gradient

    sizes = args.group_sizes
    cfg = load_config(args.config, args.overrides)
    try:
        require_policy_gradient(cfg.algo.algorithm, "rlvr grad-variance")
    except NotPolicyGradientError as error:
        raise UsageError(str(error)) from None
    if cfg.train.batch_queries < 2:
        raise UsageError(
            "train.batch_queries must be >= 2: the estimate compares one prompt's gradient with the batch's"
        )
    from rlvr.diagnostics.group_size import format_table, measure_group_sizes, write_report

    quiet_hugging_face()
    print(
        f"rlvr grad-variance: model '{cfg.model.name}', {cfg.algo.algorithm}, "
        f"{cfg.train.batch_queries} prompts x G in {sizes}, {args.batches} batches each"
    )
    rows = measure_group_sizes(cfg, sizes, args.batches, progress=not args.quiet)
    print(format_table(rows))
    write_report(cfg, rows, args.out)
    print(f"saved: {args.out}")
    return 0
