"""One scalar reward per completion from weighted verifier components.

``reward = sum_k w_k * score_k``. The component "correctness" is the row's own verifier (looked up
from ``query.verifier["type"]``); any other key names a registered verifier applied to every row
("format"). A completion whose component with nonzero weight could not be judged (verdict error or
unavailable) gets ``reward=None``, never 0: the trainer keeps it out of the group baseline, as
TRL does with a reward function that returns None (DESIGN.md, "Verifier results").
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers.base import Verifier
from rlvr.verifiers.registry import UnknownVerifierError, get_verifier, known_types

CORRECTNESS = "correctness"
DEFAULT_WEIGHTS: Mapping[str, float] = {CORRECTNESS: 1.0, "format": 0.0}
"""Binary correctness reward; format is computed (cheap) so its pass rate can be logged."""
ALWAYS_COMPUTED = (CORRECTNESS, "format")


@dataclass
class ScoredCompletion:
    reward: float | None
    """sum_k w_k * score_k, or None when a component with nonzero weight was unscorable."""
    correct: bool
    """The correctness component passed (what pass@k counts)."""
    results: dict[str, VerifierResult]
    """Every computed component's result, by component name."""


class RewardFunction:
    """Scores (query, completion) pairs with weighted verifier components."""

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        *,
        verifier_for: Callable[[str], Verifier] = get_verifier,
        timeout_s: float | None = None,
    ) -> None:
        """``verifier_for`` maps a type name to a verifier (the shared registry by default).
        ``timeout_s``: the watchdog's bound on one verifier call (``watched``); None: no watchdog."""
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        for name, weight in self.weights.items():
            if name != CORRECTNESS and name not in known_types():
                raise UnknownVerifierError(name)
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                raise ValueError(f"reward weight {name!r} must be a number, got {weight!r}")
            if not math.isfinite(weight):
                raise ValueError(f"reward weight {name!r} must be finite, got {weight!r}")
        self.components = list(dict.fromkeys([*ALWAYS_COMPUTED, *self.weights]))
        self._verifier_for = verifier_for
        self.timeout_s = timeout_s
        self.hung: set[str] = set()
        """Verifier types the watchdog abandoned: not called again, their verdicts error at once."""

    def score(self, query: Query, completion: str) -> ScoredCompletion:
        return self.score_batch([(query, completion)])[0]

    def score_batch(
        self, items: list[tuple[Query, str]], correctness: list[float] | None = None
    ) -> list[ScoredCompletion]:
        """Each component runs as one batch per verifier, so pooled verifiers overlap their work.
        `correctness` (one score per item) replaces the correctness verifier's score in the reward,
        as reward.fidelity=random's coins do; the verifier still judges, for `correct`."""
        results: list[dict[str, VerifierResult]] = [{} for _ in items]
        for name in self.components:
            if name == CORRECTNESS:
                self._score_correctness(items, results)
            else:
                batch = self.watched(name, items)
                for per_item, result in zip(results, batch, strict=True):
                    per_item[name] = result
        if correctness is None:
            return [self._combine(per_item) for per_item in results]
        return [self._combine(per_item, score) for per_item, score in zip(results, correctness, strict=True)]

    def _score_correctness(self, items: list[tuple[Query, str]], results: list[dict[str, VerifierResult]]) -> None:
        indices_by_type: dict[str, list[int]] = {}
        for index, (query, _) in enumerate(items):
            indices_by_type.setdefault(_row_type(query), []).append(index)
        for type_name, indices in indices_by_type.items():
            batch = self.watched(type_name, [items[i] for i in indices])
            for index, result in zip(indices, batch, strict=True):
                results[index][CORRECTNESS] = result

    def watched(self, name: str, items: list[tuple[Query, str]]) -> list[VerifierResult]:
        """`verify_batch` of the verifier `name`, under the watchdog: a call that gives no verdicts
        within timeout_s is abandoned (its thread left behind, the verifier not called again) and
        every completion of the batch gets verdict error, class timeout. Completions' own code runs
        in worker or sandbox pools that end it at its own bound as that completion's fail, so a call
        that hangs here is the verifier's fault, never the completion's."""
        verifier = self._verifier_for(name)
        if self.timeout_s is None:
            return verifier.verify_batch(items)
        if name in self.hung:
            return [_hung(name, f"hung on an earlier batch (no verdict within {self.timeout_s:g} s)") for _ in items]
        box: dict[str, object] = {}

        def call() -> None:
            try:
                box["results"] = verifier.verify_batch(items)
            except BaseException as err:  # raised again in the caller's thread
                box["error"] = err

        thread = threading.Thread(target=call, name=f"rlvr-verify-{name}", daemon=True)
        thread.start()
        thread.join(self.timeout_s)
        if thread.is_alive():
            self.hung.add(name)
            return [
                _hung(name, f"gave no verdict within {self.timeout_s:g} s (reward.verifier_timeout_s)") for _ in items
            ]
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["results"]  # type: ignore[return-value]

    def _combine(self, results: dict[str, VerifierResult], correctness: float | None = None) -> ScoredCompletion:
        weighted = [(name, weight, results[name]) for name, weight in self.weights.items() if weight != 0]
        if correctness is not None:  # a score given for the component: nothing left unjudged in it
            weighted = [(n, w, r) for n, w, r in weighted if n != CORRECTNESS]
        if all(result.scorable for _, _, result in weighted):
            scores = [weight * result.score for _, weight, result in weighted]
            if correctness is not None:
                scores.append(self.weights.get(CORRECTNESS, 0.0) * correctness)
            reward: float | None = float(sum(scores))
        else:
            reward = None
        correct = results[CORRECTNESS].verdict is Verdict.PASS
        return ScoredCompletion(reward=reward, correct=correct, results=results)


def _hung(name: str, what: str) -> VerifierResult:
    return VerifierResult(Verdict.ERROR, 0.0, ErrorClass.TIMEOUT, f"watchdog: the {name!r} verifier {what}")


def _row_type(query: Query) -> str:
    type_name = query.verifier.get("type")
    if not isinstance(type_name, str):
        raise ValueError(f'query {query.id!r}: its "verifier" object has no "type" string')
    return type_name
