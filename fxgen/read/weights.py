"""Weights in: a safetensors file -> tensors (never pickle), every failure a WeightsError.

Tensors come back aligned as torch allocates them: safetensors hands out views into the mapped
file at whatever offset each tensor has in it, and CPU kernels choose their code paths by
alignment. Those at a 64-byte offset stay views into the mapped file (fxgen's own files put
nearly every tensor there: loading them reads nothing); the others, most of a file written by
``safetensors.torch.save_file`` (8-byte offsets), are read from the file into one aligned
allocation, each at a 64-byte offset of it, at the speed of the page cache.

``weights_digest`` reads the digest fxgen's writer records in the header (``__metadata__``),
without reading any tensor: what a spec exported with the file records too.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from fxgen._errors import Location, WeightsError
from fxgen.read.files import open_regular

__all__ = ["DIGEST_KEY", "read_weights", "weights_digest"]


DIGEST_KEY = "digest"  # the key of fxgen's digest in a safetensors file's __metadata__


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file; any failure is a WeightsError naming the file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    with _opened(path) as f:
        head = f.read(9)
    # safetensors: an 8-byte header length, then the JSON header "{"; pickle: 0x80 <protocol>; torch.save: zip
    if head[8:9] != b"{" and head.startswith((b"PK\x03\x04", b"\x80")):
        raise WeightsError(
            "cannot read weights: not a safetensors file: it looks like a torch.save/pickle file, which fxgen never loads "
            "(unpickling runs code); convert it once with safetensors.torch.save_file",
            Location(str(path)),
        )
    try:
        state = load_file(str(path))  # maps the file (and checks its header): no tensor is read yet
    except (OSError, SafetensorError, RuntimeError, ValueError) as exc:
        raise WeightsError(f"cannot read weights: {exc}", Location(str(path))) from None
    misaligned = [key for key, tensor in state.items() if tensor.numel() and tensor.data_ptr() % _ALIGNMENT]
    if misaligned:
        with _opened(path) as f:
            start, header = _header(f, path)
            state.update(_read_aligned(f, path, start, {key: (state[key], header[key]) for key in misaligned}))
    return state


def weights_digest(path: str | Path) -> str | None:
    """The digest fxgen's writer recorded in the file's header, None if there is none (a file
    written by another tool); reads the header only."""
    with _opened(path) as f:
        _, header = _header(f, path)
    metadata = header.get("__metadata__")
    digest = metadata.get(DIGEST_KEY) if isinstance(metadata, dict) else None
    return digest if isinstance(digest, str) else None


_ALIGNMENT = 64  # what torch's CPU allocator gives every tensor
_HEADER_LIMIT = 100_000_000  # safetensors' own limit on the JSON header


@contextlib.contextmanager
def _opened(path: str | Path) -> Iterator[io.FileIO]:
    """The file, unbuffered, if it is a regular file; an OSError is a WeightsError naming it."""
    try:
        f = open_regular(path)  # a FIFO or a device is refused before anything is read
    except OSError as exc:
        raise WeightsError(f"cannot read weights: {exc.strerror or exc}", Location(str(path))) from None
    with f:
        yield f


def _header(f: io.FileIO, path: str | Path) -> tuple[int, dict[str, Any]]:
    """Where the data starts, and the parsed JSON header."""
    try:
        size = int.from_bytes(f.read(8), "little")
        if size > _HEADER_LIMIT:
            raise ValueError(f"a header of {size} bytes")
        header = json.loads(f.read(size))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (OSError, ValueError, RecursionError) as exc:  # (json's errors are ValueErrors; nesting bombs recurse)
        raise WeightsError(f"cannot read weights: not a safetensors file ({exc})", Location(str(path))) from None
    return 8 + size, header


def _read_aligned(
    f: io.FileIO, path: str | Path, start: int, tensors: dict[str, tuple[torch.Tensor, dict[str, Any]]]
) -> dict[str, torch.Tensor]:
    """``tensors`` (each a view into the mapped file and its header entry) read from the file
    into one allocation, each at a 64-byte offset of it: the reads fill it straight from the
    page cache, one system call per run of adjacent tensors (``os.preadv``), no copy in between.

    Each tensor gets a storage of its own over its part of the allocation (``torch.frombuffer``),
    as each has in the mapped file: tools that look for tensors sharing memory, such as
    ``safetensors.torch.save_file``, see separate tensors. The allocation lives as long as one
    of them does."""
    order = sorted(tensors, key=lambda key: tensors[key][1]["data_offsets"][0])
    slots: dict[str, int] = {}
    size = 0
    for key in order:
        slots[key] = size
        size += -(-tensors[key][0].nbytes // _ALIGNMENT) * _ALIGNMENT
    memory = torch.empty(size, dtype=torch.uint8).numpy()  # 64-byte aligned, as torch allocates
    view = memory.data
    runs: list[tuple[int, list[memoryview]]] = []  # file offset -> the slots its bytes go to, in turn
    end = -1
    for key in order:
        lo, hi = tensors[key][1]["data_offsets"]
        if lo != end:
            runs.append((start + lo, []))
        runs[-1][1].append(view[slots[key] : slots[key] + hi - lo])
        end = hi
    for offset, targets in runs:
        _fill(f, offset, targets, path)
    out = {}
    for key in order:
        mapped = tensors[key][0]
        out[key] = torch.frombuffer(memory, dtype=mapped.dtype, count=mapped.numel(), offset=slots[key]).view(
            mapped.shape
        )
    return out


_IOV_MAX = 1024  # buffers per preadv call (the POSIX minimum of IOV_MAX is 16; Linux and macOS allow 1024)


def _fill(f: io.FileIO, offset: int, targets: list[memoryview], path: str | Path) -> None:
    """Read the file's bytes from ``offset`` on into ``targets``, one after the other."""
    pending = deque(target for target in targets if len(target))
    while pending:
        batch = [pending[i] for i in range(min(len(pending), _IOV_MAX))]
        try:
            got = _PREADV(f, batch, offset)
        except OSError as exc:
            raise WeightsError(f"cannot read weights: {exc.strerror or exc}", Location(str(path))) from None
        if got <= 0:
            raise WeightsError("cannot read weights: the file ended early (was it changed while it was read?)",
                               Location(str(path)))  # fmt: skip
        offset += got
        while got:
            if len(pending[0]) <= got:
                got -= len(pending.popleft())
            else:
                pending[0] = pending[0][got:]
                got = 0


def _preadv(f: io.FileIO, buffers: list[memoryview], offset: int) -> int:
    return os.preadv(f.fileno(), buffers, offset)


def _seek_readinto(f: io.FileIO, buffers: list[memoryview], offset: int) -> int:
    """``_preadv`` where the system has no preadv (Windows): the first buffer only."""
    f.seek(offset)
    return f.readinto(buffers[0]) or 0


_PREADV: Callable[[io.FileIO, list[memoryview], int], int] = _preadv if hasattr(os, "preadv") else _seek_readinto
