"""The policy-optimisation algorithms the trainer can run, by name (`algo.algorithm`), with every
fact about each of them: what its step needs and what it supports. Nothing else lists algorithm
names; config validation, the step, the sampler checks and the tools read these traits.

Most are a pair of small pure functions, an advantage estimator and a policy loss, run by the
policy-gradient step. PPO's advantages need a learned critic (GAE over values, algos/gae.py): its
`update` is "actor_critic". DPO learns from (preferred, rejected) pairs with a pairwise loss: its
`update` is "preference". Variants that only change a knob of these (Dr. GRPO: no std scaling and
a constant normaliser; DAPO's clip-higher and token-mean loss) are presets in configs/, not entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from torch import Tensor

from rlvr.algos.advantages import batch_normalized_advantages, group_advantages, rloo_advantages
from rlvr.algos.dpo import dpo_loss, preference_pairs
from rlvr.algos.grpo import grpo_loss
from rlvr.algos.gspo import gspo_loss

AdvantageFn = Callable[..., tuple[Tensor, dict[str, Tensor]]]
"""fn(rewards [B, G], *, eps, scale_by_std) -> (advantages [B, G], stats)."""
PairsFn = Callable[..., tuple[Tensor, Tensor, dict[str, int]]]
"""fn(outcomes [B, G], *, max_pairs_per_group) -> (chosen [M], rejected [M], counts)."""
UpdateKind = Literal["policy_gradient", "actor_critic", "preference"]


@dataclass(frozen=True)
class Algorithm:
    loss: Callable[..., tuple[Tensor, dict[str, float]]]
    """The loss: `grpo_loss`'s signature for the policy-gradient kinds, `dpo_loss`'s for preference."""
    paper: str
    update: UpdateKind = "policy_gradient"
    """Which update the step runs (engine/step.py): advantages and a per-token policy loss, the same
    with GAE advantages from a value model, or a pairwise preference loss."""
    advantages: AdvantageFn | None = None
    """The advantage estimator (policy_gradient only)."""
    pairs: PairsFn | None = None
    """The pair builder (preference only)."""
    sequence_ratio: bool = False
    """The loss clips one ratio per sequence (GSPO), so it takes one advantage per sequence: no KL in
    the reward and no per-token importance weights."""
    batch_normalized: bool = False
    """Advantages are normalised over the whole batch (REINFORCE++), so every process would have to
    see every reward: such an algorithm trains on one process only."""
    memory_group_size: int = 8
    """G that `rlvr memory` and the lab assume by default (offline DPO: one chosen, one rejected)."""

    @property
    def critic(self) -> bool:
        """A value model is built and trained beside the policy."""
        return self.update == "actor_critic"

    @property
    def tis(self) -> bool:
        """`algo.tis_cap` applies: per-token importance weights folded into per-token advantages."""
        return self.update == "policy_gradient" and not self.sequence_ratio

    @property
    def multi_process(self) -> bool:
        """Trains under accelerate/torchrun with several processes (engine/distributed.py)."""
        return self.update == "policy_gradient" and not self.batch_normalized

    @property
    def needs_reference(self) -> bool:
        """The frozen reference is held whatever β is (DPO's implicit reward is relative to it)."""
        return self.update == "preference"

    def holds_reference(self, beta: float) -> bool:
        """Whether training keeps the frozen reference: β > 0, or a loss relative to it. With
        neither, none is held (DESIGN.md): it would only cost memory, and `kl` is not measured."""
        return beta > 0 or self.needs_reference


class NotPolicyGradientError(ValueError):
    """A tool that works on advantages and a per-token policy loss was given a preference algorithm."""


def require_policy_gradient(name: str, tool: str) -> Algorithm:
    """ALGORITHMS[name] if it has advantages and a policy loss; else an error naming the tool."""
    algorithm = ALGORITHMS[name]
    if algorithm.update == "preference":
        usable = ", ".join(n for n, a in ALGORITHMS.items() if a.update != "preference")
        raise NotPolicyGradientError(
            f"{tool} works on advantages and a per-token policy loss; algo.algorithm={name} learns from "
            f"preference pairs instead. Use one of: {usable}"
        )
    return algorithm


def _group(rewards: Tensor, *, eps: float, scale_by_std: bool) -> tuple[Tensor, dict[str, Tensor]]:
    return group_advantages(rewards, eps=eps, scale_by_std=scale_by_std)


def _leave_one_out(rewards: Tensor, *, eps: float, scale_by_std: bool) -> tuple[Tensor, dict[str, Tensor]]:
    return rloo_advantages(rewards)  # RLOO has no std scaling


def _batch(rewards: Tensor, *, eps: float, scale_by_std: bool) -> tuple[Tensor, dict[str, Tensor]]:
    return batch_normalized_advantages(rewards, eps=eps)  # normalised over the batch by definition


ALGORITHMS: dict[str, Algorithm] = {
    "grpo": Algorithm(grpo_loss, "Shao et al. 2024, DeepSeekMath, arXiv:2402.03300", advantages=_group),
    "gspo": Algorithm(gspo_loss, "Zheng et al. 2025, GSPO, arXiv:2507.18071", advantages=_group, sequence_ratio=True),
    "rloo": Algorithm(grpo_loss, "Ahmadian et al. 2024, RLOO, arXiv:2402.14740", advantages=_leave_one_out),
    "reinforce_pp": Algorithm(
        grpo_loss, "Hu 2025, REINFORCE++, arXiv:2501.03262", advantages=_batch, batch_normalized=True
    ),
    # PPO's clipped surrogate is GRPO's per-token loss fed per-token GAE advantages.
    "ppo": Algorithm(
        grpo_loss, "Schulman et al. 2017, PPO, arXiv:1707.06347; GAE arXiv:1506.02438", update="actor_critic"
    ),
    "dpo": Algorithm(
        dpo_loss,
        "Rafailov et al. 2023, DPO, arXiv:2305.18290",
        update="preference",
        pairs=preference_pairs,
        memory_group_size=2,
    ),
}
