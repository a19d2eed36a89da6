"""Weakened verifiers for fidelity experiments; each keeps its gold counterpart as ``.gold``.

Real reward signals are imperfect: unit tests that cover only the examples in the prompt, answer
matchers that accept the answer anywhere in the text, flaky graders. These wrappers make such a
verifier out of a gold one so that what it does to training can be measured against the gold
verdict (meters/hacking.py logs the share of completions the weak verifier passes and the
gold one fails):

- ``visible_only`` (python rows): only the visible ``tests`` run; ``hidden_tests`` are dropped.
  A lookup table of the shown examples passes (Skalse et al. 2022, "Defining and Characterizing
  Reward Hacking": an imperfect proxy that a policy can raise without raising the true reward).
- ``lenient`` (math rows): a completion also passes if the expected answer appears anywhere in its
  text, e.g. as an intermediate result in the reasoning, with a wrong final answer. A match must
  not be glued to a letter or digit on either side: "51" is in "56-5=51" but not in "510".
- ``noisy`` (any row type): the gold verdict, flipped with a false-positive rate (fail -> pass)
  and a false-negative rate (pass -> fail). The flip is a pure function of (seed, query id,
  completion), so a repeated check of the same completion gets the same verdict.
- ``random`` (any row type): not a verifier but a reward, Shao et al. 2025's "random reward"
  (arXiv 2506.10947): each rollout's correctness score is a coin, 1 with probability
  ``reward.random_rate``, drawn per rollout (``coins``), so two rollouts with the same text get
  independent rewards. The verifiers still judge with gold, for what the run logs as correct.

A gold ``error``/``unavailable`` result is passed through unchanged: an infrastructure failure is
never turned into a verdict.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.base import BaseVerifier, Verifier
from rlvr.verifiers.math import MathCriteria

if TYPE_CHECKING:
    from rlvr.config import RewardConfig

FIDELITIES = ("gold", "visible_only", "lenient", "noisy", "random")

ROW_TYPE: dict[str, str | None] = {
    "gold": None,
    "visible_only": "python",
    "lenient": "math",
    "noisy": None,
    "random": None,
}
"""The row type a fidelity applies to (None: every type). Rows of other types are judged by gold."""


def _passed(result: VerifierResult, detail: str) -> VerifierResult:
    return replace(result, verdict=Verdict.PASS, score=1.0, error_class=ErrorClass.NONE, detail=detail)


class WeakenedVerifier(BaseVerifier):
    """A verifier derived from ``gold``; subclasses weaken ``verify_batch``."""

    fidelity: str = ""

    def __init__(self, gold: Verifier) -> None:
        self.gold = gold
        self.name = f"{gold.name}[{self.fidelity}]"

    def verify(self, query: Query, completion: str) -> VerifierResult:
        return self.verify_batch([(query, completion)])[0]


class VisibleOnly(WeakenedVerifier):
    """Python rows judged on their visible ``tests`` alone."""

    fidelity = "visible_only"

    @staticmethod
    def visible_query(query: Query) -> Query:
        criteria = {k: v for k, v in query.verifier.items() if k != "hidden_tests"}
        return replace(query, verifier=criteria)

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        return self.gold.verify_batch([(self.visible_query(q), c) for q, c in items])


def answer_appears(answer: str, text: str) -> bool:
    """``answer`` occurs in ``text`` with no letter or digit glued to either end."""
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(answer)}(?![0-9A-Za-z])", text) is not None


class Lenient(WeakenedVerifier):
    """Math rows: the gold verdict, or a pass if the expected answer appears anywhere in the text."""

    fidelity = "lenient"

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        results = self.gold.verify_batch(items)
        out = []
        for (query, completion), result in zip(items, results, strict=True):
            if result.scorable and result.verdict is not Verdict.PASS:
                try:
                    expected = MathCriteria.from_dict(query.verifier).answer
                except ValueError:  # bad criteria: gold already said so (an error result)
                    expected = None
                if expected is not None and answer_appears(expected, completion):
                    result = _passed(result, f"lenient: {expected!r} appears in the text ({result.detail})")
            out.append(result)
        return out


def unit_draw(seed: int, query_id: str, completion: str) -> float:
    """A number in [0, 1) fixed by (seed, query id, completion): the same check, the same draw."""
    digest = hashlib.sha256(f"{seed}\x00{query_id}\x00{completion}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def coins(seed: int, key: str, count: int, rate: float) -> list[float]:
    """fidelity=random: `count` rewards, each 1.0 with probability `rate` and 0.0 otherwise, fixed
    by (seed, key, position): `key` names the batch (its step and sampling round), so a resumed run
    draws the same coins and no two rollouts share one."""
    return [float(unit_draw(seed, f"coin {key}", str(index)) < rate) for index in range(count)]


class Noisy(WeakenedVerifier):
    """The gold verdict with injected false positives and false negatives."""

    fidelity = "noisy"

    def __init__(
        self, gold: Verifier, *, false_positive_rate: float, false_negative_rate: float, seed: int = 0
    ) -> None:
        for label, rate in (("false_positive_rate", false_positive_rate), ("false_negative_rate", false_negative_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {rate}")
        super().__init__(gold)
        self.false_positive_rate, self.false_negative_rate, self.seed = false_positive_rate, false_negative_rate, seed

    def verify_batch(self, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        results = self.gold.verify_batch(items)
        return [self._flip(q, c, r) for (q, c), r in zip(items, results, strict=True)]

    def _flip(self, query: Query, completion: str, result: VerifierResult) -> VerifierResult:
        if not result.scorable:
            return result
        draw = unit_draw(self.seed, query.id, completion)
        if result.verdict is Verdict.PASS and draw < self.false_negative_rate:
            return replace(
                result,
                verdict=Verdict.FAIL,
                score=0.0,
                error_class=ErrorClass.WRONG_ANSWER,
                detail=f"noisy: gold pass flipped to fail ({result.detail})",
            )
        if result.verdict is not Verdict.PASS and draw < self.false_positive_rate:
            return _passed(result, f"noisy: gold {result.verdict.value} flipped to pass ({result.detail})")
        return result


def weakened_verifier_for(
    fidelity: str,
    *,
    false_positive_rate: float = 0.0,
    false_negative_rate: float = 0.0,
    noise_seed: int = 0,
    gold_for: Callable[[str], Verifier] | None = None,
) -> Callable[[str], Verifier]:
    """A ``verifier_for`` (type name -> verifier, as ``RewardFunction`` takes) at this fidelity.

    Types the fidelity does not apply to (and the ``format`` component) get the gold verifier.
    Wrappers are built once per type and cached, like the registry's instances.
    """
    if fidelity not in FIDELITIES:
        raise ValueError(f"unknown fidelity {fidelity!r}; known: {', '.join(FIDELITIES)}")
    if gold_for is None:
        from rlvr.verifiers.registry import get_verifier as gold_for
    builders: dict[str, Callable[[Verifier], Verifier]] = {
        "visible_only": VisibleOnly,
        "lenient": Lenient,
        "noisy": lambda gold: Noisy(
            gold, false_positive_rate=false_positive_rate, false_negative_rate=false_negative_rate, seed=noise_seed
        ),
    }
    cache: dict[str, Verifier] = {}

    def verifier_for(type_name: str) -> Verifier:
        applies = fidelity in builders and type_name != "format" and ROW_TYPE[fidelity] in (None, type_name)
        if not applies:
            return gold_for(type_name)
        if type_name not in cache:
            cache[type_name] = builders[fidelity](gold_for(type_name))
        return cache[type_name]

    return verifier_for


def gold_of(verifier_for: Callable[[str], Verifier]) -> Callable[[str], Verifier]:
    """The gold ``verifier_for`` behind a (possibly weakened) one."""
    return lambda type_name: getattr(verifier_for(type_name), "gold", verifier_for(type_name))


def training_verifier_for(
    reward_cfg: RewardConfig, gold_for: Callable[[str], Verifier] | None = None
) -> Callable[[str], Verifier]:
    """The ``verifier_for`` of the run's training reward, at ``reward.fidelity``, over ``gold_for``
    (the local registry by default; Ray tasks with ``reward.backend=ray``)."""
    return weakened_verifier_for(
        reward_cfg.fidelity,
        false_positive_rate=reward_cfg.false_positive_rate,
        false_negative_rate=reward_cfg.false_negative_rate,
        noise_seed=reward_cfg.noise_seed,
        gold_for=gold_for,
    )
