"""Weights in: a safetensors file -> tensors (never pickle), every failure a WeightsError.

Tensors come back aligned as torch allocates them: safetensors hands out views into one buffer at
whatever offset each tensor has in the file, and CPU kernels choose their code paths by alignment.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import sys
from collections.abc import Callable
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
        state = load_file(str(path))  # maps the file: no tensor is read yet
    except (OSError, SafetensorError, RuntimeError, ValueError) as exc:
        raise WeightsError(f"cannot read weights: {exc}", Location(str(path))) from None
    pages = _FilePages()
    for key, tensor in state.items():
        if tensor.data_ptr() % _ALIGNMENT:
            state[key] = _aligned_copy(tensor, pages)
    pages.release()
    return state


_ALIGNMENT = 64  # what torch's CPU allocator gives every tensor
_CHUNK = 2**20  # bytes of the file copied between two releases of its pages


def _aligned_copy(tensor: torch.Tensor, pages: _FilePages) -> torch.Tensor:
    """An aligned copy of ``tensor``, a view at a misaligned offset of the mapped file.

    safetensors hands out views into the mapped file at whatever offset each tensor has in it,
    and CPU kernels pick their code paths by alignment: a convolution on a misaligned weight can
    differ from the same model's in the last bit, and loaded models must compute exactly what
    their original computes. Copying makes the file's pages resident in this process; ``pages``
    gives them back every ``_CHUNK`` bytes, so that the file is never resident twice: the peak is
    the copies plus about ``_CHUNK`` bytes of the file.
    """
    if tensor.numel() * tensor.element_size() <= _CHUNK:
        copy = tensor.clone()
        pages.copied(tensor)
        return copy
    copy = torch.empty(tensor.shape, dtype=tensor.dtype)
    source, target = tensor.reshape(-1), copy.view(-1)
    step = _CHUNK // tensor.element_size()
    for start in range(0, source.numel(), step):
        part = source[start : start + step]
        target[start : start + step].copy_(part)
        pages.copied(part)
    return copy


class _FilePages:
    """The mapped file's pages that ``read_weights`` has copied, given back to the system
    (``madvise(MADV_DONTNEED)``) once they add up to ``_CHUNK`` bytes; where that call is not
    available, they stay resident until the file is unmapped, when ``read_weights`` returns.

    Only for views into the file that ``read_weights`` has copied and drops: a dropped page of a
    file mapping is read from the file again if touched, and no other tensor has bytes in a
    whole page inside one tensor's bytes (safetensors' tensors never overlap)."""

    def __init__(self) -> None:
        self.madvise = _madvise()
        self.start = self.end = 0  # the bytes copied since the last release, if contiguous

    def copied(self, tensor: torch.Tensor) -> None:
        if self.madvise is None:
            return
        start = tensor.data_ptr()
        end = start + tensor.numel() * tensor.element_size()
        if start != self.end:  # not right after the last one: release that run first
            self.release()
            self.start = start
        self.end = end
        if self.end - self.start >= _CHUNK:
            self.release(more=True)

    def release(self, *, more: bool = False) -> None:
        """Give back the whole pages of the run; ``more``: the run goes on, from its last page
        (which may hold bytes of the next tensor, not copied yet)."""
        page = mmap.PAGESIZE
        first, last = -(-self.start // page) * page, self.end // page * page
        if self.madvise is not None and last > first:
            self.madvise(first, last - first, 4)  # MADV_DONTNEED; failing leaves them resident
        if more:
            self.start = max(self.start, last)
        else:
            self.start = self.end = 0


@functools.cache
def _madvise() -> Callable[[int, int, int], int] | None:
    """libc's ``madvise`` on Linux, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise
