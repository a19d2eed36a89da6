"""Which forward pass a model runs (model.forward), chosen once where the model is built.

`forward_for(model, setting)` looks at the model once and returns its `Forward`: rlvr's fused Llama
forward (models/fast_llama.py) when the model fits it and the setting asks for it, else HF's own
forward and `generate`. Whoever scores or samples (models/logprobs.py, rollout/hf.py) is handed
the Forward; a bare model passed instead runs as model.forward=auto decides.

| setting | the fused forward runs when the model fits it (a plain Llama, no LoRA, no checkpointing) |
|---|---|
| `auto` (default) | on the CPU; on a GPU, HF's forward with its fused attention kernels is the better default, and the one `rlvr memory` describes |
| `lean` | on any device |
| `hf` | never |

The fused forward never calls `model(...)`, so hooks registered on the module do not see it; an
observer (the memory meter, meters/memory.py) registers on the Forward's `hooks` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from transformers import PreTrainedModel

from rlvr.models.fast_llama import FastLlama, fits

FORWARD_SETTINGS = ("auto", "lean", "hf")
"""model.forward's values (config/schema.py); `lean` is the fused forward of models/fast_llama.py."""


@dataclass
class ForwardHooks:
    """What the fused forward tells an observer, where HF's forward would fire module hooks."""

    on_scoring: Callable[[], None] | None = None
    """Called at the start of each scoring pass (where a forward pre-hook on the model fires)."""
    on_cache: Callable[[int], None] | None = None
    """Called with the KV cache's size in bytes when sampling allocates one (up front, for all steps)."""

    def scoring(self) -> None:
        if self.on_scoring is not None:
            self.on_scoring()

    def cache(self, size: int) -> None:
        if self.on_cache is not None:
            self.on_cache(size)

    @contextmanager
    def observing(
        self, *, on_scoring: Callable[[], None] | None = None, on_cache: Callable[[int], None] | None = None
    ) -> Iterator[None]:
        """Set the given hooks for the duration of the block, then put back the ones before."""
        saved = self.on_scoring, self.on_cache
        self.on_scoring = on_scoring or self.on_scoring
        self.on_cache = on_cache or self.on_cache
        try:
            yield
        finally:
            self.on_scoring, self.on_cache = saved


@dataclass(frozen=True)
class Forward:
    """A model and the forward pass it runs; build it with `forward_for`."""

    model: PreTrainedModel
    fused: FastLlama | None
    """The fused forward over the model's own parameters, or None: HF's forward and `generate`."""
    setting: str = "auto"
    """model.forward, kept for copies of the model (`of`)."""
    hooks: ForwardHooks = field(default_factory=ForwardHooks)

    def of(self, model: PreTrainedModel) -> Forward:
        """The same choice for another copy of the weights (the sampler's bf16 copy), observed by the
        same hooks."""
        return forward_for(model, self.setting, hooks=self.hooks)


def forward_for(model: PreTrainedModel, setting: str = "auto", *, hooks: ForwardHooks | None = None) -> Forward:
    """`model`'s Forward under model.forward=`setting` (the table above). Call it once the model is
    final: on its device, with its LoRA adapters and gradient checkpointing set up."""
    if setting not in FORWARD_SETTINGS:
        raise ValueError(f"model.forward={setting!r}: use one of {', '.join(FORWARD_SETTINGS)}")
    wanted = fits(model) and (setting == "lean" or (setting == "auto" and model.device.type == "cpu"))
    fused = FastLlama(model) if wanted else None
    return Forward(model, fused, setting, hooks if hooks is not None else ForwardHooks())


Runnable = PreTrainedModel | Forward
"""What scoring and sampling take: a model's Forward, or a bare model (run as model.forward=auto)."""


def as_forward(runnable: Runnable) -> Forward:
    """`runnable` itself if it is a Forward, else the bare model's Forward under model.forward=auto."""
    return runnable if isinstance(runnable, Forward) else forward_for(runnable)
