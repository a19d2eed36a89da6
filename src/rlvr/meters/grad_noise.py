"""Gradient noise: the variance of the gradient estimate and the simple noise scale B_simple.

McCandlish, Kaplan, Amodei et al. 2018, "An Empirical Model of Large-Batch Training"
(arXiv:1812.06162). With per-sample gradients of mean G and covariance Σ, a batch of B samples
gives a gradient G_B with E|G_B|² = |G|² + tr(Σ)/B. Measuring |G_B|² at two batch sizes,
B_small < B_big, gives unbiased estimates (Appendix A, eq. A.2):

    |G|²   ≈ (B_big |G_big|² − B_small |G_small|²) / (B_big − B_small)
    tr(Σ)  ≈ (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)

and the simple noise scale B_simple = tr(Σ) / |G|² (eq. 2.8): the batch size above which a
bigger batch buys little. The ratio of two unbiased estimates is biased; the paper averages
numerator and denominator over steps before dividing, which the group-size sweep does and a
reader of the per-step metrics should do too (both parts are logged).

In training, the two batch sizes are the micro-batch (B_small = its rows) and the whole step
(B_big = N): engine/update.py already backpropagates micro-batch by micro-batch, so reading the
gradient after each backward costs one subtraction and one dot product per micro-batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from rlvr.models.sharded import is_sharded, local, sum_over_shards

MAX_COORDS = 1 << 22
"""Gradients with more entries than this are read on a fixed random subset of this many
coordinates, rescaled by (all / subset): an unbiased estimate of every squared norm, so the
estimates stay unbiased and the cost stays flat. The 0.87M-parameter tiny model is read whole."""


@dataclass
class NoiseEstimate:
    sq_norm: float
    """Unbiased |G|², the squared norm of the true (expected) gradient."""
    trace: float
    """Unbiased tr(Σ), Σ the covariance of one sample's gradient."""
    b_big: float

    @property
    def variance(self) -> float:
        """tr(Σ) / B_big = E|G_big − G|²: the expected squared error of the step's gradient."""
        return self.trace / self.b_big

    @property
    def noise_scale(self) -> float:
        """B_simple = tr(Σ) / |G|²; NaN when the |G|² estimate is not positive (signal lost in noise)."""
        return self.trace / self.sq_norm if self.sq_norm > 0 else math.nan


def estimate_noise(small_sq_norm: float, big_sq_norm: float, b_small: float, b_big: float) -> NoiseEstimate:
    """McCandlish et al. 2018, App. A eq. A.2, from E|G_small|² (a mean over small batches is best)
    and |G_big|², measured at batch sizes b_small < b_big."""
    if not 0 < b_small < b_big:
        raise ValueError(f"need 0 < b_small < b_big, got {b_small}, {b_big}")
    sq_norm = (b_big * big_sq_norm - b_small * small_sq_norm) / (b_big - b_small)
    trace = (small_sq_norm - big_sq_norm) / (1.0 / b_small - 1.0 / b_big)
    return NoiseEstimate(sq_norm=sq_norm, trace=trace, b_big=b_big)


def estimate_from_batches(small_gradients: torch.Tensor, b_small: float) -> NoiseEstimate:
    """The estimate from M small-batch gradients [M, D] of b_small samples each; the big batch is
    their union, G_big = their mean, b_big = M · b_small."""
    m = small_gradients.shape[0]
    small_sq = float(small_gradients.double().pow(2).sum(dim=1).mean())  # mean_j |G_j|²
    big_sq = float(small_gradients.double().mean(dim=0).pow(2).sum())  # |G_big|²
    return estimate_noise(small_sq, big_sq, b_small, m * b_small)


class GradientReader:
    """Reads a model's accumulated .grad as one flat vector, whole or on a fixed subset. Of a
    sharded model (train.sharding=fsdp2) it reads this process's shard, and squared norms are
    summed over the processes (a collective: every process reads at the same point)."""

    def __init__(self, model: torch.nn.Module, *, max_coords: int = MAX_COORDS, seed: int = 0):
        self.model = model
        self.params = [local(p) for p in model.parameters() if p.requires_grad]
        self.grads = [p for p in model.parameters() if p.requires_grad]
        total = sum(p.numel() for p in self.params)
        self.index: list[torch.Tensor] | None = None
        self.scale = 1.0
        if total > max_coords:
            generator = torch.Generator().manual_seed(seed)
            self.index = [
                torch.randint(p.numel(), (max(1, round(max_coords * p.numel() / total)),), generator=generator).to(
                    p.device
                )
                for p in self.params
            ]  # sampled with replacement: each squared norm stays unbiased
            self.scale = total / sum(len(i) for i in self.index)

    def read(self) -> torch.Tensor:
        parts = []
        for k, (p, owner) in enumerate(zip(self.params, self.grads)):
            flat = (
                torch.zeros(p.numel(), device=p.device) if owner.grad is None else local(owner.grad).detach().flatten()
            )
            parts.append(flat if self.index is None else flat[self.index[k]])
        return torch.cat(parts)  # [D] in the gradient's dtype

    def sq_norm(self, vector: torch.Tensor) -> float:
        """|v|², accumulated in float64, rescaled to the whole gradient when reading a subset."""
        return sum_over_shards(
            float(torch.linalg.vector_norm(vector, dtype=torch.float64)) ** 2 * self.scale, self.model
        )


class MicroBatchNoise:
    """Hook for `accumulate_policy_gradient(on_micro_batch=...)`: per-micro-batch gradients in, the
    step's `grad/...` metrics out.

    Micro-batch j's loss is aggregated with whole-step counts, so its gradient g_j is its share of
    the step's gradient: Σ_j g_j = G_big. With M micro-batches of equal size n, G_j = M·g_j is the
    micro-batch's own estimate of G (mean_j G_j = G_big), at B_small = n completions, B_big = M·n.
    """

    def __init__(self, model: torch.nn.Module, *, max_coords: int = MAX_COORDS):
        self.reader = GradientReader(model, max_coords=max_coords)
        # sharded, each backward's reduce-scatter adds every process's micro-batch j into g_j
        self.joined = torch.distributed.get_world_size() if is_sharded(model) else 1
        self.previous = self.reader.read()  # [D] the gradient already there (normally zeros)
        self.start = self.previous.clone()  # [D]
        self.small_sq: list[float] = []
        self.sizes: list[int] = []

    def __call__(self, mb, logp: torch.Tensor) -> None:
        current = self.reader.read()  # [D]
        self.small_sq.append(self.reader.sq_norm(current - self.previous))  # |g_j|²
        self.sizes.append(len(mb.rows) * self.joined)
        self.previous = current

    def estimate(self) -> NoiseEstimate | None:
        """None with fewer than 2 micro-batches or unequal ones: no second batch size to compare."""
        m = len(self.sizes)
        if m < 2 or len(set(self.sizes)) != 1:
            return None
        small_sq = m * m * sum(self.small_sq) / m  # mean_j |M g_j|²
        big_sq = self.reader.sq_norm(self.previous - self.start)  # |G_big|²
        return estimate_noise(small_sq, big_sq, self.sizes[0], m * self.sizes[0])

    def metrics(self) -> dict[str, float]:
        found = self.estimate()
        if found is None:
            nan = math.nan  # logged as null: undefined with one micro-batch
            return {"grad/variance": nan, "grad/noise_scale": nan, "grad/sq_norm_unbiased": nan, "grad/trace_cov": nan}
        return {
            "grad/variance": found.variance,
            "grad/noise_scale": found.noise_scale,
            "grad/sq_norm_unbiased": found.sq_norm,
            "grad/trace_cov": found.trace,
        }
