"""The memory estimator's per-process bytes of weights, gradients and AdamW state, checked against
the tensors each process really holds: unsharded, and sharded with FSDP2 (`fully_shard`).

    .venv/bin/torchrun --nproc_per_node 2 benchmarks/fsdp_memory_check.py            # ~100M Llama
    .venv/bin/torchrun --nproc_per_node 2 benchmarks/fsdp_memory_check.py --layers 2 # a quick look
    .venv/bin/python benchmarks/fsdp_memory_check.py                                  # 1 process

A Llama is built from a config with random weights (12 layers, hidden 768, MLP 3072, vocab 32000,
untied embeddings: 162M parameters by default), in float32, on the CPU with the gloo backend. Each process takes one
forward, backward and AdamW step on a tiny batch twice: with the whole model (as DDP holds it), and
with every decoder layer and the model wrapped by `torch.distributed.fsdp.fully_shard` (FULL_SHARD,
the estimator's `--sharding fsdp`). It then sums the bytes of the tensors it holds: the parameters'
local shards, their gradients' local shards, and the optimizer's state tensors (exp_avg,
exp_avg_sq). Rank 0 prints them beside `rlvr memory --precision fp32 --sharding zero0|fsdp --gpus N`
for the same config (policy_weights, policy_gradients, policy_optimizer) and the ratio measured /
estimated. Activations and the KV cache are not compared (the batch is tiny, and the rollout is not
run). This checks the estimator's sharding arithmetic, not rlvr's training loop: `train.sharding`
has no FSDP2 path yet.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist


def held_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    def local(t: torch.Tensor) -> torch.Tensor:
        return t.to_local() if hasattr(t, "to_local") else t

    params = [local(p.detach()) for p in model.parameters()]
    grads = [local(p.grad) for p in model.parameters() if p.grad is not None]
    states = [local(v) for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0]
    return {
        "policy_weights": sum(t.numel() * t.element_size() for t in params),
        "policy_gradients": sum(t.numel() * t.element_size() for t in grads),
        "policy_optimizer": sum(t.numel() * t.element_size() for t in states),
    }


def one_step(config, *, shard: bool) -> dict[str, int]:
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    if shard:
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(1))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    return held_bytes(model, optimizer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--vocab", type=int, default=32000)
    args = parser.parse_args()
    from transformers import LlamaConfig

    from rlvr.diagnostics.memory_estimate import TrainingSetup, estimate
    from rlvr.diagnostics.memory_model import load_model_spec

    torch.set_num_threads(1)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    world = dist.get_world_size() if distributed else 1
    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                         num_hidden_layers=args.layers, num_attention_heads=args.hidden // 64, num_key_value_heads=args.hidden // 64,
                         tie_word_embeddings=False)  # fmt: skip
    rows = {"ddp (whole model)": one_step(config, shard=False)}
    if distributed:
        rows["fsdp2 (full shard)"] = one_step(config, shard=True)
    if distributed and dist.get_rank() != 0:
        dist.destroy_process_group()
        return
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(config.to_dict()))
        spec = load_model_spec(tmp)
    estimates = {
        "ddp (whole model)": estimate(spec, TrainingSetup(precision="fp32", gpus=world, zero_stage=0)),
        "fsdp2 (full shard)": estimate(spec, TrainingSetup(precision="fp32", gpus=world, zero_stage=3)),
    }
    print(f"{spec.num_params / 1e6:.1f}M parameters, {world} process(es), float32, AdamW; bytes per process")
    print(f"{'setting':20s} {'component':18s} {'held':>12s} {'estimated':>12s} {'held/est':>9s}")
    for name, held in rows.items():
        est = estimates[name].components
        for key, value in held.items():
            print(f"{name:20s} {key:18s} {value:12,d} {est[key].bytes:12,.0f} {value / est[key].bytes:9.3f}")
    if "fsdp2 (full shard)" in rows:
        whole, shard = rows["ddp (whole model)"], rows["fsdp2 (full shard)"]
        total = sum(shard.values()) / sum(whole.values())
        print(f"fsdp2 / ddp, weights + gradients + optimizer per process: {total:.3f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
