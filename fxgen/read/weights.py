"""Weights in: a safetensors file -> tensors (never pickle), every failure a WeightsError.

Tensors come back aligned as torch allocates them: safetensors hands out views into one buffer at
whatever offset each tensor has in the file, and CPU kernels choose their code paths by alignment.
"""

from __future__ import annotations

from pathlib import Path

import torch

from fxgen._errors import Location, WeightsError

__all__ = ["read_weights"]


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file; any failure is a WeightsError naming the file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError as exc:
        raise WeightsError(f"cannot read weights: {exc.strerror or exc}", Location(str(path))) from None
    # safetensors: an 8-byte header length, then the JSON header "{"; pickle: 0x80 <protocol>; torch.save: zip
    if head[8:9] != b"{" and head.startswith((b"PK\x03\x04", b"\x80")):
        raise WeightsError(
            "cannot read weights: not a safetensors file: it looks like a torch.save/pickle file, which fxgen never loads "
            "(unpickling runs code); convert it once with safetensors.torch.save_file",
            Location(str(path)),
        )
    try:
        state = load_file(str(path))
    except (OSError, SafetensorError, RuntimeError, ValueError) as exc:
        raise WeightsError(f"cannot read weights: {exc}", Location(str(path))) from None
    return {key: _aligned(tensor) for key, tensor in state.items()}


_ALIGNMENT = 64  # what torch's CPU allocator gives every tensor


def _aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, or an aligned copy when it is not at a multiple of 64 bytes. safetensors hands
    out views into one buffer at whatever offset each tensor has in the file, and CPU kernels pick
    their code paths by alignment: a convolution on a misaligned weight can differ from the same
    model's in the last bit. Loaded models must compute exactly what their original computes."""
    if tensor.data_ptr() % _ALIGNMENT == 0:
        return tensor
    return tensor.clone()
