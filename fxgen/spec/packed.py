"""Packed tensor data: a tensor's exact bytes as text a spec can carry.

A buffer's ``data`` is the base64 text (RFC 4648, standard alphabet, padded) of the
zlib-compressed bytes of the tensor: its elements in row-major order, each in little-endian
byte order (a complex number is its real part, then its imaginary part). ``shape`` and
``dtype`` say how many bytes that must be, so decoding is checked and bounded: it stops as soon
as the stream gives one byte more than the declared size (a compression bomb costs no more than
the declared size), and a stream that ends early, has trailing bytes or is corrupt is an error.
Small tensors are written as readable literals instead (``value``); this is for the large ones,
and for values a literal cannot hold exactly (NaN payloads, infinities, complex numbers).

Nothing here runs code a spec chooses: the text is only decoded.
"""

from __future__ import annotations

import base64
import binascii
import ctypes
import math
import sys
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = [
    "ITEM_SIZES",
    "PACKED_LIMIT",
    "PACKED_TOTAL_LIMIT",
    "PackedError",
    "check_packed",
    "decoded_bytes",
    "pack",
    "packed_size",
    "unpack",
]


PACKED_LIMIT = 256 * 2**20
"""Decoded bytes one packed tensor may declare (its shape times its element size)."""


PACKED_TOTAL_LIMIT = 1024 * 2**20
"""Decoded bytes all packed tensors of one spec may declare together."""


ITEM_SIZES: dict[str, int] = {
    "float16": 2, "float32": 4, "float64": 8, "bfloat16": 2, "complex64": 8, "complex128": 16,
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "bool": 1,
}  # fmt: skip
"""Bytes per element of each spec dtype (a test checks them against torch)."""


_CHUNK = 1 << 20  # bytes decompressed at a time while only checking


_DAMAGED = "; the data is damaged or the shape and dtype are not its own: export the tensor again"


class PackedError(ValueError):
    """Packed data that does not decode to exactly the declared tensor."""


def packed_size(shape: list[int], dtype: str) -> int:
    """The number of bytes ``data`` must decode to."""
    return math.prod(shape) * ITEM_SIZES[dtype]


def _stream(data: str, expected: int) -> Iterator[bytes]:
    """The decompressed bytes of ``data`` in chunks, checked against ``expected`` bytes."""
    try:
        compressed = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PackedError(f"data is not base64 text ({exc}){_DAMAGED}") from None
    inflate = zlib.decompressobj()
    got = 0
    pending = compressed
    try:
        while True:
            chunk = inflate.decompress(pending, min(_CHUNK, expected + 1 - got))
            pending = inflate.unconsumed_tail
            got += len(chunk)
            if got > expected:
                raise PackedError(f"data decodes to more than the {expected} bytes its shape and dtype declare{_DAMAGED}")
            if chunk:
                yield chunk
            if inflate.eof or (not chunk and not pending):
                break
    except zlib.error as exc:
        raise PackedError(f"data is not zlib-compressed bytes ({exc}){_DAMAGED}") from None
    if not inflate.eof:
        raise PackedError(f"data's compressed stream is cut short after {got} of the {expected} bytes its shape "
                          f"and dtype declare{_DAMAGED}")  # fmt: skip
    if inflate.unused_data:
        raise PackedError(f"data has bytes after the end of its compressed stream{_DAMAGED}")
    if got != expected:
        raise PackedError(f"data decodes to {got} bytes, but its shape and dtype declare {expected}{_DAMAGED}")


def check_packed(data: str, shape: list[int], dtype: str) -> None:
    """Raise PackedError unless ``data`` decodes to exactly ``shape`` x ``dtype``; memory stays
    bounded by one chunk whatever the data claims."""
    for _ in _stream(data, _expected(shape, dtype)):
        pass


def _expected(shape: list[int], dtype: str) -> int:
    """The declared size in bytes, if packed data may declare it."""
    expected = packed_size(shape, dtype)
    if expected > PACKED_LIMIT:
        raise PackedError(f"the tensor takes {expected} bytes; packed data is limited to {PACKED_LIMIT} "
                          "(save it in the weights file as a persistent buffer instead)")  # fmt: skip
    if expected == 0:
        raise PackedError("an empty tensor has no data; declare it with its shape only")
    return expected


def decoded_bytes(data: str, shape: list[int], dtype: str) -> bytearray:
    """The little-endian element bytes ``data`` holds (checked as ``check_packed`` does)."""
    out = bytearray()
    for chunk in _stream(data, _expected(shape, dtype)):
        out += chunk
    return out


def unpack(data: str, shape: list[int], dtype: str) -> torch.Tensor:
    """The tensor ``data`` holds, on the CPU (it owns its memory: the decoded bytes)."""
    import torch

    from fxgen.spec.values import DTYPES

    torch_dtype = DTYPES[dtype]
    raw = decoded_bytes(data, shape, dtype)
    flat = _from_little_endian(torch.frombuffer(raw, dtype=torch.uint8), dtype, sys.byteorder)
    return flat.view(torch_dtype).reshape(shape)


def pack(tensor: torch.Tensor) -> str:
    """``data`` for ``tensor`` (any device; it is copied to the CPU)."""
    import torch

    from fxgen.spec.values import dtype_name

    name = dtype_name(tensor.dtype)
    if tensor.numel() == 0:
        raise ValueError("an empty tensor has no data to pack")
    flat = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
    flat = _from_little_endian(flat, name, sys.byteorder)
    raw = ctypes.string_at(flat.data_ptr(), flat.numel())  # the bytes, without needing numpy
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def _from_little_endian(flat: torch.Tensor, dtype: str, byteorder: str) -> torch.Tensor:
    """Bytes of ``dtype`` elements between little-endian and this machine's order (the swap is
    its own inverse; complex numbers swap each part)."""
    unit = ITEM_SIZES[dtype] // (2 if dtype.startswith("complex") else 1)
    if byteorder == "little" or unit == 1:
        return flat
    return flat.view(-1, unit).flip(1).reshape(-1).contiguous()
