"""Replay a captured batch under other algorithm settings: same completions, same old and
reference log-probs, same policy weights; what changes is only what `algo.*` changes.

Both the captured setting and the new one are recomputed here with the trainer's own
`policy_gradient_inputs` and `accumulate_policy_gradient`, so the gradients are compared like with
like (and the captured loss is reproduced as a check). Advantages are recomputed from the captured rewards with the new
algorithm's estimator (RLOO and REINFORCE++ differ from GRPO there). With LoRA the policy is
rebuilt as the trainer holds it, the base model with the captured adapters, and the gradients are
the adapters' alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel

from rlvr.algos import ALGORITHMS
from rlvr.algos.registry import NotPolicyGradientError, require_policy_gradient
from rlvr.bases import resolve_model_path
from rlvr.config import RunConfig, config_from_dict, load_config, parse_override
from rlvr.diagnostics.capture import LogpRecorder, config_record, rewards_tensor, rollout_batch, to_json
from rlvr.diagnostics.inspector import InspectError
from rlvr.diagnostics.terms import LossInputs, loss_terms
from rlvr.engine.context import Rollouts, Timer
from rlvr.engine.step import policy_gradient_inputs
from rlvr.engine.update import accumulate_run_gradient, reference_logprobs
from rlvr.models import load_policy
from rlvr.models.lora import add_lora, load_adapter

REPLAYABLE = ("algo",)
"""Config sections a replay may change: the rest (model, rollout, task ...) made the batch."""


def replay_config(capture: dict[str, Any], overrides: list[str]) -> tuple[RunConfig, RunConfig]:
    """(the captured config, the captured config with `overrides`)."""
    for text in overrides:
        section, name, _ = parse_override(text)
        if section not in REPLAYABLE:
            raise InspectError(
                f"--set {text}: a replay recomputes the captured batch, so only algo.* can change "
                f"(capture a new batch with rlvr inspect --set {section}.{name}=...)"
            )
    captured = config_from_dict(capture["run_config"])
    changed = load_config(None, overrides, base=captured)
    try:
        require_policy_gradient(changed.algo.algorithm, "rlvr inspect --replay")
    except NotPolicyGradientError as error:
        raise InspectError(str(error)) from None
    return captured, changed


def replay(capture: dict[str, Any], capture_dir: Path, overrides: list[str]) -> dict[str, Any]:
    """Loss, per-token weights and gradient of the captured batch under both settings, and their difference."""
    captured_cfg, new_cfg = replay_config(capture, overrides)
    policy = captured_policy(capture_dir / capture["weights"], captured_cfg)
    batch = rollout_batch(capture)
    ref_logp = None if capture["ref_logp"] is None else torch.tensor(capture["ref_logp"])  # [N, T]
    if ref_logp is None and new_cfg.algo.beta > 0:  # the capture ran with β = 0 and held no reference
        reference, _ = load_policy(resolve_model_path(capture["reference_model"]))
        ref_logp = reference_logprobs(reference, batch, temperature=captured_cfg.rollout.temperature)  # [N, T]
    rewards = rewards_tensor(capture)  # [B, G]
    before = _evaluate(policy, batch, rewards, ref_logp if captured_cfg.algo.beta > 0 else None, captured_cfg)
    after = _evaluate(policy, batch, rewards, ref_logp, new_cfg)
    return _compare(capture, new_cfg, overrides, before, after)


def captured_policy(weights: Path, cfg: RunConfig) -> PreTrainedModel:
    """The policy the captured pass started from: the saved model, or with LoRA (model.lora_rank > 0)
    the base model.name with the saved adapters, whose weights alone train, as in the trainer."""
    if not (weights / ("adapter_config.json" if cfg.model.lora_rank else "config.json")).is_file():
        raise InspectError(
            f"{weights}: the capture's policy weights are missing; keep the policy/ folder beside capture.json"
        )
    if not cfg.model.lora_rank:
        return load_policy(weights)[0]
    base, _ = load_policy(resolve_model_path(cfg.model.name), dtype=cfg.model.dtype)
    policy = add_lora(base, cfg.model)
    load_adapter(policy, weights)
    return policy


def _evaluate(policy, batch, rewards, ref_logp, cfg: RunConfig) -> dict[str, Any]:
    """The update `cfg` makes of the batch, built as the step builds it (engine/step.py
    `policy_gradient_inputs`: advantages, KL in the reward, TIS, DAPO's overlong filter)."""
    advantages, _ = ALGORITHMS[cfg.algo.algorithm].advantages(
        rewards, eps=cfg.algo.advantage_eps, scale_by_std=cfg.algo.scale_rewards
    )  # [B, G] shown beside the change; the loss takes the step's own inputs below
    fed = policy_gradient_inputs(cfg, policy, Rollouts(batch, [], rewards), ref_logp, Timer())
    mask = fed.batch.policy_mask if fed.mask is None else fed.mask  # [N, T]
    policy.zero_grad(set_to_none=True)
    recorder = LogpRecorder(fed.batch)
    update = accumulate_run_gradient(
        cfg, policy, fed.batch, fed.advantages, ref_logp, on_micro_batch=recorder, loss_mask=fed.mask
    )
    params = [p for p in policy.parameters() if p.requires_grad]
    gradient = torch.cat(
        [torch.zeros(p.numel()) if p.grad is None else p.grad.detach().flatten().cpu() for p in params]
    ).double()  # [D] the full gradient, before clipping
    policy.zero_grad(set_to_none=True)
    inputs = LossInputs(recorder.logp, fed.batch.old_logp, ref_logp, fed.advantages, mask, cfg.rollout.max_new_tokens)
    return {"loss": update.loss, "advantages": advantages, "terms": loss_terms(cfg.algo, inputs), "gradient": gradient}


def _compare(capture, new_cfg, overrides, before, after) -> dict[str, Any]:
    g0, g1 = before["gradient"], after["gradient"]  # [D] each
    denominator = float(g0.norm() * g1.norm())
    w0, w1 = before["terms"]["token_weight"], after["terms"]["token_weight"]  # [N, T] each
    return {
        "overrides": list(overrides),
        "config": config_record(new_cfg),
        "captured_loss": capture["loss"],
        "loss_before": before["loss"],
        "loss_after": after["loss"],
        "loss_difference": after["loss"] - before["loss"],
        "grad_norm_before": float(g0.norm()),
        "grad_norm_after": float(g1.norm()),
        "grad_difference_norm": float((g1 - g0).norm()),
        "grad_cosine": float(g0 @ g1) / denominator if denominator > 0 else None,
        "token_weight_difference_max": float((w1 - w0).abs().max()),
        "advantages": to_json(after["advantages"]),
        **{
            k: to_json(after["terms"][k])
            for k in ("ratio", "clipped", "kl", "per_token_loss", "token_weight", "row_loss")
        },
        "token_weight_difference": to_json(w1 - w0),
    }


def replay_lines(result: dict[str, Any]) -> list[str]:
    cos = result["grad_cosine"]
    return [
        f"replay with {' '.join(result['overrides']) or '(no change)'}",
        f"  loss           {result['loss_before']:+.6f} -> {result['loss_after']:+.6f} "
        f"(difference {result['loss_difference']:+.6f}; captured {result['captured_loss']:+.6f})",
        f"  gradient norm  {result['grad_norm_before']:.6f} -> {result['grad_norm_after']:.6f}; "
        f"|g_new - g_captured| = {result['grad_difference_norm']:.6f}; "
        f"cosine {'undefined (a zero gradient)' if cos is None else f'{cos:.6f}'}",
        f"  per-token weight dloss/dlogp: largest change {result['token_weight_difference_max']:.3g}",
    ]
