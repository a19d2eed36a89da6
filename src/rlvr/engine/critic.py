"""PPO's critic: a value head on a *copy* of the policy's backbone, with its own AdamW.

The same architecture and the same initial weights as the policy's backbone, trained separately
with its own learning rate. A separate copy (rather than a second head on the shared trunk) keeps
the policy's gradient free of the value loss, so no value-loss coefficient has to be balanced
against the policy loss, at the price of a second backbone in memory (what TRL's PPOTrainer and
OpenRLHF do too). The head is initialised to zero, so the first step's values are 0 and its
advantages are the plain (KL-penalised) returns.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from transformers import PreTrainedModel

from rlvr.algos import clipped_value_loss
from rlvr.config import PPOConfig
from rlvr.engine.update import MicroBatch, PartLoss, backward_in_parts, micro_batches, optimizer_step
from rlvr.types import RolloutBatch


class ValueModel(nn.Module):
    """V(s_t) for every completion token: a copy of the policy backbone plus a linear scalar head."""

    def __init__(self, policy: PreTrainedModel):
        super().__init__()
        self.backbone = copy.deepcopy(policy.base_model)  # e.g. LlamaModel, without the LM head
        dtype = next(self.backbone.parameters()).dtype
        self.head = nn.Linear(policy.config.hidden_size, 1, dtype=dtype)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, mb: MicroBatch) -> torch.Tensor:
        """values [n, t]: V of the state before each completion token (0 on padding), read at the
        same positions as the logits that predict that token (models/logprobs.py)."""
        input_ids = torch.cat([mb.prompt_ids, mb.completion_ids], dim=1)  # [n, p+t]
        attention = torch.cat([mb.prompt_mask, mb.completion_mask], dim=1)  # [n, p+t]
        positions = (attention.cumsum(dim=1) - 1).clamp(min=0)  # [n, p+t]
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention, position_ids=positions).last_hidden_state
        hidden = hidden[:, mb.prompt_ids.shape[1] - 1 : -1]  # [n, t, H] state before o_t
        return self.head(hidden).squeeze(-1).float() * mb.completion_mask  # [n, t]


class Critic:
    """The value model, its AdamW and the micro-batched value update."""

    def __init__(self, policy: PreTrainedModel, cfg: PPOConfig):
        self.cfg = cfg
        self.model = ValueModel(policy).to(next(policy.parameters()).device)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=cfg.critic_lr, weight_decay=cfg.critic_weight_decay
        )

    def state_dict(self) -> dict:
        """The value model and its optimizer, for the run's checkpoint (a resumed PPO run keeps its critic)."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    @torch.no_grad()
    def values(self, batch: RolloutBatch, micro_batch_size: int) -> torch.Tensor:
        """V(s_t) at sampling time, [N, T] (0 on padding)."""
        values = torch.zeros_like(batch.old_logp, dtype=torch.float32)  # [N, T]
        for mb in micro_batches(batch, micro_batch_size):
            values[mb.rows, : mb.width] = self.model(mb)
        return values

    def update(
        self,
        batch: RolloutBatch,
        old_values: torch.Tensor,
        returns: torch.Tensor,
        mask: torch.Tensor,
        *,
        micro_batch_size: int,
        max_grad_norm: float,
    ) -> dict[str, float]:
        """One AdamW step on the clipped value loss over the whole batch (micro-batched, exact)."""
        num_tokens = int(mask.sum())

        def loss_of(mb: MicroBatch) -> PartLoss:
            mb_mask = mask[mb.rows, : mb.width]  # [n, t]
            loss, stats = clipped_value_loss(
                self.model(mb),
                old_values[mb.rows, : mb.width],
                returns[mb.rows, : mb.width],
                mb_mask,
                clip_range=self.cfg.value_clip,
                num_tokens=num_tokens,
            )
            share = float(mb_mask.sum()) / max(num_tokens, 1)
            return PartLoss(loss, {key: share * value for key, value in stats.items()})

        update = backward_in_parts(micro_batches(batch, micro_batch_size), loss_of)
        totals = {"critic/value_loss": update.loss, **update.stats}
        grad_norm, _ = optimizer_step(self.model, self.optimizer, max_grad_norm)
        return totals | {"critic/grad_norm": grad_norm}


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """1 − Var(R − V) / Var(R) over real tokens: 1 is a perfect critic, ≤ 0 no better than a constant."""
    real = mask.bool()  # [N, T]
    target = returns[real]  # [n]
    if target.numel() < 2 or float(target.var()) == 0.0:
        return float("nan")
    return float(1.0 - (target - values[real]).var() / target.var())
