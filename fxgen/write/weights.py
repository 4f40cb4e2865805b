"""Weights out: a model's tensors -> a safetensors file, written atomically."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

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
    """The same file with its tensors laid out so that as many as possible are used straight
    from the mapped file, not copied: those whose offset is a multiple of 64 bytes.

    The header is padded with spaces (as safetensors pads it itself) so that the data starts at
    a multiple of 64 bytes. safetensors orders the data by dtype and name, so one tensor whose
    size is not a multiple of 64 bytes (a BatchNorm's 8-byte ``num_batches_tracked``, a bias of
    10 floats) moves every later tensor off the boundary. The data is laid out again (``_order``),
    as the format allows (any order, no gaps). Keys, dtypes, shapes, bytes and the metadata are
    safetensors' own; only the offsets (and the order of the metadata's keys) change.
    """
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    layout: dict[str, Any] = {}
    if "__metadata__" in header:  # in hash order from safetensors; sorted, the bytes repeat
        layout["__metadata__"] = dict(sorted(header.pop("__metadata__").items()))
    parts, offset = [], 0
    for name in _order(header):
        start, end = header[name]["data_offsets"]
        layout[name] = {**header[name], "data_offsets": [offset, offset + end - start]}
        parts.append(body[start:end])
        offset += end - start
    text = json.dumps(layout, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-(8 + len(text)) % _ALIGNMENT)
    return b"".join([len(text).to_bytes(8, "little"), text, *parts])


def _order(header: dict[str, Any]) -> list[str]:
    """The tensors' order in the data: first, in name order, those whose size is a multiple of
    64 bytes (each then at such an offset); then the others, by element size, largest first, so
    that each still starts at a multiple of its own element size, as safetensors keeps it. Within
    an element size, whenever the offset is at a 64-byte boundary the largest tensor left goes
    there; otherwise the smallest one that brings it back to a boundary, or failing that the
    smallest one left. So the tensors off a boundary, copied when read, are mostly small ones."""
    sizes = {name: entry["data_offsets"][1] - entry["data_offsets"][0] for name, entry in header.items()}
    order = sorted(name for name, n in sizes.items() if n % _ALIGNMENT == 0)
    groups: dict[int, list[str]] = {}
    for name in sorted(sizes, key=lambda k: (sizes[k], k)):  # smallest first
        if sizes[name] % _ALIGNMENT:
            groups.setdefault(_itemsize(header[name]["dtype"]), []).append(name)
    offset = 0
    for itemsize in sorted(groups, reverse=True):
        left = groups[itemsize]
        taken = [False] * len(left)
        lo, hi = 0, len(left) - 1
        closing: dict[int, deque[int]] = {}  # residue mod 64 -> indices into left, smallest first
        for i, name in enumerate(left):
            closing.setdefault(sizes[name] % _ALIGNMENT, deque()).append(i)
        for _ in left:
            bucket = closing.get(-offset % _ALIGNMENT) if offset % _ALIGNMENT else None
            while bucket and taken[bucket[0]]:
                bucket.popleft()
            if bucket:
                pick = bucket.popleft()
            elif offset % _ALIGNMENT == 0:
                while taken[hi]:
                    hi -= 1
                pick = hi
            else:
                while taken[lo]:
                    lo += 1
                pick = lo
            taken[pick] = True
            order.append(left[pick])
            offset += sizes[left[pick]]
    return order


def _itemsize(dtype: str) -> int:
    """Bytes per element of a safetensors dtype name (``F32``: 4, ``BF16``: 2, ``BOOL``: 1);
    1 for a name that does not say (sub-byte types, which go last)."""
    digits = "".join(c for c in dtype.split("_")[0] if c.isdigit())
    return max(1, int(digits) // 8) if digits else 1


def write_weights(path: str | Path, state: dict[str, torch.Tensor]) -> None:
    """Write ``state`` as safetensors, atomically."""
    from fxgen.write.atomic import write_atomic

    write_atomic(path, weights_bytes(state))
