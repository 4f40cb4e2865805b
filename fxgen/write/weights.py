"""Weights out: a model's tensors -> a safetensors file, written atomically."""

from __future__ import annotations

from pathlib import Path

import torch

__all__ = ["weights_bytes", "write_weights"]


def weights_bytes(state: dict[str, torch.Tensor]) -> bytes:
    """The safetensors file for ``state``, in memory (tied tensors are stored once each): the
    export command computes it before writing anything, so a failure leaves no file behind."""
    from safetensors.torch import save

    tensors = {k: v.detach().to("cpu").clone().contiguous() for k, v in sorted(state.items())}
    return _aligned(save(tensors, metadata={"format": "pt", "producer": "fxgen"}))


_ALIGNMENT = 64  # torch's CPU allocator aligns every tensor so; fxgen.read.weights copies any that is not


def _aligned(data: bytes) -> bytes:
    """The same file with its header padded (with spaces, as safetensors pads it itself) so that
    the tensor data starts at a multiple of 64 bytes: a tensor whose offset in the data is one
    too (nearly all: their sizes are) is then used straight from the mapped file, not copied."""
    size = int.from_bytes(data[:8], "little")
    padded = size + (-(8 + size)) % _ALIGNMENT
    header = data[8 : 8 + size] + b" " * (padded - size)
    return padded.to_bytes(8, "little") + header + data[8 + size :]


def write_weights(path: str | Path, state: dict[str, torch.Tensor]) -> None:
    """Write ``state`` as safetensors, atomically."""
    from fxgen.write.atomic import write_atomic

    write_atomic(path, weights_bytes(state))
