"""Command-line front end. Each subcommand parses arguments and calls one library function.

Errors a user can cause (bad config, missing files, malformed rows) print one line that says
what is wrong and what to do, and exit with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import sys
import typing
from pathlib import Path
from typing import TYPE_CHECKING

from rlvr.config import EVAL_FIELDS, HfFormat, describe_fields, load_config
from rlvr.errors import UserError

if TYPE_CHECKING:
    from rlvr.tasks.hf import ColumnMap

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
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field, e.g. --set algo.beta=0.1 (repeatable)",
    )
    p.add_argument("--seed", type=int, help="shorthand for --set train.seed=N")
    p.add_argument("--out", help="run directory (default: runs/<time>-seed<N>)")
    p.add_argument(
        "--resume",
        metavar="DIR",
        help="continue the run in DIR from its last checkpoint (with --set train.steps=N to extend it)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_train)


def _new_run_dir(out: str | None, seed: int) -> Path:
    import time

    out = Path(out) if out else Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}"
    if (out / "config.yaml").exists():
        raise UsageError(f"--out {out} already holds a run; continue it with --resume {out} or pick another --out")
    return out


def _cmd_train(args: argparse.Namespace) -> int:
    import yaml

    if args.resume:
        from rlvr.engine.checkpoint import find_checkpoint

        run = Path(args.resume)
        if not (run / "config.yaml").is_file() or find_checkpoint(run) is None:
            raise UsageError(f"--resume {run}: no run with a checkpoint there (expected config.yaml and checkpoint/)")
        if args.config or args.seed is not None or args.out:
            raise UsageError(
                "--resume continues a run with its own saved config and directory; "
                "drop --config/--seed/--out (--set may change fields, e.g. train.steps to extend it)"
            )
        from rlvr.config import config_from_dict

        cfg = config_from_dict(yaml.safe_load((run / "config.yaml").read_text()))
        cfg = load_config(None, args.overrides, base=cfg)
        out = run
    else:
        overrides = list(args.overrides) + ([f"train.seed={args.seed}"] if args.seed is not None else [])
        cfg = load_config(args.config, overrides)
        from rlvr.engine.distributed import world

        out = world().on_main(lambda: _new_run_dir(args.out, cfg.train.seed))  # one directory for all processes
    from rlvr.engine.loop import train
    from rlvr.verifiers.registry import close_verifiers

    _quiet_hugging_face()
    print(f"rlvr train: {cfg.algo.algorithm} on task '{cfg.task.name}' with model '{cfg.model.name}' -> {out}")
    try:
        summary = train(cfg, out, resume=bool(args.resume), progress=not args.quiet)
    finally:
        close_verifiers()  # worker pools and the coq session end with the command, also when run in-process
    if not summary:
        return 0  # a process other than rank 0 under accelerate/torchrun: rank 0 reports
    base, final = summary["base"], summary["final"]
    print(
        f"held-out pass@1 (n={final['n']}, T={cfg.rollout.temperature}): "
        f"{base['pass@1']:.3f} -> {final['pass@1']:.3f} ({100 * (final['pass@1'] - base['pass@1']):+.1f} points); "
        f"greedy {base['greedy']:.3f} -> {final['greedy']:.3f}; "
        f"{summary['steps']} steps in {summary['wall_s']:.0f} s"
    )
    if cfg.reward.fidelity != "gold":
        print(
            f"gold verifier (reward.fidelity={cfg.reward.fidelity} trained): held-out gold pass@1 "
            f"{base['gold_pass@1']:.3f} -> {final['gold_pass@1']:.3f}, greedy {base['gold_greedy']:.3f} -> "
            f"{final['gold_greedy']:.3f}; hacking rate "
            f"{base['hacking_rate']:.3f} -> {final['hacking_rate']:.3f} (docs/hacking.md)"
        )
    if "tool_use_rate" in final:
        print(
            f"tool use (rollout.tools={cfg.rollout.tools}): share of held-out samples that ran a call "
            f"{base['tool_use_rate']:.3f} -> {final['tool_use_rate']:.3f} (docs/tools.md)"
        )
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
    p.add_argument(
        "--model", required=True, help="'tiny-arith' or a Hugging Face model directory (e.g. a run's final/)"
    )
    p.add_argument("--base", help="a second model to compare against, usually the one training started from")
    p.add_argument("--task", default="arith", choices=["arith"], help="task whose held-out split is used")
    p.add_argument("--n", type=int, default=16, help="samples per query (default 16); every k must be <= n")
    p.add_argument("--k", default="1,2,4,8,16", help="comma-separated k values (default 1,2,4,8,16)")
    p.add_argument("--num-queries", type=int, default=200, help="held-out queries (default 200)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default 1.0)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed, the same for both models (default 0)")
    p.add_argument("--out", default="eval", help="folder for eval.json and passk.png (default ./eval)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"the held-out task and sampling length, as `rlvr train` takes them: {', '.join(EVAL_SETTABLE)} "
        "(e.g. --set task.operands=5 to evaluate longer chains than training saw)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_eval)


EVAL_SETTABLE = EVAL_FIELDS
"""The config fields `rlvr eval --set` takes: those that decide the held-out queries and their length."""


def eval_set_problem(overrides: list[str]) -> str | None:
    """The message for the first `rlvr eval --set` key eval does not take, or None."""
    for item in overrides:
        if item.split("=", 1)[0].strip() not in EVAL_SETTABLE:
            return f"--set {item}: rlvr eval takes only {', '.join(EVAL_SETTABLE)}"
    return None


def _parse_ks(text: str, n: int) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(f"--k {text!r}: expected comma-separated integers, e.g. --k 1,2,4,8") from None
    if not ks or ks[0] < 1:
        raise UsageError(f"--k {text!r}: every k must be an integer >= 1")
    if ks[-1] > n:
        raise UsageError(
            f"--k {ks[-1]} exceeds --n {n}: pass@k needs at least k samples per query; raise --n or drop that k"
        )
    return ks


def _cmd_eval(args: argparse.Namespace) -> int:
    if args.n < 1 or args.num_queries < 1:
        raise UsageError("--n and --num-queries must be >= 1")
    if args.temperature <= 0:
        raise UsageError("--temperature must be > 0 (pass@k is estimated from sampled completions)")
    ks = _parse_ks(args.k, args.n)
    from rlvr.config import load_config

    outside = eval_set_problem(args.overrides)
    if outside:
        raise UsageError(outside)
    cfg = load_config(None, args.overrides)  # the trainer's own validation of each value
    from rlvr.models import BASE_NAMES

    for flag, name in (("--model", args.model), ("--base", args.base)):
        if name and name not in BASE_NAMES and not (Path(name).expanduser() / "config.json").is_file():
            raise UsageError(
                f"{flag} {name}: neither a built-in base ({', '.join(BASE_NAMES)}) nor a directory with a "
                "Hugging Face config.json"
            )
    from rlvr.rollout.prompts import PromptFormat
    from rlvr.studies.passk_eval import evaluate_passk
    from rlvr.tasks import arith_spec

    _quiet_hugging_face()
    out = Path(args.out)
    print(
        f"rlvr eval: {args.num_queries} held-out {args.task} queries x n={args.n} samples at "
        f"T={args.temperature} -> {out}"
    )
    report = evaluate_passk(
        args.model,
        base=args.base,
        task=args.task,
        n=args.n,
        ks=ks,
        num_queries=args.num_queries,
        temperature=args.temperature,
        seed=args.seed,
        out=out,
        progress=not args.quiet,
        spec=arith_spec(cfg.task),
        data_seed=cfg.task.data_seed,
        max_new_tokens=cfg.rollout.max_new_tokens,
        prompt_format=PromptFormat.of(cfg.task),
        rollout=cfg.rollout,
    )
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
        rows.append(
            f"{k:>4}" + "".join(f"  {pct(m['pass@k'], i):>14}  {pct(m['cot_pass@k'], i):>18}" for m in models.values())
        )
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
    p.add_argument(
        "--task",
        default="arith",
        choices=["arith", "funcsynth", "arith-check", "arith-deep", "arith-tool"],
        help="arith: 'tiny-arith' (default); funcsynth: 'tiny-funcsynth', warmed up on honest, "
        "lookup-table and wrong answers (docs/hacking.md); arith-check: 'tiny-arith-check', tiny-arith "
        "warmed up on solutions that sometimes check a step and redo it (docs/reproduce.md); arith-deep: "
        "'tiny-arith-deep', warmed up on 2- to 4-operand chains and 8 distinct 5-operand ones, so that it "
        "rarely solves a 5-operand chain (docs/reproduce.md, the expansion study); arith-tool: 'tiny-arith-tool', "
        "tiny-arith with the tool tags, warmed up on two-digit arithmetic that sometimes calls the python tool "
        "(docs/tools.md)",
    )
    p.set_defaults(func=_cmd_build_base)


def _cmd_build_base(args: argparse.Namespace) -> int:
    from functools import partial

    from rlvr.engine.evaluate import arith_warmup_report, funcsynth_warmup_report, tool_warmup_report
    from rlvr.models import (
        build_embedded,
        cache_root,
        deep_base,
        embedded_path,
        funcsynth_base,
        selfcheck_base,
        tool_base,
    )

    builders = {
        "arith": (build_embedded, embedded_path, arith_warmup_report),
        "funcsynth": (funcsynth_base.build, lambda: funcsynth_base.cache_path(cache_root()), funcsynth_warmup_report),
        "arith-check": (selfcheck_base.build, lambda: selfcheck_base.cache_path(cache_root()), arith_warmup_report),
        "arith-deep": (
            deep_base.build,
            lambda: deep_base.cache_path(cache_root()),
            partial(arith_warmup_report, max_new_tokens=80),  # a 5-operand solution is up to 70 characters
        ),
        "arith-tool": (tool_base.build, lambda: tool_base.cache_path(cache_root()), tool_warmup_report),
    }
    build, default_path, report = builders[args.task]
    out = Path(args.out) if args.out else default_path()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} exists and is not empty; remove it or pick another folder")
    _quiet_hugging_face()
    print(f"rlvr build-base: warming up the embedded model on {args.task} -> {out}")
    build(out, report=report)
    print(f"saved: {out} (AutoModelForCausalLM.from_pretrained loads it)")
    return 0


def _verify_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="verify completions against their queries (JSONL in, a table and JSONL results out)",
        description='Verify each row {"query": {dataset row}, "completion": "..."} of a JSONL file with '
        "the query's own verifier; print verdict and error-class counts and throughput. A bad row gets an "
        "error line naming it and the rest still run; exit code 2 if any row was bad. See docs/verifiers.md.",
    )
    p.add_argument("--input", required=True, help='JSONL file, one {"query", "completion"} object per line')
    p.add_argument("--out", help="write one JSON result per row here (JSONL)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object instead of a table")
    p.set_defaults(func=_cmd_verify)


def _cmd_verify(args: argparse.Namespace) -> int:
    import json

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
        for title, counts in (("verdict", report.verdicts), ("error class", report.error_classes)):
            print(f"  {title:<20} {'rows':>6}")
            for name, count in counts.items():
                print(f"  {name:<20} {count:>6}")
        print(f"throughput: {report.checked} checks in {report.wall_s:.2f} s = {report.checks_per_s:.1f} checks/s")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in report.records), encoding="utf-8")
        if not args.json:
            print(f"results: {args.out}")
    return USAGE_ERROR if report.bad else 0


def _data_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="check a dataset file before training on it")
    data = p.add_subparsers(dest="data_command", required=True)
    check = data.add_parser(
        "check",
        help="validate every row of a dataset file and name each bad one",
        description="Read FILE as training would read it and validate every row, not stopping at the first "
        "bad one: print how many rows are good and each bad row (a repeated id and an unknown verifier "
        "type included). Exit code 0 when every row is good, 2 otherwise. See docs/integrations.md.",
    )
    check.add_argument("file", metavar="FILE", help="a dataset file (or a directory in Hugging Face layout)")
    check.add_argument(
        "--format",
        dest="file_format",
        default="rows",
        choices=("rows", *typing.get_args(HfFormat)),
        help="rows: rlvr JSONL rows {id, prompt, verifier} (task.name=jsonl, the default); columns, gsm8k, "
        "math: a .jsonl/.json/.parquet/.csv file mapped as task.name=hf with that task.hf_format",
    )
    check.add_argument("--prompt-column", metavar="C", help="prompt column (task.hf_prompt_column)")
    check.add_argument("--answer-column", metavar="C", help="answer or solution column (task.hf_answer_column)")
    check.add_argument("--verifier-column", metavar="C", help="column of full criteria (task.hf_verifier_column)")
    check.add_argument("--id-column", metavar="C", help="column of row ids (task.hf_id_column)")
    check.add_argument("--split", help="split of a directory in Hugging Face layout (default train)")
    check.set_defaults(func=_cmd_data_check)


def _data_check_columns(args: argparse.Namespace, path: Path) -> ColumnMap | None:
    """The column mapping the flags give (None for rlvr rows); flags that do not fit are a UsageError."""
    from rlvr.tasks.hf import ColumnMap

    named = (args.prompt_column, args.answer_column, args.verifier_column, args.id_column)
    if args.file_format == "rows":
        if any(named) or args.split:
            raise UsageError("--format rows reads rlvr rows, which have no columns to map or splits; drop the "
                             "column and --split flags, or pick --format columns, gsm8k or math")  # fmt: skip
        if path.suffix in (".parquet", ".csv") or path.is_dir():
            kind = "a directory" if path.is_dir() else f"a {path.suffix} file"
            raise UsageError(f"{path}: --format rows reads one JSONL file; for {kind} pass --format columns, "
                             "gsm8k or math")  # fmt: skip
        return None
    if args.split and path.is_file():
        raise UsageError(f"--split {args.split}: {path} is a single file (one split); --split picks one of a directory")
    if args.verifier_column and args.file_format != "columns":
        raise UsageError(f"--format {args.file_format} cuts the answer out of a solution column; --verifier-column "
                         "gives whole criteria instead: use it with --format columns")  # fmt: skip
    prompt, answer, verifier, id_column = (name or "" for name in named)
    return ColumnMap.for_format(args.file_format, prompt=prompt, answer=answer, verifier=verifier, id=id_column)


def _cmd_data_check(args: argparse.Namespace) -> int:
    from rlvr.tasks.check import check_file
    from rlvr.tasks.dataset import DatasetError
    from rlvr.verifiers.registry import known_types

    path = Path(args.file)
    columns = _data_check_columns(args, path)
    report = check_file(
        path, args.file_format, columns=columns, split=args.split or "train", verifier_types=known_types()
    )
    source = f"{path} [{args.split or 'train'}]" if path.is_dir() else str(path)
    print(f"rlvr data check: {source} (format {args.file_format}): {report.good} of {report.rows} rows good")
    for line in report.problem_lines(limit=20):
        print(f"  {line}")
    if report.problems:
        raise DatasetError(f"{path}: {len(report.problems)} of {report.rows} rows are bad ({report.numbering})")
    return 0


def _memory_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "memory",
        help="estimate accelerator memory by component for training a model with an algorithm",
        description="Estimate per-GPU memory, component by component (weights, reference, critic, gradients, "
        "optimizer states, activations, rollout KV cache), for training a Llama-family model. "
        "Formulas and their sources: docs/memory.md.",
    )
    p.add_argument(
        "--model",
        default="tiny-arith",
        help="preset (tiny-arith, Qwen2.5-0.5B, Qwen2.5-1.5B, Qwen2.5-7B, Llama-3-8B) or a Hugging Face config.json / model directory",
    )
    p.add_argument(
        "--algorithm", default="grpo", help="an algo.algorithm name: grpo, gspo, ... (docs/algorithms.md; default grpo)"
    )
    p.add_argument(
        "--precision",
        default="bf16-mixed",
        help="fp32, bf16-mixed (fp32 master), fp16-mixed or bf16 (default bf16-mixed)",
    )
    p.add_argument("--optimizer", default="adamw", help="adamw, adam8bit, sgd or sgd-momentum (default adamw)")
    p.add_argument(
        "--lora-rank", type=int, default=0, help="LoRA rank on every linear layer (default 0: full fine-tuning)"
    )
    p.add_argument("--sharding", default="zero0", help="zero0, zero1, zero2, zero3 or fsdp (= zero3) (default zero0)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs the batch and the shards are spread over (default 1)")
    p.add_argument("--prompt-len", type=int, default=256, help="prompt tokens P (default 256)")
    p.add_argument("--completion-len", type=int, default=1024, help="completion tokens T (default 1024)")
    p.add_argument("--batch", type=int, default=32, help="B: queries per step; DPO: pairs (default 32)")
    p.add_argument("--group", type=int, help="G: completions per query (default 8; DPO: 2, chosen and rejected)")
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward per GPU (default 8)")
    p.add_argument("--grad-checkpointing", action="store_true", help="recompute each layer in the backward")
    p.add_argument("--padding-free", action="store_true", help="sequences packed without padding (no attention mask)")
    p.add_argument(
        "--beta", type=float, default=0.04, help="KL weight; 0 holds no reference for GRPO and PPO (default 0.04)"
    )
    p.add_argument("--reward-model", action="store_true", help="also hold a learned reward model")
    p.add_argument(
        "--online-pairs",
        type=int,
        default=0,
        help="DPO as rlvr trains it: sample --group per query, then train on this many pairs per step "
        "(default 0: offline DPO on --batch given pairs)",
    )
    p.add_argument(
        "--rollout-backend",
        default="hf",
        help="sampler: hf (transformers generate; rollout.backend) or vllm (a colocated vLLM engine with its "
        "own weights and KV cache) (default hf)",
    )
    p.add_argument(
        "--rollout-dtype",
        default="float32",
        help="sampler precision (rollout.dtype): float32 samples with the policy itself; bfloat16 with a "
        "bf16 copy (hf) or a bf16 engine (vllm) (default float32)",
    )
    p.add_argument(
        "--vllm-gpu-memory-utilization",
        type=float,
        default=0.3,
        help="with --rollout-backend vllm: share of GPU memory vLLM reserves for its weights and KV cache "
        "(default 0.3)",
    )
    p.add_argument(
        "--gpu-memory", type=float, default=80, help="memory of one GPU in GiB; sizes vLLM's reservation (default 80)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.set_defaults(func=_cmd_memory)


def _cmd_memory(args: argparse.Namespace) -> int:
    import json

    from rlvr.algos import ALGORITHMS
    from rlvr.diagnostics.memory_estimate import (
        SHARDING_STAGES,
        TrainingSetup,
        estimate,
        format_table,
    )
    from rlvr.diagnostics.memory_model import load_model_spec

    if args.algorithm not in ALGORITHMS:
        raise UsageError(f"--algorithm {args.algorithm}: unknown; pick one of {', '.join(ALGORITHMS)}")
    if args.sharding not in SHARDING_STAGES:
        raise UsageError(f"--sharding {args.sharding}: unknown; pick one of {', '.join(SHARDING_STAGES)}")
    setup = TrainingSetup(
        algorithm=args.algorithm,
        precision=args.precision,
        optimizer=args.optimizer,
        lora_rank=args.lora_rank,
        zero_stage=SHARDING_STAGES[args.sharding],
        gpus=args.gpus,
        prompt_len=args.prompt_len,
        completion_len=args.completion_len,
        batch=args.batch,
        micro_batch=args.micro_batch,
        group=args.group
        if args.group is not None
        else (8 if args.online_pairs else ALGORITHMS[args.algorithm].memory_group_size),
        grad_checkpointing=args.grad_checkpointing,
        padding_free=args.padding_free,
        beta=args.beta,
        reward_model=args.reward_model,
        online_pairs=args.online_pairs,
        rollout_backend=args.rollout_backend,
        rollout_dtype=args.rollout_dtype,
        vllm_gpu_memory_utilization=args.vllm_gpu_memory_utilization,
        gpu_memory_gib=args.gpu_memory,
    )
    result = estimate(load_model_spec(args.model), setup)
    print(json.dumps(result.to_dict(), indent=2) if args.json else format_table(result))
    return 0


def _inspect_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="capture one update with every intermediate (JSON + HTML), or replay one under other settings",
        description="Run one real update (from a config, or a step of a saved run) and write capture.json "
        "(every intermediate: rewards, advantages, log-probs, ratios, clipping, KL, per-token loss, loss, "
        "gradient norms; schema in docs/inspector.md) and capture.html. With --replay, recompute a captured "
        "batch under other algo.* settings and show the change in loss, per-token weights and gradient.",
    )
    p.add_argument("--config", help="YAML preset; the update of step 1 of a fresh run is captured")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field (repeatable); with --replay only algo.* fields",
    )
    p.add_argument("--run", metavar="DIR", help="a run directory of rlvr train; needs --step")
    p.add_argument("--step", type=int, help="with --run: the update logged as this step in metrics.jsonl")
    p.add_argument("--replay", metavar="CAPTURE", help="a capture.json to recompute under --set algo.* settings")
    p.add_argument("--out", help="output folder (default: inspect/, or the capture's folder for --replay)")
    p.set_defaults(func=_cmd_inspect)


def _cmd_inspect(args: argparse.Namespace) -> int:
    from rlvr.diagnostics import inspector

    if args.replay:
        if args.config or args.run or args.step is not None:
            raise UsageError(
                "--replay recomputes a saved capture; drop --config/--run/--step and pass --set algo.*=..."
            )
        return _replay(Path(args.replay), args.overrides, Path(args.out) if args.out else None)
    if args.run and args.config:
        raise UsageError("--run uses that run's saved config; drop --config (--set may still change fields)")
    if args.run and args.step is None:
        raise UsageError("--run DIR needs --step N: the update logged as step N in DIR/metrics.jsonl")
    if args.step is not None and args.step < 1:
        raise UsageError(f"--step {args.step}: steps count from 1, as in metrics.jsonl")
    _quiet_hugging_face()
    out = Path(args.out or "inspect")
    if args.run:
        capture = inspector.inspect_run(Path(args.run), args.step, args.overrides, out)
    else:
        capture = inspector.inspect_config(load_config(args.config, args.overrides), out, step=args.step or 1)
    json_path, html_path = inspector.write_capture(capture, out)
    print("\n".join(inspector.summary_lines(capture)))
    print(f"saved: {json_path}, {html_path} (policy weights for --replay in {out / capture['weights']})")
    return 0


def _replay(path: Path, overrides: list[str], out: Path | None) -> int:
    import json

    from rlvr.diagnostics.html import render_capture
    from rlvr.diagnostics.inspector import read_capture
    from rlvr.diagnostics.replay import replay, replay_lines

    if not overrides:
        raise UsageError("--replay needs at least one --set algo.KEY=VALUE to compare against the capture")
    _quiet_hugging_face()
    capture = read_capture(path)
    result = replay(capture, path.parent, overrides)
    out = out or path.parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(result) + "\n")
    (out / "replay.html").write_text(render_capture(capture, result))
    print("\n".join(replay_lines(result)))
    print(f"saved: {out / 'replay.json'}, {out / 'replay.html'}")
    return 0


def _grad_variance_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "grad-variance",
        help="gradient variance and noise scale for several group sizes G at an equal prompt count",
        description="For each G, sample G completions for each of the same train.batch_queries prompts "
        "from the same policy, take one gradient per prompt, and estimate tr(Sigma), |G|^2, the gradient "
        "variance and the noise scale B_simple (McCandlish et al. 2018, App. A), averaged over --batches.",
    )
    p.add_argument("--config", help="YAML preset (default: the built-in defaults)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field (repeatable)",
    )
    p.add_argument("--group-sizes", default="2,4,8,16", help="comma-separated G values, each >= 2 (default 2,4,8,16)")
    p.add_argument("--batches", type=int, default=4, help="batches of prompts averaged per G (default 4)")
    p.add_argument("--out", default="grad_variance.json", help="JSON file for the table (default grad_variance.json)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_grad_variance)


def _cmd_grad_variance(args: argparse.Namespace) -> int:
    import json

    try:
        sizes = [int(part) for part in args.group_sizes.split(",") if part.strip()]
    except ValueError:
        raise UsageError(
            f"--group-sizes {args.group_sizes!r}: expected comma-separated integers, e.g. 2,4,8,16"
        ) from None
    if not sizes or min(sizes) < 2:
        raise UsageError(f"--group-sizes {args.group_sizes!r}: every G must be >= 2 (a group of one has no baseline)")
    if args.batches < 1:
        raise UsageError("--batches must be >= 1")
    cfg = load_config(args.config, args.overrides)
    from rlvr.algos.registry import NotPolicyGradientError, require_policy_gradient

    try:
        require_policy_gradient(cfg.algo.algorithm, "rlvr grad-variance")
    except NotPolicyGradientError as error:
        raise UsageError(str(error)) from None
    if cfg.train.batch_queries < 2:
        raise UsageError(
            "train.batch_queries must be >= 2: the estimate compares one prompt's gradient with the batch's"
        )
    from rlvr.diagnostics.group_size import format_table, measure_group_sizes

    _quiet_hugging_face()
    print(
        f"rlvr grad-variance: model '{cfg.model.name}', {cfg.algo.algorithm}, "
        f"{cfg.train.batch_queries} prompts x G in {sizes}, {args.batches} batches each"
    )
    rows = measure_group_sizes(cfg, sizes, args.batches, progress=not args.quiet)
    print(format_table(rows))
    report = {
        "model": cfg.model.name,
        "algorithm": cfg.algo.algorithm,
        "config": cfg.to_dict(),
        "rows": [r.to_dict() for r in rows],
    }
    from rlvr.diagnostics.capture import to_json

    Path(args.out).write_text(json.dumps(to_json(report), indent=2) + "\n")  # NaN -> null
    print(f"saved: {args.out}")
    return 0


def _atlas_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "atlas",
        help="real runs around the default config, one knob at a time (fidelity, algorithm, G, beta, lr), for the lab",
        description="Train every value of every knob (verifier fidelity, algorithm, G, beta, learning rate) "
        "around the default configuration, a few seeds each, several single-thread runs side by side; "
        "finished runs are kept and interrupted ones resume. Writes <out>/runs/ and <out>/atlas.json (the index "
        "and each run's small results; the lab reads the runs, and the package ships one such file).",
    )
    p.add_argument("--out", required=True, help="atlas folder: runs/ and atlas.json")
    p.add_argument(
        "--knobs", help="comma-separated knobs to build (default: all of fidelity, algorithm, group_size, beta, lr)"
    )
    p.add_argument("--seeds", default="0,1,2", help="comma-separated training seeds (default 0,1,2)")
    p.add_argument("--steps", type=int, default=60, help="training steps per run (default 60)")
    p.add_argument("--jobs", type=int, help="runs side by side, one torch thread each (default: one per core)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_atlas)


def _cmd_atlas(args: argparse.Namespace) -> int:
    from rlvr.studies.atlas import build_atlas
    from rlvr.studies.sweep import parse_seeds

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: must be >= 1")
    knobs = [k.strip() for k in args.knobs.split(",") if k.strip()] if args.knobs else None
    command = "rlvr atlas " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 and sys.argv[1] == "atlas" else None
    index = build_atlas(
        args.out,
        knobs=knobs,
        seeds=tuple(parse_seeds(args.seeds)),
        steps=args.steps,
        jobs=args.jobs,
        progress=not args.quiet,
        command=command,
    )
    runs = sum(len(v["runs"]) for values in index["knobs"].values() for v in values)
    print(
        f"rlvr atlas: {index['runs_made']} runs made in {index['call_wall_s']:.0f} s "
        f"(the whole build: {index['build_wall_s']:.0f} s); "
        f"{len(index['knobs'])} knobs, {runs} (value, seed) pairs; index: {Path(args.out) / 'atlas.json'}"
    )
    return 0


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
    p.add_argument(
        "--grid",
        action="append",
        required=True,
        metavar="KEY=V1,V2",
        help="a config field and its values, e.g. reward.fidelity=gold,visible_only (repeatable)",
    )
    p.add_argument("--seeds", default="0", help="comma-separated training seeds (default 0)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field in every run (repeatable)",
    )
    p.add_argument("--out", required=True, help="sweep folder: one run directory per grid point and seed")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from rlvr.studies.sweep import format_table, parse_grid, parse_seeds, plan, run_sweep

    grid, seeds = parse_grid(args.grid), parse_seeds(args.seeds)
    runs = plan(args.config, grid, seeds, args.overrides)  # validates every point before the first run
    _quiet_hugging_face()
    print(f"rlvr sweep: {len(runs)} runs -> {args.out}")
    report = run_sweep(args.config, grid, seeds, args.out, overrides=args.overrides, progress=not args.quiet)
    print(format_table(report))
    print(f"saved: {Path(args.out) / 'sweep.json'}, {Path(args.out) / 'sweep.png'}")
    return 0


def _compare_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="train several algorithms on the same budget and seeds and compare them (table, JSON, PNG)",
        description="Train each algorithm with each seed on the same task, model and prompt budget (the "
        "--config preset with --set overrides; only algo.algorithm, train.seed and train.steps differ), "
        "then compare memory (measured memory/* metrics), online exploration, reward stability, held-out "
        "pass@1 / pass@k / CoT-pass@k and wall time. Each run is an ordinary run directory under --out. "
        "See docs/algorithms.md.",
    )
    p.add_argument("--algorithms", help="comma-separated (default: those of grpo,ppo,dpo this build has)")
    p.add_argument("--seeds", default="0,1", help="comma-separated seeds, at least 2 (default 0,1)")
    p.add_argument("--steps", type=int, default=50, help="training steps per run (default 50)")
    p.add_argument("--config", help="base YAML preset shared by every run (see configs/)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field for every run (repeatable)",
    )
    p.add_argument("--n", type=int, default=16, help="held-out samples per query for pass@k (default 16)")
    p.add_argument("--num-queries", type=int, default=100, help="held-out queries for pass@k (default 100, 0 = all)")
    p.add_argument("--out", help="folder for the runs and compare.{json,md,png} (default runs/compare-<time>)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=_cmd_compare)


def _int_list(flag: str, text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected comma-separated integers, e.g. {flag} 0,1") from None


def _cmd_compare(args: argparse.Namespace) -> int:
    import time

    from rlvr.studies.compare import check_budget, compare_algorithms, resolve_algorithms

    requested = None if args.algorithms is None else [a.strip() for a in args.algorithms.split(",") if a.strip()]
    algorithms, skipped = resolve_algorithms(requested)
    seeds = _int_list("--seeds", args.seeds)
    if args.num_queries < 0:
        raise UsageError("--num-queries must be >= 0 (0 = the whole held-out split)")
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= args.n]
    check_budget(seeds, args.steps, args.n, ks or [args.n + 1])
    out = Path(args.out) if args.out else Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"
    _quiet_hugging_face()
    if skipped:
        print(f"rlvr compare: not in this build, skipped: {', '.join(skipped)}")
    print(f"rlvr compare: {', '.join(algorithms)} x seeds {seeds}, {args.steps} steps each -> {out}")
    report = compare_algorithms(
        algorithms,
        seeds=seeds,
        steps=args.steps,
        config=args.config,
        overrides=args.overrides,
        out=out,
        n=args.n,
        ks=ks,
        num_queries=args.num_queries or None,
        progress=not args.quiet,
    )
    from rlvr.eval.compare import format_table

    print(format_table(report))
    print(
        f"saved: {out / 'compare.json'}, {out / 'compare.md'}, {out / 'compare.png'}; runs in {out}/<algorithm>-seed<N>/"
    )
    return 0


def _reproduce_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce",
        help="measure a published claim about RLVR end to end (controls, pass@k sharpening, length bias)",
        description="Run one study end to end: its arms over several seeds (single-thread runs side by side; "
        "an interrupted study resumes), pass@k evaluations where the claim needs them, then print each "
        "paper's claim beside the measured numbers and write <out>/reproduce.json and <out>/reproduce.png. "
        "`rlvr reproduce --list` names the studies and their time on 2 cores.",
    )
    p.add_argument("name", nargs="?", help="the study (see --list)")
    p.add_argument("--list", action="store_true", help="list the studies and exit")
    p.add_argument("--out", help="study folder: runs/, reproduce.json, reproduce.png (default runs/reproduce/NAME)")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated training seeds (default 0,1,2)")
    p.add_argument("--steps", type=int, help="training steps per run (default: the study's, see --list)")
    p.add_argument("--jobs", type=int, help="runs side by side, one torch thread each (default: one per core)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_reproduce)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from rlvr.studies.reproduce import STUDIES, reproduce
    from rlvr.studies.sweep import parse_seeds

    if args.list:
        for study in STUDIES.values():
            arms = ", ".join(arm.value for arm in study.arms)
            print(f"{study.name:<12} {study.title}\n{'':<12} arms: {arms}; {study.steps} steps; about "
                  f"{study.minutes} min on 2 cores with seeds 0,1,2")  # fmt: skip
        return 0
    if not args.name:
        raise UsageError(f"name a study: rlvr reproduce NAME, one of {', '.join(STUDIES)} (or --list)")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: must be >= 1")
    out = Path(args.out or Path("runs") / "reproduce" / args.name)
    command = "rlvr reproduce " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 and sys.argv[1] == "reproduce" else None
    card = reproduce(
        args.name,
        out,
        seeds=tuple(parse_seeds(args.seeds)),
        steps=args.steps,
        jobs=args.jobs,
        progress=not args.quiet,
        command=command,
    )
    print(f"{card['title']} ({len(card['seeds'])} seeds x {card['steps']} steps, {card['wall_s']:.0f} s)")
    for claim in card["claims"]:
        print(f"  claimed, {claim['source']}: {claim['text']}")
    for line in card["measured"]:
        print(f"  measured here: {line}")
    print(f"card: {out / 'reproduce.json'}, {out / 'reproduce.png'}")
    return 0


def _lab_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lab",
        help="a local web page: turn knobs and see measured effects from real runs (needs rlvr[lab])",
        description="Serve the lab on localhost. Its first page shows each knob's values side by side from the "
        "atlas of real runs the package ships (made by `rlvr atlas`), with your runs under --runs beside or "
        "instead of them; other tabs: single runs, live training runs started from the page, the memory "
        "estimator, pass@k, one update opened up, paradigms compared, verifiers attacked. Needs Gradio: "
        "pip install 'rlvr[lab]'.",
    )
    p.add_argument("--runs", default="runs", help="folder of run directories to read and write (default runs/)")
    p.add_argument("--port", type=int, default=7860, help="localhost port (default 7860)")
    p.set_defaults(func=_cmd_lab)


def _cmd_lab(args: argparse.Namespace) -> int:
    from rlvr.lab import run_lab

    run_lab(args.runs, args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr", description="Reinforcement learning with verifiable rewards.")
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _eval_parser(sub)
    _build_base_parser(sub)
    _verify_parser(sub)
    _data_parser(sub)
    _memory_parser(sub)
    _inspect_parser(sub)
    _grad_variance_parser(sub)
    _sweep_parser(sub)
    _atlas_parser(sub)
    _reproduce_parser(sub)
    _compare_parser(sub)
    _lab_parser(sub)
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
