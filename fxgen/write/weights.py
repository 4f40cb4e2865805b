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
    return save(tensors, metadata={"format": "pt", "producer": "fxgen"})


def write_weights(path: str | Path, state: dict[str, torch.Tensor]) -> None:
    """Write ``state`` as safetensors, atomically."""
    from fxgen.write.atomic import write_atomic

    write_atomic(path, weights_bytes(state))
