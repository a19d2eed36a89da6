"""`rlvr build-base`: rebuild one of the embedded tiny base models the package ships."""

from __future__ import annotations

import argparse
from pathlib import Path

from rlvr.cli.common import UsageError, add_command, quiet_hugging_face


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "build-base",
        run,
        help="rebuild the embedded tiny base model (supervised warm-up, deterministic)",
        description="Warm up the embedded tiny Llama on arith solutions of which a share contain a "
        "mistake, and save it in Hugging Face format. rlvr ships this model; this reproduces it.",
        out="where to save it (default: the cache that 'tiny-arith' is loaded from)",
    )
    p.add_argument(
        "--task",
        default="arith",
        choices=["arith", "funcsynth", "arith-check", "arith-deep", "arith-tool", "arith-loose"],
        help="arith: 'tiny-arith' (default); funcsynth: 'tiny-funcsynth', warmed up on honest, "
        "lookup-table and wrong answers (docs/hacking.md); arith-check: 'tiny-arith-check', tiny-arith "
        "warmed up on solutions that sometimes check a step and redo it (docs/reproduce.md); arith-deep: "
        "'tiny-arith-deep', warmed up on 2- to 4-operand chains and 8 distinct 5-operand ones, so that it "
        "rarely solves a 5-operand chain (docs/reproduce.md, the expansion study); arith-tool: 'tiny-arith-tool', "
        "tiny-arith with the tool tags, warmed up on two-digit arithmetic that sometimes calls the python tool "
        "(docs/tools.md); arith-loose: 'tiny-arith-loose', tiny-arith warmed up on solutions of which half "
        "leave out the <think> tags, so that a format reward has something to teach (docs/reproduce.md)",
    )


def _builders() -> dict:
    """--task -> (build, default output folder, warm-up report)."""
    from functools import partial

    from rlvr.bases import (
        tiny_arith,
        tiny_arith_check,
        tiny_arith_deep,
        tiny_arith_loose,
        tiny_arith_tool,
        tiny_funcsynth,
    )
    from rlvr.bases.reports import arith_warmup_report, funcsynth_warmup_report, tool_warmup_report

    return {
        "arith": (tiny_arith.build, tiny_arith.BASE.cache_path, arith_warmup_report),
        "funcsynth": (tiny_funcsynth.build, tiny_funcsynth.BASE.cache_path, funcsynth_warmup_report),
        "arith-check": (tiny_arith_check.build, tiny_arith_check.BASE.cache_path, arith_warmup_report),
        "arith-deep": (
            tiny_arith_deep.build,
            tiny_arith_deep.BASE.cache_path,
            partial(arith_warmup_report, max_new_tokens=80),  # a 5-operand solution is up to 70 characters
        ),
        "arith-tool": (tiny_arith_tool.build, tiny_arith_tool.BASE.cache_path, tool_warmup_report),
        "arith-loose": (tiny_arith_loose.build, tiny_arith_loose.BASE.cache_path, arith_warmup_report),
    }


def run(args: argparse.Namespace) -> int:
    build, default_path, report = _builders()[args.task]
    out = Path(args.out) if args.out else default_path()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} exists and is not empty; remove it or pick another folder")
    quiet_hugging_face()
    print(f"rlvr build-base: warming up the embedded model on {args.task} -> {out}")
    build(out, report=report)
    print(f"saved: {out} (AutoModelForCausalLM.from_pretrained loads it)")
    return 0
