"""A Llama with random weights, built from a config, saved with the tiny-arith tokenizer: a
mid-sized model for `rlvr plan --verify` and `rlvr train` on the CPU (docs/scaling.md).

    .venv/bin/python benchmarks/random_llama.py --out /tmp/llama-113m    # 12 layers x 768: 113M parameters

Its answers are noise; what it is for is memory: weights, gradients and AdamW states of a real size.
The vocabulary is the tiny tokenizer's, so nearly every parameter sits in the decoder layers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from rlvr.bases import SHIPPED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(str(SHIPPED))
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                         num_hidden_layers=args.layers, num_attention_heads=args.hidden // 64,
                         num_key_value_heads=args.hidden // 64, max_position_embeddings=512, tie_word_embeddings=False,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters -> {args.out}")


if __name__ == "__main__":
    main()
