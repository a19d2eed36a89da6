"""The architecture numbers a memory estimate needs, read from a Hugging Face config.json or a preset.

Only decoder-only Llama-family transformers are modelled (Llama, Qwen2, Mistral): RMSNorm, rotary
positions, grouped-query attention and a SwiGLU MLP (gate, up, down projections). Kept free of
torch so that `rlvr memory` answers at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rlvr.errors import UserError

TINY_ARITH_CONFIG = Path(__file__).resolve().parents[1] / "bases" / "assets" / "tiny-arith" / "config.json"
"""The shipped embedded model's config.json; the preset `tiny-arith` is read from it."""


@dataclass(frozen=True)
class ModelSpec:
    """Sizes of a Llama-family decoder (letters as in docs/memory.md)."""

    name: str
    hidden_size: int  # h
    num_layers: int  # L
    num_heads: int  # a
    num_kv_heads: int  # k
    head_dim: int  # d
    intermediate_size: int  # I (SwiGLU width)
    vocab_size: int  # V
    tie_embeddings: bool
    qkv_bias: bool = False
    """Qwen2 adds a bias to the q, k and v projections."""
    context: int | None = None
    """max_position_embeddings: the longest sequence the model was built for (None: not given)."""

    @property
    def layer_params(self) -> int:
        h, a, k, d, inter = self.hidden_size, self.num_heads, self.num_kv_heads, self.head_dim, self.intermediate_size
        attention = h * a * d + 2 * h * k * d + a * d * h  # q, k, v, o projections
        bias = (a * d + 2 * k * d) if self.qkv_bias else 0
        mlp = 3 * h * inter  # gate, up, down
        return attention + bias + mlp + 2 * h  # + two RMSNorm weights

    @property
    def num_params(self) -> int:
        """All parameters; a tied output head shares the embedding matrix and adds nothing."""
        embeddings = self.vocab_size * self.hidden_size
        head = 0 if self.tie_embeddings else embeddings
        return self.num_layers * self.layer_params + embeddings + head + self.hidden_size  # + final norm

    def lora_params(self, rank: int) -> int:
        """LoRA adapters (Hu et al. 2021) on every linear of every layer: r * (in + out) each."""
        h, a, k, d, inter = self.hidden_size, self.num_heads, self.num_kv_heads, self.head_dim, self.intermediate_size
        shapes = [(h, a * d), (h, k * d), (h, k * d), (a * d, h), (h, inter), (h, inter), (inter, h)]
        return self.num_layers * sum(rank * (n_in + n_out) for n_in, n_out in shapes)

    @property
    def value_model_params(self) -> int:
        """A critic or reward model on the same backbone: the LM head becomes a scalar head (h + 1)."""
        head = 0 if self.tie_embeddings else self.vocab_size * self.hidden_size
        return self.num_params - head + self.hidden_size + 1


def spec_from_config(config: dict, name: str) -> ModelSpec:
    """A ModelSpec from the fields of a Hugging Face config.json (LlamaConfig / Qwen2Config names)."""
    missing = [
        key
        for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
        if key not in config
    ]
    if missing:
        raise UserError(
            f"{name}: config.json lacks {', '.join(missing)}; rlvr memory models "
            "Llama-family decoders (Llama, Qwen2, Mistral)"
        )
    heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    return ModelSpec(
        name=name,
        hidden_size=hidden,
        num_layers=int(config["num_hidden_layers"]),
        num_heads=heads,
        num_kv_heads=int(config.get("num_key_value_heads") or heads),
        head_dim=int(config.get("head_dim") or hidden // heads),
        intermediate_size=int(config["intermediate_size"]),
        vocab_size=int(config["vocab_size"]),
        tie_embeddings=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=bool(config.get("attention_bias", config.get("model_type") == "qwen2")),
        context=int(config["max_position_embeddings"]) if config.get("max_position_embeddings") else None,
    )


# The fields of each model's config.json as published on the Hugging Face Hub (the model cards'
# parameter counts are checked against these in tests/diagnostics/test_memory_estimate.py).
_PRESET_FIELDS = (
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "tie_word_embeddings",
)
_PRESET_CONFIGS: dict[str, dict] = {
    name: dict(zip(_PRESET_FIELDS, values, strict=True))
    for name, values in {
        "Qwen2.5-0.5B": ("qwen2", 896, 24, 14, 2, 4864, 151936, True),
        "Qwen2.5-1.5B": ("qwen2", 1536, 28, 12, 2, 8960, 151936, True),
        "Qwen2.5-7B": ("qwen2", 3584, 28, 28, 4, 18944, 152064, False),
        "Llama-3-8B": ("llama", 4096, 32, 32, 8, 14336, 128256, False),
    }.items()
}


def preset_names() -> list[str]:
    return ["tiny-arith", *_PRESET_CONFIGS]


def _read_config(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read {path} ({error.__class__.__name__}); pass a readable config.json") from None
    except json.JSONDecodeError as error:
        raise UserError(
            f"{path} is not valid JSON ({error.msg} at line {error.lineno}); pass a Hugging Face config.json"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object of model settings")
    return data


def load_model_spec(model: str) -> ModelSpec:
    """A preset name (case-insensitive), a config.json file, or a model directory holding one."""
    by_lower = {name.lower(): name for name in preset_names()}
    if model.lower() in by_lower:
        name = by_lower[model.lower()]
        config = _read_config(TINY_ARITH_CONFIG) if name == "tiny-arith" else _PRESET_CONFIGS[name]
        return spec_from_config(config, name)
    path = Path(model).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise UserError(f"--model {model}: no such file {path}; pass a config.json, a model directory or a preset")
        return spec_from_config(_read_config(path), model)
    raise UserError(
        f"--model {model}: unknown preset and not a path; presets: {', '.join(preset_names())}, "
        "or pass a Hugging Face config.json"
    )
