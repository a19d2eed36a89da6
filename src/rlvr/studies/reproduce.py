"""`rlvr reproduce NAME`: a published claim about RLVR, measured end to end on this machine.

    rlvr reproduce --list
    rlvr reproduce controls --out runs/reproduce/controls

A study is a few arms (configurations), each trained over several seeds by the runner
(studies/runner.py) in processes of their own, side by side (the atlas's runs, so a study resumes
after an interruption too), then, where the claim is about pass@k, evaluated as `rlvr eval` does
against the base model. The study's report (studies/study_reports.py) sets each paper's claim
beside the numbers measured here, mean ± standard deviation over seeds, and writes a card:
``<out>/reproduce.json`` and ``<out>/reproduce.png`` (studies/study_card.py).

Every held-out number is judged by the gold verifier: sampled pass@1 (n = 4 at T = 1) and greedy
accuracy side by side, before training and after.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlvr.config import load_config
from rlvr.errors import UserError
from rlvr.rundir import read_summary
from rlvr.studies.atlas import AtlasRun, Setting, checkout_commit, preset_path, provenance, run_all, run_card
from rlvr.studies.runner import EVAL_REPORT, run_many
from rlvr.studies.study_card import draw_card, passk_curves, passk_of
from rlvr.studies.study_data import LENGTHS, reward_of, run_data, study_data, write_study_data
from rlvr.studies.study_data import SELF_CHECK as SELF_CHECK_CURVES
from rlvr.studies.study_evals import PASSK, base_spec, passk_spec, write_base_config
from rlvr.studies.study_reports import (
    controls_report,
    expansion_report,
    length_report,
    self_check_report,
    sharpening_report,
)
from rlvr.studies.supervised import SOURCES


class ReproduceError(UserError):
    """An unknown study, or bad seeds."""


@dataclass(frozen=True)
class Claim:
    source: str
    """Paper, as cited in REFERENCES.md."""
    text: str
    """What it reports, in its own setting."""


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    claims: tuple[Claim, ...]
    arms: tuple[Setting, ...]
    """Each arm is a configuration: a preset (or the default) and overrides (Setting.knob = the study)."""
    steps: int
    minutes: int
    """What the whole study takes on 2 cores, measured (docs/results.md)."""
    passk_arms: tuple[str, ...] = ()
    """Arms whose trained models `rlvr eval` compares with the base, each seed with its own sampling seed."""
    passk_ks: tuple[int, ...] = PASSK
    """The k of that evaluation; n = the largest k samples per held-out query (Yue et al. 2025 go to 256)."""
    falsifier: str = ""
    """The result that would have refuted the claim here, said before the study runs."""
    base_temperatures: tuple[float, ...] = ()
    """Free sharpening: the base alone sampled at these temperatures, per seed, at passk_ks."""
    curve_keys: tuple[str, ...] = ()
    """Per-step metrics each seed's record keeps in the study's data (study_data.py)."""
    report: Callable[[dict[str, list[dict]]], list[str]] = field(default=lambda arms: [], repr=False)
    """Lines that set the measurements beside the claims, from {arm: [run results]}."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """The seeds its README claim rests on (`--seeds` changes them)."""
    eval_queries: int = 100
    """Held-out queries of each pass@k evaluation (`--eval-queries` changes it)."""
    support_k: int | None = None
    """Each query's support at this k, base against trained (`rlvr eval --support-k`). Every arm then
    starts from one base on one held-out task: the base is evaluated once per seed, beside the
    training, and each arm's evaluation reuses it."""
    support_arms: tuple[str, ...] = ()
    """With support_k, the arms whose trained models draw on to it; the others' evaluations stop at n
    (their pass@k curves), reusing the same base."""


NOISY = ("reward.fidelity=noisy", "reward.false_positive_rate=0.5", "reward.false_negative_rate=0.5")
CLIP_CAN_ACT = ("model.name=tiny-arith-loose", "optim.lr=1e-4", "algo.num_iterations=4")
"""Four optimisation passes over each batch, so the importance ratios leave 1 and the clip can act
(Shao et al.'s mechanism), at the learning rate the atlas found stable for the gold reward, from a
base that writes the R1 format on about half of its samples (bases/tiny_arith_loose.py), so that a
format reward has something to teach."""
BERNOULLI = ("reward.fidelity=random", "reward.random_rate=0.5")
"""Shao et al.'s random reward: 1 with probability 0.5 per rollout, whatever it says."""
SELF_CHECK = ("model.name=tiny-arith-check", "rollout.max_new_tokens=64")
"""The base that sometimes checks a step (bases/tiny_arith_check.py), with room for its checks."""
ROOM_TO_GROW = ("model.name=tiny-arith-check", "rollout.max_new_tokens=96")
"""A base whose completions can grow (a check after a step, a step written again) and room to grow:
its completions are 20-50 tokens, arith's worked solutions have a fixed length."""

STUDIES: dict[str, Study] = {
    study.name: study
    for study in (
        Study(
            "controls",
            "Spurious rewards: does a reward that ignores correctness still teach?",
            (
                Claim("Shao et al. 2025 (arXiv 2506.10947)",
                      "Qwen2.5-Math-7B on MATH-500: ground truth +28.8, random reward +21.4, format-only +13.8 "
                      "points; no gains on Llama3 or OLMo2. The mechanism: with several updates per batch the "
                      "clip favours what the base already does often; with clipping off the random-reward "
                      "gain goes away"),
                Claim("Wu et al. 2025 (arXiv 2507.10532)",
                      "on a clean arithmetic generator only accurate rewards beat the base; random ones do not"),
            ),
            (
                Setting("controls", "gold", None, CLIP_CAN_ACT),
                Setting("controls", "bernoulli", None, (*CLIP_CAN_ACT, *BERNOULLI)),
                Setting("controls", "bernoulli no-clip", None, (*CLIP_CAN_ACT, *BERNOULLI, "algo.epsilon=1000")),
                Setting("controls", "format only", None,
                        (*CLIP_CAN_ACT, "reward.correctness_weight=0", "reward.format_weight=1")),
            ),
            steps=100,
            minutes=12,
            passk_arms=("gold", "bernoulli", "bernoulli no-clip", "format only"),
            passk_ks=(1, 2, 4, 8, 16),
            curve_keys=("format_rate",),
            falsifier="Shao et al.'s mechanism is refuted here if the Bernoulli arm with clipping does not move "
                      "pass@1 further from the base than the arm without clipping (by two standard errors over "
                      "seeds); Wu et al.'s claim if a Bernoulli or format-only arm raises pass@1 as the gold "
                      "arm does; the format arm is a control only if its reward moves the format rate (from "
                      "about half at the base) beyond two standard errors, and Shao et al.'s format result "
                      "is refuted here if it does so without raising pass@1",
            report=controls_report,
        ),
        Study(
            "sharpening",
            "Compression or new capability? pass@k of base and trained model up to k = 256",
            (
                Claim("Yue et al. 2025 (arXiv 2504.13837)",
                      "RL wins at small k; the base overtakes it between k of tens and hundreds"),
                Claim("Wen et al. 2025 (arXiv 2506.14245)", "RLVR raises CoT-pass@k at all k"),
            ),
            (
                Setting("sharpening", "default"),
                Setting("sharpening", "lr 5e-4", None, ("optim.lr=5e-4",)),
                Setting("sharpening", "beta 0.4", None, ("algo.beta=0.4",)),
            ),
            steps=100,
            minutes=13,
            passk_arms=("default", "lr 5e-4", "beta 0.4"),
            base_temperatures=(0.3, 0.6),
            falsifier="Yue et al.'s reading is refuted here if the trained model's pass@k stays above the base's "
                      "at every k up to 256; Wen et al.'s if the trained CoT-pass@k falls below the base's at some k",
            report=sharpening_report,
        ),
        Study(
            "expansion",
            "New capability? An answer-only reward on chains the base rarely completes, against supervised "
            "controls, support to k = 4096",
            (
                Claim("Wen et al. 2025 (arXiv 2506.14245)",
                      "with an answer-only reward, RLVR raises CoT-pass@k (reasoning judged by a checker the policy "
                      "never trained on) at all k"),
                Claim("Liu et al. 2025, ProRL (arXiv 2505.24864)",
                      "on tasks where the base is weak, long RL raises pass@k at all k: the boundary moves"),
                Claim("Wu et al. 2025, The Invisible Leash (arXiv 2507.14843)",
                      "per problem, RLVR mostly preserves the base's support and shrinks it more often than it "
                      "expands it (AIME24 pass@8192: base 93.3%, ProRL-1.5B 83.3%)"),
                Claim("Yue et al. 2025 (arXiv 2504.13837)",
                      "the base overtakes the RL model at large k: RL only reweights what the base can sample"),
            ),
            (
                Setting("expansion", "answer-only", "configs/expansion.yaml"),
                Setting("expansion", "sft", "configs/expansion.yaml", supervised="gold"),
                Setting("expansion", "rft", "configs/expansion.yaml", supervised="rft"),
            ),
            steps=500,
            minutes=40,
            passk_arms=("answer-only", "sft", "rft"),
            seeds=(0, 1, 2, 3, 4),
            eval_queries=50,
            support_k=4096,
            support_arms=("answer-only", "sft"),
            falsifier="Wen et al. and ProRL are refuted here if the answer-only arm's CoT-pass@k falls below the "
                      "base's at some k up to 256 on most seeds, or if at k = 4096 fewer queries are expanded "
                      "(solved by the trained model alone) than shrunk (by the base alone), summed over seeds: "
                      "the Invisible Leash's reading; that RL adds to fine-tuning, if SFT on the gold chains "
                      "or RFT on the base's own right samples reaches the RL arm's CoT-pass@1 and CoT-pass@256",
            report=expansion_report,
        ),
        Study(
            "self-verification",
            "Does checking one's own steps emerge from an answer-only reward?",
            (
                Claim("DeepSeek-R1 (2025)", "with rule-based rewards and no SFT, self-verification and reflection "
                      "emerge and grow over training"),
                Claim("TinyZero (Countdown)", "a 3B Qwen2.5 base learns self-verification; a 0.5B one does not"),
            ),
            (
                Setting("self-verification", "gold reward", None, SELF_CHECK),
                Setting("self-verification", "bernoulli reward", None, (*SELF_CHECK, *BERNOULLI)),
                Setting("self-verification", "gold reward, 5 operands", None,
                        ("model.name=tiny-arith-check", "task.operands=5", "rollout.max_new_tokens=96")),
            ),
            steps=100,
            minutes=10,
            passk_arms=("gold reward", "bernoulli reward", "gold reward, 5 operands"),
            passk_ks=(1, 2, 4, 8, 16),
            curve_keys=SELF_CHECK_CURVES,
            falsifier="R1's emergence is refuted here if the share of completions that check a step does not "
                      "rise under the gold reward beyond two standard errors over seeds, or rises as much under "
                      "the Bernoulli reward; that checks pay, if at the base (the first 10 steps) checked "
                      "completions are not right more often than unchecked ones",
            report=self_check_report,
        ),
        Study(
            "length-bias",
            "Dr. GRPO: per-sequence normalisation lets wrong answers grow long",
            (
                Claim("Liu et al. 2025, Dr. GRPO (arXiv 2503.20783)",
                      "the 1/|o| weighting lets wrong answers grow long; a constant normaliser removes the bias"),
            ),
            (
                Setting("length-bias", "sequence_mean (GRPO)", None, ROOM_TO_GROW),
                Setting("length-bias", "constant (Dr. GRPO)", None, (*ROOM_TO_GROW, "algo.aggregation=constant")),
            ),
            steps=100,
            minutes=7,
            passk_arms=("sequence_mean (GRPO)", "constant (Dr. GRPO)"),
            passk_ks=(1, 2, 4, 8, 16),
            curve_keys=LENGTHS,
            falsifier="the bias is refuted here if wrong answers do not grow more under sequence_mean than "
                      "under constant, beyond two standard errors, from a base whose completions can lengthen "
                      "(checks and redone steps) with room to 96 tokens",
            report=length_report,
        ),
    )
}  # fmt: skip


def study_list() -> list[str]:
    """What `rlvr reproduce --list` prints: each study's name and title, its arms, steps and time,
    and the result that would refute its claim."""
    lines = []
    for study in STUDIES.values():
        arms = ", ".join(arm.value for arm in study.arms)
        seeds = ",".join(map(str, study.seeds))
        lines.append(f"{study.name:<12} {study.title}\n{'':<12} arms: {arms}; {study.steps} steps; about "
                     f"{study.minutes} min on 2 cores with seeds {seeds}\n{'':<12} falsifiable: {study.falsifier}")  # fmt: skip
    return lines


def card_lines(card: dict[str, Any]) -> list[str]:
    """A study's card as `rlvr reproduce` prints it: the title, each claim, each measured line."""
    lines = [f"{card['title']} ({len(card['seeds'])} seeds x {card['steps']} steps, {card['wall_s']:.0f} s)"]
    lines += [f"  claimed, {claim['source']}: {claim['text']}" for claim in card["claims"]]
    return lines + [f"  measured here: {line}" for line in card["measured"]]


# ---------------------------------------------------------------------------------------------
# Running a study


def runs_of(study: Study, seeds: list[int], steps: int | None = None) -> list[AtlasRun]:
    return [AtlasRun(arm, seed, steps or study.steps) for arm in study.arms for seed in seeds]


def _check(name: str, seeds: tuple[int, ...] | None, steps: int | None) -> Study:
    """The study asked for, every arm a valid configuration, before any run starts."""
    if name not in STUDIES:
        raise ReproduceError(f"unknown study {name!r}; known: {', '.join(STUDIES)} (rlvr reproduce --list)")
    seeds = STUDIES[name].seeds if seeds is None else seeds
    if len(seeds) < 1:
        raise ReproduceError("--seeds: give at least one seed")
    if steps is not None and steps < 2:
        raise ReproduceError(f"--steps {steps}: a study run needs at least 2 steps")
    for run in runs_of(STUDIES[name], list(seeds), steps):  # a bad arm fails before any run starts
        load_config(preset_path(run.setting.config), run.overrides)
    return STUDIES[name]


def _train_and_evaluate(
    study: Study, out: Path, runs: list[AtlasRun], jobs: int | None, progress: bool, queries: int
) -> None:
    """Every run trained (or kept), then the pass@k arms evaluated (or kept), each side by side.
    With support_k, each seed's base is evaluated beside the training (it needs no trained model)."""
    bases = []
    if study.support_k is not None:
        for run in runs:
            if run.setting == study.arms[0]:
                bases.append(base_spec(out, run, queries, study.passk_ks, study.support_k))
                write_base_config(bases[-1], run)
    run_all(out, runs, jobs=jobs, progress=progress, desc=study.name, also=bases)
    evaluations = [
        passk_spec(
            out,
            run,
            queries,
            study.passk_ks,
            support_k=study.support_k,
            draw_on=run.setting.value in study.support_arms,
        )  # fmt: skip
        for run in runs
        if run.setting.value in study.passk_arms
    ]
    first = [run for run in runs if run.setting == study.arms[0]]  # one base baseline per seed
    evaluations += [passk_spec(out, run, queries, study.passk_ks, t) for t in study.base_temperatures for run in first]
    failed = run_many(evaluations, jobs=jobs, progress=False).failed
    if failed:
        raise ReproduceError(f"rlvr eval failed for {Path(failed[0].run_dir).name}: see {failed[0].log_path()}")


def _arms(out: Path, runs: list[AtlasRun]) -> dict[str, list[dict]]:
    """{arm: [each seed's run card and eval.json (None where not evaluated)]}."""
    arms: dict[str, list[dict]] = {}
    for run in runs:
        run_dir = out / "runs" / run.dir_name
        evaluation = run_dir / "eval" / EVAL_REPORT
        temperatures = {
            path.parent.name.removeprefix("eval-T"): json.loads(path.read_text())
            for path in sorted(run_dir.glob(f"eval-T*/{EVAL_REPORT}"))
        }
        supervised = (read_summary(run_dir) or {}).get("supervised")
        arms.setdefault(run.setting.value, []).append(
            {
                "dir": f"runs/{run.dir_name}",
                "seed": run.seed,
                "card": run_card(run_dir),
                "eval": json.loads(evaluation.read_text()) if evaluation.is_file() else None,
                **({"temperatures": temperatures} if temperatures else {}),
                **({"supervised": supervised} if supervised else {}),
            }
        )
    return arms


def reproduce(
    name: str,
    out: str | Path,
    *,
    seeds: tuple[int, ...] | None = None,
    steps: int | None = None,
    jobs: int | None = None,
    progress: bool = True,
    command: str | None = None,
    eval_queries: int | None = None,
    support_k: int | None = None,
) -> dict[str, Any]:
    """Run a study (keeping what is already made) and write its card; return the card. `seeds`,
    `steps`, `eval_queries` (the pass@k evaluation's held-out size) and `support_k` replace the
    study's own."""
    study, out = _check(name, seeds, steps), Path(out)
    if support_k is not None:
        if study.support_k is None:
            raise ReproduceError(f"--support-k: study {name!r} does not measure support (expansion does)")
        if support_k < study.passk_ks[-1]:
            raise ReproduceError(f"--support-k {support_k} is below the study's n = {study.passk_ks[-1]}")
        study = replace(study, support_k=support_k)
    seeds = study.seeds if seeds is None else seeds
    eval_queries = study.eval_queries if eval_queries is None else eval_queries
    runs = runs_of(study, list(seeds), steps)
    commit, started = checkout_commit(), time.perf_counter()
    _train_and_evaluate(study, out, runs, jobs, progress, eval_queries)
    arms = _arms(out, runs)
    card = {
        "study": study.name,
        "title": study.title,
        "command": command,
        "made": provenance(commit),
        "wall_s": round(time.perf_counter() - started, 1),
        "seeds": list(seeds),
        "steps": steps or study.steps,
        "claims": [{"source": c.source, "text": c.text} for c in study.claims],
        "falsifier": study.falsifier,
        "measured": study.report(arms),
        "arms": {
            arm: [
                {k: v for k, v in r.items() if k not in ("eval", "temperatures")} | {"eval": passk_of(r["eval"])}
                for r in results
            ]
            for arm, results in arms.items()
        },  # fmt: skip
    }
    _write(card, out)
    write_study_data(study_data(card, _arm_data(study, runs, arms)), out)
    return card


def _arm_data(study: Study, runs: list[AtlasRun], arms: dict[str, list[dict]]) -> dict[str, dict[str, Any]]:
    """{arm: its config, overrides and reward in words, and each seed's raw data} (study_data.py)."""
    data = {}
    for setting in study.arms:
        cfg = load_config(preset_path(setting.config), next(r.overrides for r in runs if r.setting == setting))
        data[setting.value] = {
            "config": setting.config,
            "overrides": list(setting.overrides),
            "reward": SOURCES[setting.supervised] if setting.supervised else reward_of(cfg),
            "seeds": [run_data(run, study.curve_keys) for run in arms[setting.value]],
        }
    return data


def _write(card: dict[str, Any], out: Path) -> None:
    """reproduce.json (its wall time summed over a resumed study's calls), reproduce.png, passk.json."""
    previous = out / "reproduce.json"
    if previous.is_file():  # a resumed study: its time is the sum of its parts
        try:
            card["wall_s"] = round(card["wall_s"] + float(json.loads(previous.read_text()).get("wall_s") or 0), 1)
        except (ValueError, TypeError):
            pass  # an unreadable card is replaced
    previous.write_text(json.dumps(card, indent=1) + "\n")
    draw_card(card, out / "reproduce.png")
    curves = passk_curves(card)
    if curves["arms"]:
        (out / "passk.json").write_text(json.dumps(curves, indent=1) + "\n")
