"""The run's alarms: every step each named check reads the step's metrics, compares one value with
its threshold (config section ``health``), and says whether it tripped.

``Health.observe`` adds ``health/<check>`` to the step's metrics, appends one line per check to
the run's health file (rundir.HEALTH: ``{"step", "check", "value", "threshold", "tripped"}``) and returns the
checks that tripped this step and had not the step before: an alarm, whose line names the cause and
points to docs/troubleshooting.md. What an alarm does is ``train.on_alarm`` (the loop): ``warn``
prints it and goes on, ``stop`` checkpoints and ends the run (exit code 3), ``ignore`` only logs it.

The checks:

- ``no_signal``: steps in a row on which every group had zero reward spread
  (``frac_reward_zero_std`` = 1): every advantage was 0, the reward taught nothing;
- ``truncation``, ``unscorable``: the share of completions cut at ``rollout.max_new_tokens``, and
  the share the verifier could not judge, averaged over the last ``health.window`` steps;
- ``verifier_latency``: the correctness verifier's 99th-percentile seconds per completion
  (``time/verify_p99``) above its bound (a measured time: the determinism gate leaves it out);
- ``nonfinite``: how many of loss, gradient norm, update norm, KL, entropy and the policy's
  weights are NaN or infinite;
- ``policy_unchanged``: an optimizer step that moved nothing (update norm 0) although the gradient
  was not 0 and the learning rate was above 0;
- ``kl``, ``entropy``: KL to the reference, averaged over the last ``health.window`` steps (one
  step's spike is not a drift), above ``health.max_kl``; entropy outside ``health.entropy_range``
  times the first step's;
- ``logprob_mismatch``: ``rollout/logprob_mismatch`` above its bound;
- ``sampler_sync``: a sampler that holds its own copy of the weights scored a fixed probe batch
  after a sync, and its log-probs differ from the policy version it claims by more than the dtype's
  tolerance (a sync that did not happen: LoRA merges, bf16 copies, the async sampler);
- ``reward_hacking``: ``hacking/rate`` above ``reward.hacking_warn`` with a weakened verifier.

A resumed run replays the metrics it logged before (``Health.replay``), so a streak or a window
continues where it stopped and a resumed run's health equals an uninterrupted one's.
"""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

from rlvr import rundir
from rlvr.config import RunConfig
from rlvr.errors import RunFailure

DOCS = "docs/troubleshooting.md"


@dataclass(frozen=True)
class Reading:
    """One check's value at one step: tripped when it crossed its threshold."""

    check: str
    value: float
    threshold: float
    tripped: bool
    message: str = ""
    """What the alarm says when tripped: the cause and the fix."""

    def alarm(self, step: int) -> str:
        return f"alarm {self.check} at step {step}: {self.message} (see {DOCS}#{self.check})"


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


@dataclass
class NoSignal:
    steps: int
    name: str = "no_signal"
    rewards: list[float] = field(default_factory=list)

    def read(self, metrics: dict) -> Reading | None:
        if "frac_reward_zero_std" not in metrics:
            return None
        if metrics["frac_reward_zero_std"] < 1.0:
            self.rewards = []  # a group with spread: the streak ends
        else:
            self.rewards.append(metrics.get("reward", math.nan))
        streak = len(self.rewards)
        return Reading(self.name, streak, self.steps, streak >= self.steps, self._why() if streak else "")

    def _why(self) -> str:
        if all(r == 0.0 for r in self.rewards):
            return (
                f"every sample of every group got reward 0 for {len(self.rewards)} steps, so every advantage is 0. "
                "The model never writes an answer the verifier passes: start from a base that has seen this "
                "task's answer format (rlvr build-base, docs/models.md), warm it up on worked examples, or use a "
                "larger model; raising rollout.group_size or rollout.temperature helps only if some samples can pass"
            )
        if all(r == 1.0 for r in self.rewards):
            return (
                f"every sample of every group got reward 1 for {len(self.rewards)} steps, so every advantage is 0. "
                "The queries are too easy for this model (harder task settings, another task), or the reward pays "
                "what the base already does (a format-only reward: weight the correctness check, "
                "reward.correctness_weight)"
            )
        return (
            f"each group's samples all got the same reward for {len(self.rewards)} steps, so every advantage is 0. "
            "The reward does not tell a group's samples apart (a format-only reward the base already meets, or a "
            "checker that ignores the answer): weight the correctness check (reward.correctness_weight)"
        )


@dataclass
class WindowMean:
    """The mean of a per-step share over the last `window` steps, above `limit`."""

    name: str
    key: str
    limit: float
    window: int
    per: float = 1.0
    """Divide the metric by this (a count over the step's N completions)."""
    fix: str = ""
    values: deque = field(default_factory=deque)

    def read(self, metrics: dict) -> Reading | None:
        if not _finite(metrics.get(self.key)):
            return None
        self.values.append(metrics[self.key] / self.per)
        while len(self.values) > self.window:
            self.values.popleft()
        mean = sum(self.values) / len(self.values)
        message = (
            f"{self.key} averaged {mean:.2f} over the last {len(self.values)} steps, above {self.limit:g}: {self.fix}"
        )
        return Reading(self.name, mean, self.limit, mean > self.limit, message)


@dataclass
class Above:
    """One metric above a bound."""

    name: str
    key: str
    limit: float
    fix: str

    def read(self, metrics: dict) -> Reading | None:
        value = metrics.get(self.key)
        if not _finite(value):
            return None  # not logged this step (a NaN is nonfinite's)
        message = f"{self.key} {value:.3g} above {self.limit:g}: {self.fix}"
        return Reading(self.name, value, self.limit, value > self.limit, message)


NONFINITE_KEYS = ("loss", "grad_norm", "update_norm", "kl", "entropy")
"""(The reward mean is NaN when no completion of the step could be judged: the unscorable check's.)"""


@dataclass
class NonFinite:
    name: str = "nonfinite"

    def read(self, metrics: dict) -> Reading:
        bad = [key for key in NONFINITE_KEYS if key in metrics and not _finite(metrics[key])]
        bad += ["the policy's weights"] if metrics.get("weights/nonfinite") else []
        message = (
            f"{', '.join(bad)} not finite: the update diverged or a value overflowed; the run's last checkpoint is "
            "from before it: lower optim.lr, keep optim.max_grad_norm on, or train in float32"
        )
        return Reading(self.name, len(bad), 0, bool(bad), message)


@dataclass
class PolicyUnchanged:
    name: str = "policy_unchanged"

    def read(self, metrics: dict) -> Reading | None:
        norm, grad, lr = metrics.get("update_norm"), metrics.get("grad_norm"), metrics.get("learning_rate")
        if not (_finite(norm) and _finite(grad)):
            return None
        tripped = norm == 0 and grad > 0 and (lr is None or lr > 0)
        message = (
            f"the optimizer step moved no weight (update_norm 0) with grad_norm {grad:.3g} and learning rate {lr}: "
            "the optimizer does not hold the trained parameters (frozen, or built before LoRA), or its step was skipped"
        )
        return Reading(self.name, norm, 0, tripped, message)


@dataclass
class EntropyRange:
    low: float
    high: float
    name: str = "entropy"
    first: float | None = None

    def read(self, metrics: dict) -> Reading | None:
        value = metrics.get("entropy")
        if not _finite(value):
            return None
        if self.first is None:
            self.first = value
        ratio = value / self.first if self.first > 0 else 1.0
        which = "collapsed to" if ratio < self.low else "grew to"
        message = (
            f"entropy {value:.3g} {which} {ratio:.3g}x the first step's {self.first:.3g} (range {self.low:g}-{self.high:g}x): "
            + ("the policy stopped exploring; raise algo.beta or algo.entropy_coef, or lower optim.lr"
               if ratio < self.low else "the policy is blowing up; lower optim.lr, raise algo.beta")
        )  # fmt: skip
        return Reading(
            self.name, ratio, self.high if ratio >= 1 else self.low, not self.low <= ratio <= self.high, message
        )


@dataclass
class RewardHacking:
    """hacking/rate above reward.hacking_warn, naming the part the gold verifier could not judge."""

    limit: float
    name: str = "reward_hacking"

    def read(self, metrics: dict) -> Reading | None:
        rate = metrics.get("hacking/rate")
        if not _finite(rate):
            return None
        unscorable = metrics.get("hacking/gold_unscorable_rate") or 0.0
        part = f" (hacking/gold_unscorable_rate {unscorable:.2f}: passes gold could not judge)" if unscorable else ""
        message = (
            f"hacking/rate {rate:.2f} > {self.limit:g}: the training verifier passes completions the gold verifier "
            f"does not{part} (reward hacking); see docs/hacking.md"
        )
        return Reading(self.name, rate, self.limit, rate > self.limit, message)


SYNC_TOLERANCE = {"float32": 1e-3, "bfloat16": 0.02, "float16": 0.02}
"""sampler_sync's default bound by rollout.dtype: mean |Δ log-prob| per token of the probe batch.
Measured on the default run (tests/engine/test_health.py): a bfloat16 copy synced every step
differs by 0.0005-0.005; one whose sync was skipped by 0.008-0.012 after the first update at the
default lr 1e-4 and 0.044 at lr 5e-4, rising with every update: the alarm comes at step 3 on the
test's small batch at lr 1e-4 (the default run's copy is 0.015 off by step 5), at step 1 at lr 5e-4.
Under LoRA (B starts at 0) a synced copy differs by 0.001-0.002 and a skipped sync drifts slowly:
0.0099 after one update at lr 1e-3, so the alarm comes at step 4; at 5e-3, at step 1."""


def sync_tolerance(cfg: RunConfig) -> float:
    """SYNC_TOLERANCE of the coarser of the two precisions compared: the sampler's (rollout.dtype)
    and the policy's computation (bfloat16 under train.fsdp_mixed_precision=bfloat16, whose probe
    differs from a synced float32 copy by about 1e-3 on the smoke run)."""
    dtypes = [cfg.rollout.dtype] + (
        [cfg.train.fsdp_mixed_precision] if cfg.train.fsdp_mixed_precision != "none" else []
    )
    return max(SYNC_TOLERANCE.get(dtype, 0.1) for dtype in dtypes)


def checks_for(cfg: RunConfig, *, hacking: bool) -> list:
    """The run's checks with the thresholds of its config."""
    h = cfg.health
    n = cfg.train.batch_queries * cfg.rollout.group_size
    return [
        NoSignal(h.no_signal_steps),
        WindowMean("truncation", "completions/clipped_ratio", h.max_truncated, h.window,
                   fix="completions are cut before they end; raise rollout.max_new_tokens (`rlvr train --check` "
                       "compares it with the task's longest worked solution)"),
        WindowMean("unscorable", "verifier/unscorable", h.max_unscorable, h.window, per=n,
                   fix="the verifier could not judge these completions (error, unavailable, timeout): run "
                       "`rlvr verify` on one of them; a sandbox or solver missing on this machine is the usual cause"),
        Above("verifier_latency", "time/verify_p99", h.max_verify_p99_s,
              "the verifier's slowest completions take this long: a sandbox or solver near its time limit, or "
              "a machine with too few cores for the verifier pools; see `rlvr verify` on a slow one"),
        NonFinite(),
        PolicyUnchanged(),
        WindowMean("kl", "kl", h.max_kl, h.window,
                   fix="the policy moved far from the reference; lower optim.lr or raise algo.beta"),
        EntropyRange(*h.entropy_range),
        Above("logprob_mismatch", "rollout/logprob_mismatch", h.max_logprob_mismatch,
              "the sampler's log-probs disagree with the trainer's: a stale or unsynced sampler, or its precision; "
              "lower rollout.max_staleness, or turn on algo.tis_cap"),
        Above("sampler_sync", "sync/probe_error", h.max_sync_error or sync_tolerance(cfg),
              "the sampler's copy of the weights is not the policy version it claims: a weight sync that did not "
              "happen (LoRA adapters not merged, a skipped update); report it with the run's health file"),
        *([RewardHacking(cfg.reward.hacking_warn)] if hacking else []),
    ]  # fmt: skip


class HealthAlarm(RunFailure):
    """train.on_alarm=stop: a check tripped; the run was checkpointed at that step."""

    exit_code = 3  # not 1: `rlvr train --supervise` does not restart a run an alarm stopped

    def __init__(self, alarms: list[Reading], step: int, out_dir: Path):
        self.step, self.checks = step, [a.check for a in alarms]
        lines = "\n".join(a.alarm(step) for a in alarms)
        super().__init__(
            f"{lines}\nthe run stopped (train.on_alarm=stop) after step {step}, checkpointed in {out_dir}; "
            "fix the cause and continue with `rlvr train --resume`, or set train.on_alarm=warn"
        )


class Health:
    """The run's checks; `observe` logs every reading and returns the new alarms."""

    def __init__(self, checks: list, out_dir: Path | None, *, keep_until_step: int = 0):
        self.checks = checks
        self.path = rundir.health_path(out_dir) if out_dir is not None else None
        self.tripped: set[str] = set()
        self.alarms: list[dict] = []
        self.fresh: list[Reading] = []
        """The alarms of the last step observed."""
        if self.path is not None:
            _keep_until(self.path, keep_until_step)

    def replay(self, rows: list[dict]) -> None:
        """Feed the metrics a resumed run logged before, to restore each check's state and the
        alarms it raised (summary.json's "alarms" of a resumed run are an uninterrupted one's)."""
        for row in rows:
            if "reward" in row:
                _, fresh = self._read(row)
                self.alarms += [{"check": r.check, "step": row["step"], "message": r.message} for r in fresh]

    def _read(self, metrics: dict) -> tuple[list[Reading], list[Reading]]:
        readings = [reading for check in self.checks if (reading := check.read(metrics)) is not None]
        fresh = [r for r in readings if r.tripped and r.check not in self.tripped]
        self.tripped = {r.check for r in readings if r.tripped} | (
            self.tripped - {r.check for r in readings}
        )  # a check not read this step keeps its state
        return readings, fresh

    def observe(self, step: int, metrics: dict) -> list[Reading]:
        """Read every check on this step's metrics: health/<check> joins them, the health file gets a
        line per check; returns the checks that tripped now."""
        readings, fresh = self._read(metrics)
        for r in readings:
            metrics[f"health/{r.check}"] = r.value
        if self.path is not None:
            with open(self.path, "a") as out:
                for r in readings:
                    line = {"step": step, "check": r.check, "value": r.value, "threshold": r.threshold,
                            "tripped": r.tripped}  # fmt: skip
                    out.write(json.dumps(line) + "\n")
        for r in fresh:
            self.alarms.append({"check": r.check, "step": step, "message": r.message})
        self.fresh = fresh
        return fresh

    def annotate(self, check: str, note: str, **fields) -> list[Reading]:
        """Add `note` to the message of this step's alarm `check` (and `fields` to its summary
        entry); returns this step's alarms, that one amended."""
        for entry in reversed(self.alarms):
            if entry["check"] == check:
                entry.update(fields)
                break
        self.fresh = [replace(r, message=f"{r.message}; {note}") if r.check == check else r for r in self.fresh]
        return self.fresh


def _keep_until(path: Path, step: int) -> None:
    """A resumed run's health file keeps the lines of the steps it keeps; a new run starts it empty."""
    if not path.is_file():
        return
    lines = path.read_text().splitlines() if step else []
    kept = [line for line in lines if line.strip() and json.loads(line).get("step", 0) <= step]
    path.write_text("".join(line + "\n" for line in kept))
