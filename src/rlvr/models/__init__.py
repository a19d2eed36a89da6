"""The policy runtime: load a model from a directory (loading.py), score completions under it
(logprobs.py), its fast forward pass for tiny Llamas (fast_llama.py, chosen in forward.py), LoRA
adapters (lora.py), the built-in bases' tokenizer (tokenizer.py) and the precision rules
(numerics.py). A built-in base's name becomes a directory in rlvr.bases, which builds on this
package and never the other way round."""

from rlvr.models.loading import load_policy

__all__ = ["load_policy"]
