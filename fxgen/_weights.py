"""Weights stage: safetensors in and out (never pickle), strictly checked against the spec."""

from __future__ import annotations

from pathlib import Path

import torch

from fxgen._errors import Location, WeightsError

__all__ = ["check_weights", "read_weights", "write_weights"]


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
        return load_file(str(path))
    except (OSError, SafetensorError, RuntimeError, ValueError) as exc:
        raise WeightsError(f"cannot read weights: {exc}", Location(str(path))) from None


def check_weights(
    path: str | Path, expected: dict[str, torch.Tensor], found: dict[str, torch.Tensor]
) -> None:
    """Strict comparison of a weights file with the model's state: keys, shapes and dtypes."""
    problems = [f"missing tensor {k!r}" for k in expected if k not in found]
    problems += [f"unexpected tensor {k!r}" for k in found if k not in expected]
    for key, want in expected.items():
        got = found.get(key)
        if got is None:
            continue
        if tuple(got.shape) != tuple(want.shape):
            problems.append(f"{key!r} has shape {list(got.shape)}, the spec declares {list(want.shape)}")
        elif got.dtype != want.dtype:
            problems.append(f"{key!r} has dtype {got.dtype}, the spec declares {want.dtype}")
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise WeightsError(
            "weights do not fit the spec: " + "; ".join(problems[:5]) + more
            + "; export them again with `fxgen export ... --weights` or fix the spec",
            Location(str(path)),
        )


def write_weights(path: str | Path, state: dict[str, torch.Tensor]) -> None:
    """Write ``state`` as safetensors, atomically (tied tensors are stored once each)."""
    from safetensors.torch import save

    from fxgen._writer import write_atomic

    tensors = {k: v.detach().to("cpu").clone().contiguous() for k, v in sorted(state.items())}
    write_atomic(path, save(tensors, metadata={"format": "pt", "producer": "fxgen"}))
