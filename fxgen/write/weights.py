"""Weights out: a model's tensors -> a safetensors file, streamed and written atomically, with a
digest that the spec exported with it records.

The file is streamed: the header is computed from the tensors' names, dtypes and shapes alone,
then each tensor's bytes are written in turn straight from the tensor, into a temporary file
renamed over the target once complete, so no copy of the weights is made (a non-contiguous
tensor is copied on its own while it is written). The digest (SHA-256 of the tensor table and
the data) is computed as the bytes go out and recorded in the header's ``__metadata__``: a spec
that records it loads only with this file (``fxgen.assemble.weights.check_digest``).
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from pathlib import Path
from typing import Any

import torch

from fxgen._errors import WeightsError
from fxgen.read.weights import DIGEST_KEY
from fxgen.write.atomic import remove_stale, replacing

__all__ = ["DIGEST_PREFIX", "write_weights"]


DIGEST_PREFIX = "sha256:"
_METADATA = {"format": "pt", "producer": "fxgen"}
_PLACEHOLDER = DIGEST_PREFIX + "0" * 64  # written first, replaced by the digest once the data is out


def write_weights(path: str | Path, state: dict[str, torch.Tensor]) -> str:
    """Write ``state`` as safetensors, atomically, each key's tensor stored on its own (tied
    tensors too); returns the file's digest (``sha256:<hex>``). The bytes depend on the tensors
    only, not on the order of ``state``."""
    entries = {name: _entry(name, tensor) for name, tensor in state.items()}
    layout: dict[str, Any] = {}
    offset = 0
    for name in _order(entries):
        size = entries[name]["data_offsets"][1]
        layout[name] = {**entries[name], "data_offsets": [offset, offset + size]}
        offset += size
    table = _json(layout)
    metadata = dict(sorted({**_METADATA, DIGEST_KEY: _PLACEHOLDER}.items()))
    text = _json({"__metadata__": metadata, **layout})
    text += b" " * (-(8 + len(text)) % _ALIGNMENT)  # as safetensors pads it: the data starts at a boundary
    digest = hashlib.sha256(table)
    remove_stale(Path(path).parent, Path(path).name)  # what a killed earlier write of it left
    with replacing(path) as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name in layout:
            data = _bytes(state[name])
            digest.update(data)
            f.write(data)
            del data  # (a copy of a non-contiguous tensor goes before the next one is made)
        value = DIGEST_PREFIX + digest.hexdigest()
        f.seek(8 + text.index(_PLACEHOLDER.encode()))
        f.write(value.encode())
    return value


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.complex64: "C64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}  # fmt: skip  # what safetensors stores of the dtypes a spec declares


def _entry(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    """``name``'s header entry, as safetensors writes it; ``data_offsets`` is ``[0, size]``."""
    code = _DTYPES.get(tensor.dtype)
    if code is None or tensor.layout != torch.strided:
        what = tensor.dtype if code is None else tensor.layout
        raise WeightsError(f"cannot write weights: {name!r} is a {what} tensor, which safetensors does not store "
                           f"(it stores {', '.join(str(d).removeprefix('torch.') for d in _DTYPES)}, strided)")  # fmt: skip
    return {"dtype": code, "shape": list(tensor.shape), "data_offsets": [0, tensor.numel() * tensor.element_size()]}


def _bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's bytes as safetensors stores them (C order, little-endian), without a copy if
    it is a contiguous CPU tensor."""
    tensor = tensor.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
    return tensor.reshape(-1).view(torch.uint8).numpy().data


_ALIGNMENT = 64  # torch's CPU allocator aligns every tensor so; fxgen.read.weights copies any that is not


def _order(header: dict[str, Any]) -> list[str]:
    """The tensors' order in the data, laid out so that as many as possible are used straight
    from the mapped file, not copied: those whose offset is a multiple of 64 bytes.

    First, in name order, those whose size is a multiple of 64 bytes (each then at such an
    offset); then the others, by element size, largest first, so that each still starts at a
    multiple of its own element size, as safetensors keeps it. Within an element size, whenever
    the offset is at a 64-byte boundary the largest tensor left goes there; otherwise the
    smallest one that brings it back to a boundary, or failing that the smallest one left. So
    the tensors off a boundary, copied when read, are mostly small ones (a BatchNorm's 8-byte
    ``num_batches_tracked``, a bias of 10 floats)."""
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
