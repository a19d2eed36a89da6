"""Pure math for RLVR: tensors and plain numbers in, tensors or (loss, stats) out.

GRPO (DeepSeekMath, arXiv:2402.03300): group advantages (§4.1.2), per-token KL estimators
(eq. 4), the clipped surrogate (eq. 3) and the loss aggregation modes of its descendants.
"""

from rlvr.algos.advantages import group_advantages
from rlvr.algos.aggregation import AGGREGATIONS, constant, sequence_mean, token_mean
from rlvr.algos.grpo import grpo_loss, grpo_per_token_loss
from rlvr.algos.kl import KL_ESTIMATORS, kl_k1, kl_k2, kl_k3

__all__ = [
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "constant",
    "group_advantages",
    "grpo_loss",
    "grpo_per_token_loss",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "sequence_mean",
    "token_mean",
]
