"""Time one rlvr GRPO step against Hugging Face TRL's GRPOTrainer, interleaved in one process.

    python benchmarks/step_vs_trl.py                 # B=16, G=8, L=40, beta=0.04, 3 rounds x 5 steps
    python benchmarks/step_vs_trl.py --quick         # a ~1-minute smoke check of the same code path

Both sides train the same tiny model (by default the shipped embedded base, else a random Llama of
the same architecture) on the same arith prompts with the same hyperparameters, and a "step" is
the same work on both sides: sample G completions for each of B prompts (HF `generate`), score them
with rlvr's RewardFunction, group advantages, one no-grad forward of the frozen reference (beta > 0),
one forward/backward of the policy over all B*G completions, gradient clipping and one AdamW step.

How TRL 1.16 is made to do exactly one such step per optimizer step (trl/trainer/grpo_config.py,
`GRPOConfig.__post_init__`, and `GRPOTrainer._get_train_sampler`):

- TRL's `per_device_train_batch_size` counts *completions*, not prompts; the sampler repeats each
  prompt `num_generations` times. So `per_device_train_batch_size = B*G`, `num_generations = G`.
- `gradient_accumulation_steps = 1` and `steps_per_generation = 1`, hence
  `generation_batch_size = B*G` completions = B prompts, generated once per optimizer step, and the
  whole batch goes through one forward/backward in TRL. rlvr runs its default: length-sorted,
  padding-trimmed micro-batches of `optim.micro_batch_size` completions, which give the same
  gradient (tests/engine/test_update.py) with less padding. That is rlvr's step as users get it.
- `num_iterations = 1`, so TRL skips the old-log-prob forward (it uses the detached current
  log-probs); rlvr takes them from the logits `generate` returns. Neither side pays an extra pass.
- `loss_type = "grpo"` (DeepSeekMath per-sequence token mean, rlvr's `sequence_mean`),
  `scale_rewards = "group"`, `epsilon = 0.2`, plain k3 KL (`use_bias_correction_kl = False`, as rlvr),
  temperature 1, top_p 1, top_k 0, constant learning rate, AdamW (`optim = "adamw_torch"`,
  weight decay 0), `max_grad_norm = 1`, float32 (`bf16 = fp16 = False`), `use_cpu = True`.
- TRL's default `gradient_checkpointing = True` is turned off: rlvr's default does not checkpoint, and
  recomputing activations would make TRL slower for a reason unrelated to the step's design.
- Our char tokenizer adds no BOS, and rlvr's sampler prepends one; TRL's prompt column therefore
  starts with the BOS token's text, which the tokenizer maps to the BOS id, so both sides feed the
  model identical prompt ids and sample from the same distribution.

Timing: rlvr's step is the wall time of `Trainer.step(i)`. TRL's step is the wall time from the
`on_step_begin` to the `on_step_end` callback: generation, scoring, reference and policy passes,
clipping and the optimizer step. Outside that window are the dataloader fetch before a step and the
logging hook after it (this favours TRL; their size is reported as "TRL between-step overhead").
One `GRPOTrainer.train()` call runs all TRL steps; rlvr's blocks run inside the TRL callback between
TRL blocks, so neither side pays setup inside its timings. Rounds alternate which side goes first.
The first step of each side in the first round is warm-up and not counted, and the math verifier's
worker processes (shared by both sides through one RewardFunction) are started before any timing.

Work count: after the timed steps each side runs one more step under torch.profiler with FLOP
counting (TRL's is its last `max_steps`); those steps are not timed. A float32 GEMM timed right
after them gives this machine's multiply rate, and the table prints what the matmuls alone would
take at that rate, the part of a step that no reduction of overheads can remove.

The machine may be shared: every step also records how many CPU cores *other* processes kept busy
meanwhile (/proc/stat minus this process and its verifier workers). With 2 torch threads on 2 cores,
a neighbour's job can slow a step 10-100x (OpenMP threads wait on a descheduled peer), so the table
counts contended steps and also gives the ratio over uncontended steps only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path

import torch

from rlvr.bases import SHIPPED
from rlvr.bases.tiny import TinyArch, build_tiny_llama
from rlvr.config import load_config
from rlvr.engine.loop import Trainer
from rlvr.models import load_policy
from rlvr.models.tokenizer import build_char_tokenizer
from rlvr.types import Query
from rlvr.verifiers import RewardFunction

try:
    import psutil
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer
except ImportError:
    sys.exit("step_vs_trl: TRL is a benchmark extra; install it with: pip install -e '.[bench]'")


@dataclass
class StepRecord:
    side: str
    """'rlvr' or 'trl'."""
    round: int
    step_in_round: int
    wall_s: float
    """Wall time of the whole step."""
    generate_s: float
    """Part of wall_s spent sampling (prompt encoding, generate, decoding)."""
    mean_length: float
    """Mean completion length in tokens (EOS included), as rlvr's completions/mean_length."""
    clipped_ratio: float
    """Fraction of completions that hit max_new_tokens without an EOS."""
    foreign_cores: float | None
    """CPU cores other processes kept busy during the step (Linux /proc/stat); None if unknown."""
    threads: int
    warmup: bool
    phases: dict[str, float] = field(default_factory=dict)
    """rlvr only: its own time/* breakdown of the step."""


@dataclass
class Settings:
    model: str
    batch_queries: int
    group_size: int
    max_new_tokens: int
    beta: float
    lr: float
    rounds: int
    steps: int
    threads: int
    seed: int
    micro_batch_size: int = 32
    """rlvr's micro-batch size (its default); 0 runs the whole batch at once, as TRL does."""


@dataclass
class Recorder:
    records: list[StepRecord] = field(default_factory=list)
    trl_gaps_s: list[float] = field(default_factory=list)
    """Time between a TRL on_step_end and the next on_step_begin, when no rlvr block ran between."""
    matmul: dict[str, MatmulCount] = field(default_factory=dict)
    """Per side: the matrix-multiply work of one extra, untimed step, counted by torch.profiler."""
    gemm_peak_gflops: float | None = None
    """This machine's float32 GEMM rate, measured after the steps (gemm_peak_gflops)."""

    def add(
        self,
        side: str,
        round_: int,
        index: int,
        probe: CpuProbe,
        generate_s: float,
        mean_length: float,
        clipped_ratio: float,
        phases: dict[str, float] | None = None,
    ) -> None:
        wall_s, foreign = probe.stop()
        self.records.append(
            StepRecord(
                side,
                round_,
                index,
                wall_s,
                generate_s,
                mean_length,
                clipped_ratio,
                foreign,
                threads=torch.get_num_threads(),
                warmup=round_ == 0 and index == 0,
                phases=phases or {},
            )
        )


# --------------------------------------------------------------------------- contention probe

QUIET_CORES = 0.25
"""A step during which other processes kept more CPU busy than this is 'contended'."""


def own_cpu_seconds() -> float:
    """CPU seconds of this process and its children (the verifier's worker processes)."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # exited meanwhile
            pass
    return total


def busy_cpu_seconds() -> float | None:
    """CPU seconds the whole machine has been busy since boot (incl. steal), or None off Linux."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuProbe:
    """Wall time of a step and how much CPU *other* processes used meanwhile.

    On this shared 2-core machine a neighbour's job can inflate a step many times over (torch's
    OpenMP threads spin waiting for a descheduled peer), so every step says whether it ran alone.
    """

    def start(self) -> None:
        self.wall0, self.own0, self.busy0 = time.perf_counter(), own_cpu_seconds(), busy_cpu_seconds()

    def stop(self) -> tuple[float, float | None]:
        wall = time.perf_counter() - self.wall0
        own, busy = own_cpu_seconds() - self.own0, busy_cpu_seconds()
        if busy is None or self.busy0 is None:
            return wall, None
        return wall, max(0.0, (busy - self.busy0 - own) / wall)


# --------------------------------------------------------------------------- model and data


def resolve_model(path: str | None, workdir: Path) -> tuple[str, str]:
    """(model directory, description): the given path, the shipped base, or a random tiny Llama."""
    if path:
        return path, path
    if (SHIPPED / "config.json").is_file():
        return str(SHIPPED), "shipped embedded base (rlvr.bases.SHIPPED)"
    target = workdir / "tiny-random"
    tokenizer = build_char_tokenizer()
    build_tiny_llama(tokenizer, TinyArch(), seed=0).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return str(target), "random tiny Llama, TinyArch() defaults (shipped base not present)"


# --------------------------------------------------------------------------- matmul work


@dataclass
class MatmulCount:
    """The matrix multiplies of one step, as torch.profiler counts them (`with_flops`), which is
    where a transformer's arithmetic is. Attention kernels are not counted (at these lengths their
    arithmetic is small) and neither are element-wise ops."""

    gflop: float
    """Billions of floating-point operations in the step's matrix multiplies."""
    calls: int
    """How many matrix-multiply calls they took."""
    self_s: float
    """CPU time inside those calls (profiled, so a little inflated)."""


MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm"}
"""The leaf matrix-multiply ops (aten::linear and aten::matmul dispatch to these)."""


class MatmulCounter:
    """Profiles the code between `start()` and `stop()`: one step, outside every timing."""

    def start(self) -> None:
        self.profile = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True)
        self.profile.__enter__()

    def stop(self) -> MatmulCount:
        self.profile.__exit__(None, None, None)
        counted = [e for e in self.profile.key_averages() if e.key in MATMUL_OPS]
        return MatmulCount(
            gflop=sum(e.flops for e in counted) / 1e9,
            calls=sum(e.count for e in counted),
            self_s=sum(e.self_cpu_time_total for e in counted) / 1e6,
        )


def gemm_peak_gflops(rounds: int = 5) -> float:
    """This machine's float32 GEMM rate now, at the torch thread count in use: the best of a
    transformer-layer shape ([2048x128]x[128x384]) and a square 1024^3 product."""
    best = 0.0
    for m, k, n in [(2048, 128, 384), (1024, 1024, 1024)]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        reps = max(3, int(2e9 / (2 * m * k * n)))  # about 2 GFLOP per timing
        a @ b
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(reps):
                a @ b
            best = max(best, 2 * m * k * n * reps / (time.perf_counter() - start) / 1e9)
    return best


# --------------------------------------------------------------------------- rlvr side


def build_rlvr(s: Settings, out_dir: Path) -> Trainer:
    cfg = load_config(
        None,
        [
            f"model.name={s.model}",
            "model.device=cpu",
            f"train.batch_queries={s.batch_queries}",
            f"rollout.group_size={s.group_size}",
            f"rollout.max_new_tokens={s.max_new_tokens}",
            "rollout.temperature=1.0",
            "rollout.top_p=1.0",
            f"algo.beta={s.beta}",
            "algo.epsilon=0.2",
            "algo.num_iterations=1",
            "algo.aggregation=sequence_mean",
            "algo.kl_estimator=k3",
            f"optim.lr={s.lr}",
            "optim.weight_decay=0.0",
            "optim.warmup_steps=0",
            "optim.max_grad_norm=1.0",
            f"optim.micro_batch_size={s.micro_batch_size}",
            f"train.seed={s.seed}",
            "train.threads=0",  # 0: the Trainer leaves torch's thread count (set once in main) alone
        ],
    )
    return Trainer(cfg, out_dir)


def run_rlvr_block(trainer: Trainer, rec: Recorder, round_: int, steps: int, first_step: int) -> None:
    probe = CpuProbe()
    for index in range(steps):
        probe.start()
        metrics = trainer.step(first_step + index)
        rec.add(
            "rlvr",
            round_,
            index,
            probe,
            metrics["time/generate"],
            metrics["completions/mean_length"],
            metrics["completions/clipped_ratio"],
            phases={k.removeprefix("time/"): v for k, v in metrics.items() if k.startswith("time/")},
        )


# --------------------------------------------------------------------------- TRL side


class TrlSide:
    """GRPOTrainer configured to do rlvr's step; a reward function that wraps rlvr's RewardFunction."""

    def __init__(
        self, s: Settings, queries: list[Query], reward_fn: RewardFunction, out_dir: Path, callback: TrainerCallback
    ):
        self.queries, self.reward_fn = queries, reward_fn
        self.last_lengths: list[int] = []
        self.last_clipped = 0.0
        self.last_generate_s = 0.0
        model, tokenizer = load_policy(s.model, "cpu")
        self.eos_id = tokenizer.eos_token_id
        self.max_new_tokens = s.max_new_tokens
        dataset = Dataset.from_dict(
            {
                "prompt": [tokenizer.bos_token + q.prompt for q in queries],  # rlvr's [BOS] + prompt ids
                "query_index": list(range(len(queries))),
            }
        )
        self.trainer = GRPOTrainer(
            model=model,
            reward_funcs=self.arith_reward,
            args=self.config(s, out_dir),
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[callback],
        )
        self.trainer.remove_callback(PrinterCallback)  # it prints TRL's end-of-train metrics dict
        self._wrap_generate()

    @staticmethod
    def config(s: Settings, out_dir: Path) -> GRPOConfig:
        n = s.batch_queries * s.group_size
        return GRPOConfig(
            output_dir=str(out_dir),
            use_cpu=True,
            bf16=False,
            fp16=False,
            seed=s.seed,
            per_device_train_batch_size=n,
            gradient_accumulation_steps=1,
            steps_per_generation=1,
            num_generations=s.group_size,
            max_completion_length=s.max_new_tokens,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            beta=s.beta,
            epsilon=0.2,
            num_iterations=1,
            loss_type="grpo",
            scale_rewards="group",
            use_bias_correction_kl=False,
            mask_truncated_completions=False,
            learning_rate=s.lr,
            lr_scheduler_type="constant",
            warmup_steps=0,
            weight_decay=0.0,
            max_grad_norm=1.0,
            optim="adamw_torch",
            gradient_checkpointing=False,
            max_steps=s.rounds * s.steps + 1,  # + 1 counted, untimed
            logging_strategy="no",
            save_strategy="no",
            eval_strategy="no",
            report_to="none",
            disable_tqdm=True,
            dataloader_num_workers=0,
            remove_unused_columns=False,
            log_completions=False,
        )

    def arith_reward(
        self,
        prompts: list[str],
        completions: list[str],
        completion_ids: list[list[int]],
        query_index: list[int],
        **_: object,
    ) -> list[float | None]:
        """rlvr's reward for each completion; None (unscorable) is kept out of TRL's group baseline."""
        scored = self.reward_fn.score_batch([(self.queries[i], c) for i, c in zip(query_index, completions)])
        self.last_lengths = [len(ids) for ids in completion_ids]
        self.last_clipped = sum(self.eos_id not in ids for ids in completion_ids) / len(completion_ids)
        return [s.reward for s in scored]

    def _wrap_generate(self) -> None:
        """Time TRL's sampling (tokenize, generate, decode), the counterpart of rlvr's time/generate."""
        inner = self.trainer._generate

        def timed(prompts: list) -> tuple:
            start = time.perf_counter()
            out = inner(prompts)
            self.last_generate_s = time.perf_counter() - start
            return out

        self.trainer._generate = timed


class Interleave(TrainerCallback):
    """Times each TRL optimizer step and runs rlvr's blocks between TRL's blocks, per the plan.
    The step after the plan is TRL's counted one: profiled for its matrix multiplies, not timed."""

    def __init__(self, plan: list[tuple[str, int]], run_rlvr: Callable[[int], None], rec: Recorder):
        self.plan, self.run_rlvr, self.rec = list(plan), run_rlvr, rec
        self.trl: TrlSide | None = None
        self.block, self.done_in_block, self.probe = 0, 0, CpuProbe()
        self.last_end: float | None = None
        self.counter = MatmulCounter()

    def run_due_rlvr_blocks(self) -> None:
        while self.block < len(self.plan) and self.plan[self.block][0] == "rlvr":
            self.run_rlvr(self.block)
            self.block += 1
            self.last_end = None  # an rlvr block ran: the next TRL gap is not TRL's own overhead

    def on_train_begin(self, args, state, control, **kwargs):
        self.run_due_rlvr_blocks()

    def on_step_begin(self, args, state, control, **kwargs):
        if self.block == len(self.plan):
            self.counter.start()
            return
        self.probe.start()
        if self.last_end is not None:
            self.rec.trl_gaps_s.append(self.probe.wall0 - self.last_end)

    def on_step_end(self, args, state, control, **kwargs):
        if self.block == len(self.plan):
            self.rec.matmul["trl"] = self.counter.stop()
            return
        lengths = self.trl.last_lengths
        self.rec.add(
            "trl",
            round_of(self.block),
            self.done_in_block,
            self.probe,
            self.trl.last_generate_s,
            sum(lengths) / len(lengths),
            self.trl.last_clipped,
        )
        self.done_in_block += 1
        self.last_end = time.perf_counter()
        if self.done_in_block == self.plan[self.block][1]:
            self.block, self.done_in_block = self.block + 1, 0
            progress(self.rec, "trl")
            self.run_due_rlvr_blocks()


# --------------------------------------------------------------------------- plan, run, report


def make_plan(rounds: int, steps: int) -> list[tuple[str, int]]:
    """Blocks of (side, steps); even rounds run rlvr first, odd rounds TRL first."""
    plan = []
    for r in range(rounds):
        order = ("rlvr", "trl") if r % 2 == 0 else ("trl", "rlvr")
        plan += [(side, steps) for side in order]
    return plan


def round_of(block: int) -> int:
    return block // 2  # make_plan puts two blocks in each round


def progress(rec: Recorder, side: str) -> None:
    last = [r for r in rec.records if r.side == side]
    r = last[-1].round
    walls = [x.wall_s for x in last if x.round == r]
    print(f"  round {r + 1}: {side:<4} {len(walls)} steps, median {statistics.median(walls):.3f} s/step", flush=True)


def run(s: Settings, workdir: Path) -> Recorder:
    rec = Recorder()
    rlvr = build_rlvr(s, workdir / "rlvr")
    # The math verifier starts its worker processes (seconds) on the first answer it cannot judge
    # exactly in-process (integers and fractions it can). Start them now with a surd, outside any
    # timing; both sides then share the warm pool through one RewardFunction.
    rlvr.reward_fn.score_batch([(rlvr.train_queries[0], "<answer>\\sqrt{2}</answer>")])
    assert rlvr.reward_fn._verifier_for("math").pool.started, "the math-verify workers did not start"
    plan = make_plan(s.rounds, s.steps)
    next_step = iter(range(0, 10**9, s.steps))

    def run_rlvr(block: int) -> None:
        run_rlvr_block(rlvr, rec, round_of(block), plan[block][1], next(next_step))
        progress(rec, "rlvr")

    callback = Interleave(plan, run_rlvr, rec)
    # Same queries, same reward function instance (and its verifier workers) on both sides.
    callback.trl = TrlSide(s, rlvr.train_queries, rlvr.reward_fn, workdir / "trl", callback)
    callback.trl.trainer.train()  # the plan's blocks, then TRL's counted step
    counter = MatmulCounter()
    counter.start()
    rlvr.step(next(next_step))
    rec.matmul["rlvr"] = counter.stop()
    rec.gemm_peak_gflops = gemm_peak_gflops()
    return rec


def side_stats(timed: list[StepRecord]) -> dict:
    walls = [r.wall_s for r in timed]
    foreign = [r.foreign_cores for r in timed if r.foreign_cores is not None]
    return {
        "steps_timed": len(timed),
        "median_s": statistics.median(walls),
        "mean_s": statistics.fmean(walls),
        "min_s": min(walls),
        "max_s": max(walls),
        "median_generate_s": statistics.median(r.generate_s for r in timed),
        "mean_completion_length": statistics.fmean(r.mean_length for r in timed),
        "clipped_ratio": statistics.fmean(r.clipped_ratio for r in timed),
        "threads": sorted({r.threads for r in timed}),
        "mean_foreign_cores": statistics.fmean(foreign) if foreign else None,
        "contended_steps": sum(f > QUIET_CORES for f in foreign),
    }


def quiet_ratio(timed: dict[str, list[StepRecord]]) -> float | None:
    """Median ratio over the steps no other process disturbed, when each side has at least 3."""
    quiet = {
        side: [r.wall_s for r in rs if r.foreign_cores is not None and r.foreign_cores <= QUIET_CORES]
        for side, rs in timed.items()
    }
    if min(len(q) for q in quiet.values()) < 3:
        return None
    return statistics.median(quiet["trl"]) / statistics.median(quiet["rlvr"])


def summarize(s: Settings, rec: Recorder, model_desc: str) -> dict:
    timed = {side: [r for r in rec.records if r.side == side and not r.warmup] for side in ("rlvr", "trl")}
    sides = {side: side_stats(rs) for side, rs in timed.items()}
    per_round = []
    for r in range(s.rounds):
        med = {side: statistics.median(x.wall_s for x in rs if x.round == r) for side, rs in timed.items()}
        per_round.append(med["trl"] / med["rlvr"])
    phase_names = timed["rlvr"][0].phases
    return {
        "settings": asdict(s) | {"model_description": model_desc},
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": version("transformers"),
            "trl": version("trl"),
            "rlvr": version("rlvr"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads",
        },
        "sides": sides,
        "median_ratio_trl_over_rlvr": sides["trl"]["median_s"] / sides["rlvr"]["median_s"],
        "per_round_median_ratio": per_round,
        "quiet_steps_median_ratio": quiet_ratio(timed),
        "rlvr_median_phases_s": {k: statistics.median(r.phases[k] for r in timed["rlvr"]) for k in phase_names},
        "trl_between_step_overhead_median_s": statistics.median(rec.trl_gaps_s) if rec.trl_gaps_s else None,
        "matmul_per_step": {side: asdict(count) for side, count in rec.matmul.items()},
        "gemm_peak_gflops": rec.gemm_peak_gflops,
        "steps": [asdict(r) for r in rec.records],
    }


def _pair(stats: dict, key: str, fmt: str) -> tuple[str, str]:
    return tuple("n/a" if stats[side][key] is None else fmt.format(stats[side][key]) for side in ("rlvr", "trl"))


def print_table(summary: dict) -> None:
    st, v, sides = summary["settings"], summary["versions"], summary["sides"]
    rows = [
        ("steps timed", *_pair(sides, "steps_timed", "{}")),
        ("median step", *_pair(sides, "median_s", "{:.3f} s")),
        ("mean step", *_pair(sides, "mean_s", "{:.3f} s")),
        ("min step", *_pair(sides, "min_s", "{:.3f} s")),
        ("max step", *_pair(sides, "max_s", "{:.3f} s")),
        ("median generate", *_pair(sides, "median_generate_s", "{:.3f} s")),
        ("mean completion length", *_pair(sides, "mean_completion_length", "{:.1f} tok")),
        ("clipped at max length", *_pair(sides, "clipped_ratio", "{:.1%}")),
        ("other processes' CPU", *_pair(sides, "mean_foreign_cores", "{:.2f} cores")),
        (f"steps contended >{QUIET_CORES}", *_pair(sides, "contended_steps", "{}")),
        ("torch threads", *(",".join(map(str, sides[x]["threads"])) for x in ("rlvr", "trl"))),
    ]
    print()
    print(f"model: {st['model_description']}")
    print(
        f"B={st['batch_queries']} prompts x G={st['group_size']} completions, L={st['max_new_tokens']} "
        f"max new tokens, beta={st['beta']}, lr={st['lr']}, {st['rounds']} rounds x {st['steps']} steps "
        f"per side (first step of each side discarded)"
    )
    print(f"{'':<26}{'rlvr':>18}{'TRL GRPOTrainer':>18}")
    for name, a, b in rows:
        print(f"{name:<26}{a:>18}{b:>18}")
    ratios = ", ".join(f"{r:.2f}" for r in summary["per_round_median_ratio"])
    print(f"median ratio TRL / rlvr: {summary['median_ratio_trl_over_rlvr']:.2f}x  (per round: {ratios})")
    if summary["quiet_steps_median_ratio"] is not None:
        print(f"median ratio TRL / rlvr, uncontended steps only: {summary['quiet_steps_median_ratio']:.2f}x")
    phases = ", ".join(f"{k} {v:.3f}" for k, v in summary["rlvr_median_phases_s"].items())
    print(f"rlvr median phases (s): {phases}")
    gap = summary["trl_between_step_overhead_median_s"]
    if gap is not None:
        print(f"TRL between-step overhead (outside TRL's timings): median {gap * 1000:.1f} ms")
    print_matmul_floor(summary)
    print(
        f"versions: python {v['python']}, torch {v['torch']}, transformers {v['transformers']}, "
        f"trl {v['trl']}, rlvr {v['rlvr']}; {v['machine']}"
    )
    if any(sides[x]["contended_steps"] for x in ("rlvr", "trl")):
        print(
            f"warning: other processes used more than {QUIET_CORES} cores during some timed steps; "
            "those steps are inflated (see 'uncontended steps only', or rerun on an idle machine)"
        )


def print_matmul_floor(summary: dict) -> None:
    """How much of each side's step the matrix multiplies alone would take at this machine's GEMM
    rate: the part of a step no change to overheads can remove."""
    mm, peak = summary["matmul_per_step"], summary["gemm_peak_gflops"]
    if set(mm) != {"rlvr", "trl"} or not peak:
        return
    rlvr, trl = mm["rlvr"], mm["trl"]
    print(
        f"matmul work of one untimed step (torch.profiler FLOP count): rlvr {rlvr['gflop']:.1f} GFLOP "
        f"in {rlvr['calls']} calls, TRL {trl['gflop']:.1f} GFLOP in {trl['calls']} calls "
        f"(rlvr/TRL {rlvr['gflop'] / trl['gflop']:.2f})"
    )
    floor = {side: mm[side]["gflop"] / peak for side in mm}
    print(
        f"GEMM rate here: {peak:.1f} GFLOP/s; at that rate the matmuls alone take rlvr {floor['rlvr']:.3f} s, "
        f"TRL {floor['trl']:.3f} s per step"
    )
    target = summary["sides"]["trl"]["median_s"] / 2
    print(
        f"2x would need an rlvr step of at most {target:.3f} s (TRL median / 2), of which its matmul floor "
        f"is {floor['rlvr'] / target:.0%}; the rest of rlvr's step now takes "
        f"{summary['sides']['rlvr']['median_s'] - floor['rlvr']:.3f} s"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--model",
        help="Hugging Face model directory (default: the shipped embedded base, "
        "else a random tiny Llama of the same architecture)",
    )
    p.add_argument("--batch-queries", "-B", type=int, default=16, help="B: prompts per step (default 16)")
    p.add_argument("--group-size", "-G", type=int, default=8, help="G: completions per prompt (default 8)")
    p.add_argument("--max-new-tokens", "-L", type=int, default=40, help="max completion length (default 40)")
    p.add_argument("--beta", type=float, default=0.04, help="KL weight (default 0.04)")
    p.add_argument(
        "--lr",
        type=float,
        default=5e-4,
        help="AdamW learning rate (default 5e-4, the rate of the published timings; rlvr's default is 1e-4)",
    )
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--steps", type=int, default=5, help="steps per side per round (default 5)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads, both sides (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of both trainers (default 0)")
    p.add_argument(
        "--micro-batch-size",
        type=int,
        default=32,
        help="rlvr's optim.micro_batch_size (default 32, rlvr's default; 0 = whole batch as TRL)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a ~1-minute check: B=8, G=4, 2 rounds x 2 steps (explicit -B/-G/... still win)",
    )
    p.add_argument("--json", type=Path, help="also write the summary and every step's numbers here")
    args = p.parse_args(argv)
    if args.quick:
        given = set(sys.argv[1:] if argv is None else argv)
        for flags, name, value in [
            (("--batch-queries", "-B"), "batch_queries", 8),
            (("--group-size", "-G"), "group_size", 4),
            (("--rounds",), "rounds", 2),
            (("--steps",), "steps", 2),
        ]:
            if not any(a.split("=")[0] in flags for a in given):
                setattr(args, name, value)
    if args.steps < 2 or args.rounds < 1:
        p.error("need --steps >= 2 and --rounds >= 1 (the first step of the first round is warm-up)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    hf_logging.disable_progress_bar()
    # transformers 5 renames gradient_checkpointing; TRL 1.16 still sets the old name.
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    torch.set_num_threads(args.threads)  # once, for both sides
    with tempfile.TemporaryDirectory(prefix="rlvr-bench-") as tmp:
        workdir = Path(tmp)
        model, desc = resolve_model(args.model, workdir)
        s = Settings(
            model,
            args.batch_queries,
            args.group_size,
            args.max_new_tokens,
            args.beta,
            args.lr,
            args.rounds,
            args.steps,
            args.threads,
            args.seed,
            args.micro_batch_size,
        )
        print(f"rlvr vs TRL GRPO step: {s.rounds} rounds x {s.steps} steps per side, model: {desc}", flush=True)
        rec = run(s, workdir)
    summary = summarize(s, rec, desc)
    print_table(summary)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
