"""Common random numbers for held-out sampling: the same draws for the same query and sample,
whatever the model, the batch or the step of training.

Token t of sample j of a query is drawn by inverse CDF from one uniform u(seed, query id, j, t):
the first token whose cumulative probability exceeds u. That u is a fixed function of those four
values (SplitMix64, Steele et al. 2014, on a 64-bit key hashed from the seed, the query id and j),
so it does not depend on which other queries share the batch, on how many rows are still being
decoded, or on anything drawn before. Two consequences:

- a model that did not change gives the same completions, so its held-out gain is exactly 0;
- a model that changed a little mostly gives the same tokens (inverse-CDF draws from nearby
  distributions agree unless u falls between their CDFs), so a base-vs-trained difference carries
  less sampling noise than from independent draws.

Each draw is still an exact sample of softmax(logits / T) after the top-p cut; only the coupling
between models changes. Training's rollouts do not use this: they draw from torch's generator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import torch

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def row_key(seed: int, query_id: str, sample: int) -> int:
    """The 64-bit key of one sample of one query."""
    digest = hashlib.blake2b(f"{seed}\x00{query_id}\x00{sample}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def uniforms_at(keys: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """u in [0, 1) for each (key, position): the SplitMix64 output at that position of the key's stream."""
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) + (positions.astype(np.uint64) + np.uint64(1)) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


class Draws:
    """The uniforms of a batch of rows: a key per row and the completion position its next token takes."""

    def __init__(self, keys: Sequence[int], offsets: Sequence[int] | None = None):
        self.keys = np.asarray(keys, dtype=np.uint64)  # [n]
        self.offsets = np.zeros(len(self.keys), dtype=np.int64) if offsets is None else np.asarray(offsets, np.int64)

    @classmethod
    def for_queries(cls, seed: int, query_ids: Sequence[str], group_size: int, first_sample: int = 0) -> Draws:
        """Rows in query-major order, `group_size` samples per query, as the samplers lay them out;
        samples `first_sample`, `first_sample` + 1, ... of each query (a continued draw)."""
        samples = range(first_sample, first_sample + group_size)
        return cls([row_key(seed, qid, j) for qid in query_ids for j in samples])

    def __len__(self) -> int:
        return len(self.keys)

    def subset(self, rows: Sequence[int], offsets: Sequence[int]) -> Draws:
        """These rows, each `offsets[i]` tokens into its completion (a tool rollout's later turns)."""
        return Draws(self.keys[list(rows)], np.asarray(offsets, np.int64) + self.offsets[list(rows)])

    def uniforms(self, rows: torch.Tensor, step: int) -> torch.Tensor:
        """[m] float64 on `rows`' device: the uniforms of output rows `rows` at decode step `step`."""
        index = rows.cpu().numpy()
        u = uniforms_at(self.keys[index], self.offsets[index] + step)
        return torch.from_numpy(u).to(rows.device)


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """[m] tokens: for each row of probs [m, V], the first token whose cumulative probability exceeds
    u times the row's total (zero-probability tokens are never chosen)."""
    cdf = probs.double().cumsum(dim=-1)  # [m, V]
    target = (u.to(cdf.dtype) * cdf[:, -1])[:, None]  # [m, 1]
    token = torch.searchsorted(cdf, target, right=True)[:, 0]  # [m]
    last = probs.shape[-1] - 1 - (probs.flip(-1) > 0).long().argmax(dim=-1)  # [m] the last token with mass
    return torch.minimum(token, last)  # u * total rounded up to the total
