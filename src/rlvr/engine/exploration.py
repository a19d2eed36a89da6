"""Online exploration: how many distinct correct solutions a run's own rollouts have found so far.

An RLVR run only learns from what its sampler finds; an algorithm that stops exploring keeps
re-finding the same few answers. These counts grow over the run and are logged every step, so
`rlvr compare` can set algorithms side by side on what they discovered, not only on what they end
up answering.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rlvr.types import RolloutBatch
from rlvr.verifiers import ScoredCompletion


@dataclass
class ExplorationTracker:
    """Distinct passing (query, completion text) pairs and distinct solved training queries."""

    solutions: set[tuple[str, str]] = field(default_factory=set)
    solved: set[str] = field(default_factory=set)

    def update(self, batch: RolloutBatch, scored: list[ScoredCompletion]) -> dict[str, int]:
        """Add this step's passing completions; return the running counts as metrics.

        Texts are compared after stripping surrounding whitespace; two completions that differ in
        reasoning but reach the same answer are different solutions. The sets are checkpointed
        (``state``), so a resumed run counts on; under several processes only rank 0's (the one
        that saves), and the other processes count again from 0.
        """
        for row, result in enumerate(scored):
            if result.correct:
                query_id = batch.query_of(row).id
                self.solutions.add((query_id, batch.texts[row].strip()))
                self.solved.add(query_id)
        return {"explore/distinct_correct": len(self.solutions), "explore/queries_solved": len(self.solved)}

    def state(self) -> dict[str, list]:
        return {"solutions": sorted(self.solutions), "solved": sorted(self.solved)}

    def load(self, state: dict[str, list] | None) -> None:
        self.solutions = {tuple(pair) for pair in (state or {}).get("solutions", [])}
        self.solved = set((state or {}).get("solved", []))
