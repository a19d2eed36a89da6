"""The evaluations of a study's trained runs (studies/reproduce.py): the runner's PasskSpec for each
run against its base, the base alone at lower temperatures, and the base evaluated once per seed to
a support k and shared by every arm."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rlvr.config import load_config
from rlvr.rundir import write_config
from rlvr.studies.atlas import AtlasRun, preset_path
from rlvr.studies.runner import EVAL_REPORT, PasskSpec

PASSK = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""The k of a pass@k study (Yue et al. 2025 go to k = 256); n = 256 samples per held-out query."""


def passk_spec(
    out: Path,
    run: AtlasRun,
    queries: int,
    ks: tuple[int, ...] = PASSK,
    base_temperature: float | None = None,
    support_k: int | None = None,
    draw_on: bool = True,
) -> PasskSpec:
    """The pass@k evaluation of one trained run against the base it started from, on the run's own
    held-out task, at `ks` with n = the largest, into `<run>/eval/` (one torch thread, its log beside
    the run). Both models draw with the run's own seed: each seed's base is its own draw. With
    `base_temperature`, the base alone sampled at that temperature, into `<run>/eval-T<t>/`. With
    `support_k`, the base's evaluation is the one `base_spec` makes (to that k), and the trained
    model draws on to the same k unless `draw_on` is False (its curves stop at n)."""
    run_dir = out / "runs" / run.dir_name
    where = "eval" if base_temperature is None else f"eval-T{base_temperature:g}"
    spec = PasskSpec(run_dir=str(run_dir), out=str(run_dir / where), n=ks[-1], ks=ks, num_queries=queries,
                     seed=run.seed, threads=1)  # fmt: skip
    if support_k is not None:
        base = base_spec(out, run, queries, ks, support_k)
        return replace(spec, support_k=support_k if draw_on else None, base_report=str(Path(base.out) / EVAL_REPORT))
    if base_temperature is None:
        return spec
    log = run_dir.with_name(f"{run_dir.name}.{where}.log")
    return replace(spec, temperature=base_temperature, base_only=True, log=str(log))


def base_spec(out: Path, run: AtlasRun, queries: int, ks: tuple[int, ...], support_k: int) -> PasskSpec:
    """The base alone, evaluated once for the seed of `run` and shared by every arm (Study.support_k):
    `<out>/base/seed<N>/` holds the held-out configuration (the arm's, written by `write_base_config`)
    and its evaluation, eval/."""
    where = out / "base" / f"seed{run.seed}"
    return PasskSpec(run_dir=str(where), out=str(where / "eval"), n=ks[-1], ks=ks, num_queries=queries,
                     seed=run.seed, threads=1, base_only=True, support_k=support_k, log=str(where) + ".eval.log")  # fmt: skip


def write_base_config(spec: PasskSpec, run: AtlasRun) -> None:
    """The config.yaml the base's evaluation reads its base and held-out task from: the arm's."""
    cfg = load_config(preset_path(run.setting.config), run.overrides)
    Path(spec.run_dir).mkdir(parents=True, exist_ok=True)
    write_config(spec.run_dir, cfg.to_dict())
