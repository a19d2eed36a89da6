"""The policy-optimisation algorithms the trainer can run, by name: `algo.algorithm`.

Each is a pair of small pure functions, an advantage estimator and a policy loss; the loop is the
same for all of them. PPO is the exception: its advantages need a learned critic (GAE over values,
algos/gae.py), so its entry has no advantage function and `critic=True`, and the loop hands its
step to train/ppo.py. Variants that only change a knob of these (Dr. GRPO: no std scaling and a
constant normaliser; DAPO's clip-higher and token-mean loss) are presets in configs/, not entries.
DPO is the other exception: a `PreferenceAlgorithm` (a pair builder and a pairwise loss) that the trainer
runs with its own step, train/dpo.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from torch import Tensor

from rlvr.algos.advantages import batch_normalized_advantages, group_advantages, rloo_advantages
from rlvr.algos.dpo import dpo_loss, preference_pairs
from rlvr.algos.gspo import gspo_loss
from rlvr.algos.grpo import grpo_loss

AdvantageFn = Callable[..., tuple[Tensor, dict[str, Tensor]]]
"""fn(rewards [B, G], *, eps, scale_by_std) -> (advantages [B, G], stats)."""


@dataclass(frozen=True)
class Algorithm:
    advantages: AdvantageFn | None
    """None when advantages come from a critic (PPO: GAE in algos/gae.py)."""
    loss: Callable[..., tuple[Tensor, dict[str, float]]]
    """Same signature as `grpo_loss`."""
    paper: str
    critic: bool = False
    """True for actor-critic algorithms: the trainer builds a value model and runs train/ppo.py's step."""


@dataclass(frozen=True)
class PreferenceAlgorithm:
    """An algorithm that learns from (preferred, rejected) pairs instead of advantages; the trainer
    runs it with its own step (train/dpo.py)."""

    pairs: Callable[..., tuple[Tensor, Tensor, dict[str, int]]]
    """fn(outcomes [B, G], *, max_pairs_per_group) -> (chosen [M], rejected [M], counts)."""
    loss: Callable[..., tuple[Tensor, dict[str, float]]]
    """Same signature as `dpo_loss`."""
    paper: str
    critic: bool = False
    """Never: DPO's implicit reward needs no value model."""


class NotPolicyGradientError(ValueError):
    """A tool that works on advantages and a per-token policy loss was given a preference algorithm."""


def require_policy_gradient(name: str, tool: str) -> Algorithm:
    """ALGORITHMS[name] if it has advantages and a policy loss; else an error naming the tool."""
    algorithm = ALGORITHMS[name]
    if not isinstance(algorithm, Algorithm):
        usable = ", ".join(n for n, a in ALGORITHMS.items() if isinstance(a, Algorithm))
        raise NotPolicyGradientError(
            f"{tool} works on advantages and a per-token policy loss; algo.algorithm={name} learns from "
            f"preference pairs instead. Use one of: {usable}")
    return algorithm


def _group(rewards: Tensor, *, eps: float, scale_by_std: bool) -> tuple[Tensor, dict[str, Tensor]]:
    return group_advantages(rewards, eps=eps, scale_by_std=scale_by_std)


def _leave_one_out(rewards: Tensor, *, eps: float, scale_by_std: bool) -> tuple[Tensor, dict[str, Tensor]]:
    return rloo_advantages(rewards)  # RLOO has no std scaling


def _batch(rewards: Tensor, *, eps: float, scale_by_std: bool) -> tuple[Tensor, dict[str, Tensor]]:
    return batch_normalized_advantages(rewards, eps=eps)  # normalised over the batch by definition


ALGORITHMS: dict[str, Algorithm | PreferenceAlgorithm] = {
    "grpo": Algorithm(_group, grpo_loss, "Shao et al. 2024, DeepSeekMath, arXiv:2402.03300"),
    "gspo": Algorithm(_group, gspo_loss, "Zheng et al. 2025, GSPO, arXiv:2507.18071"),
    "rloo": Algorithm(_leave_one_out, grpo_loss, "Ahmadian et al. 2024, RLOO, arXiv:2402.14740"),
    "reinforce_pp": Algorithm(_batch, grpo_loss, "Hu 2025, REINFORCE++, arXiv:2501.03262"),
    # PPO's clipped surrogate is GRPO's per-token loss fed per-token GAE advantages.
    "ppo": Algorithm(None, grpo_loss, "Schulman et al. 2017, PPO, arXiv:1707.06347; GAE arXiv:1506.02438", critic=True),
    "dpo": PreferenceAlgorithm(preference_pairs, dpo_loss, "Rafailov et al. 2023, DPO, arXiv:2305.18290"),
}
