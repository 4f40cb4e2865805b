"""One tensor from one declaration: a parameter's or buffer's initial value.

``shape``/``dtype`` with an ``init`` scheme from the fixed table of ``fxgen.spec.init``, a literal
``value``, or packed ``data`` (``fxgen.spec.packed``), on a device (``meta`` skips the work).
"""

from __future__ import annotations

import math

import torch

from fxgen.spec.init import init_call
from fxgen.spec.model import BufferSpec, ParameterSpec
from fxgen.spec.packed import unpack
from fxgen.spec.values import DTYPES

__all__ = ["make_tensor", "shape_problem"]


_LARGEST = 2**63 - 1  # torch's sizes, strides and byte counts are int64


def shape_problem(shape: list[int], dtype: str) -> str | None:
    """Why no tensor of ``shape`` and ``dtype`` can be made, or None: what ``make_tensor``
    refuses on any device, the meta device included (validation asks here, so that ``validate``
    refuses what ``show`` and ``fxgen.load`` cannot build, with the same rule)."""
    try:
        _empty(shape, DTYPES[dtype], "meta")
    except (RuntimeError, TypeError, ValueError, OverflowError) as exc:
        size = DTYPES[dtype].itemsize
        too_large = next(((i, d) for i, d in enumerate(shape) if d > _LARGEST), None)
        if too_large is not None:
            why = f"dimension {too_large[0]} ({too_large[1]}) is larger than torch's largest size, 2**63 - 1"
        elif math.prod(shape) * size > _LARGEST:
            why = (f"its {math.prod(shape)} elements of {size} byte{'s' * (size > 1)} are more than the 2**63 - 1 "
                   "bytes a tensor can hold")  # fmt: skip
        else:
            text = str(exc).strip().splitlines()
            why = f"torch refuses it ({type(exc).__name__}: {text[0] if text else ''})"
        return f"shape {shape} cannot be built: {why}; use smaller dimensions"
    return None


def _empty(shape: list[int], dtype: torch.dtype, device: torch.device | str | None) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=device)


def make_tensor(spec: ParameterSpec | BufferSpec, *, device: torch.device | str | None = None) -> torch.Tensor:
    """The initial value of a parameter or buffer (on ``device``; ``meta`` skips the init)."""
    dtype = DTYPES[spec.dtype]
    if isinstance(spec, BufferSpec) and spec.value is not None:
        return torch.tensor(spec.value, dtype=dtype, device=device)
    if isinstance(spec, BufferSpec) and spec.data is not None:
        assert spec.shape is not None
        tensor = unpack(spec.data, spec.shape, spec.dtype)
        return tensor if device is None else tensor.to(device)
    assert spec.shape is not None
    tensor = _empty(spec.shape, dtype, device)
    if tensor.device.type == "meta":
        return tensor
    name, kwargs = init_call(spec.init)
    with torch.no_grad():
        getattr(torch.nn.init, name + "_")(tensor, **kwargs)
    return tensor
