"""Pure math for RLVR: tensors and plain numbers in, tensors or (loss, stats) out.

GRPO (DeepSeekMath, arXiv:2402.03300): group advantages (§4.1.2), per-token KL estimators
(eq. 4), the clipped surrogate (eq. 3) and the loss aggregation modes of its descendants; GSPO's
sequence-level ratio, RLOO's leave-one-out and REINFORCE++'s batch-normalised advantages; DAPO's
dynamic-sampling filter and overlong shaping; PPO's GAE and clipped value loss; DPO's loss on
online verifier-labelled preference pairs.
"""

from rlvr.algos.advantages import batch_normalized_advantages, group_advantages, rloo_advantages
from rlvr.algos.aggregation import AGGREGATIONS, constant, sequence_mean, token_mean
from rlvr.algos.common import entropy_bonus_loss
from rlvr.algos.dapo import groups_with_signal, overlong_filter_mask, overlong_penalty
from rlvr.algos.dpo import dpo_loss, preference_pairs, sequence_logprobs
from rlvr.algos.gae import clipped_value_loss, gae, token_rewards, whiten
from rlvr.algos.grpo import grpo_loss, grpo_per_token_loss
from rlvr.algos.gspo import gspo_loss, sequence_ratio
from rlvr.algos.kl import KL_ESTIMATORS, kl_in_reward_advantages, kl_k1, kl_k2, kl_k3
from rlvr.algos.registry import ALGORITHMS, Algorithm
from rlvr.algos.tis import tis_advantages, tis_weights

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "batch_normalized_advantages",
    "dpo_loss",
    "preference_pairs",
    "sequence_logprobs",
    "gspo_loss",
    "rloo_advantages",
    "sequence_ratio",
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
    "clipped_value_loss",
    "entropy_bonus_loss",
    "gae",
    "groups_with_signal",
    "kl_in_reward_advantages",
    "overlong_filter_mask",
    "overlong_penalty",
    "token_rewards",
    "whiten",
    "tis_advantages",
    "tis_weights",
]
