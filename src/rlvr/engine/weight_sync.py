"""A weight sync's bytes: the tensors that train, copied into one flat buffer with a spec of their
names, dtypes and shapes, and read back as views (engine/async_rollouts.py sends them to the
sampler process). Raw bytes rather than a pickle: torch.save of the default model's weights took
22 ms a sync, 11% of the trainer's step under rollout.max_staleness, where this copy takes under
1 ms. The buffer is a numpy array, not a tensor, so that the thread that sends and drops it never
frees a tensor (async_rollouts.py `_write` says why that matters).
"""

from __future__ import annotations

import numpy as np
import torch

Spec = list[tuple[str, torch.dtype, torch.Size]]
"""Each packed tensor's name, dtype and shape, in the order of its bytes."""

ALIGN = 8
"""Every tensor's bytes start at a multiple of this, so that each unpacks as a view of its dtype."""


def pack_state(state: dict[str, torch.Tensor]) -> tuple[Spec, np.ndarray]:
    """The tensors' bytes, copied into one flat uint8 numpy array (each padded to ALIGN), and their spec."""
    spec: Spec = []
    pieces: list[torch.Tensor] = []
    for name, tensor in state.items():
        data = tensor.detach().reshape(-1).view(torch.uint8).cpu()
        pieces.append(data)
        if data.numel() % ALIGN:
            pieces.append(torch.zeros(ALIGN - data.numel() % ALIGN, dtype=torch.uint8))
        spec.append((name, tensor.dtype, tensor.shape))
    flat = np.empty(sum(piece.numel() for piece in pieces), dtype=np.uint8)
    if pieces:
        torch.cat(pieces, out=torch.from_numpy(flat))
    return spec, flat


def unpack_state(spec: Spec, buffer: bytearray) -> dict[str, torch.Tensor]:
    """`pack_state`'s tensors again, as views into `buffer` (no copy)."""
    flat = torch.frombuffer(buffer, dtype=torch.uint8) if len(buffer) else torch.zeros(0, dtype=torch.uint8)
    state, offset = {}, 0
    for name, dtype, shape in spec:
        size = shape.numel() * dtype.itemsize
        state[name] = flat[offset : offset + size].view(dtype).reshape(shape)
        offset += -(-size // ALIGN) * ALIGN
    if offset != flat.numel():
        raise ValueError(f"a weight sync of {flat.numel()} bytes does not match its spec ({offset} bytes)")
    return state
