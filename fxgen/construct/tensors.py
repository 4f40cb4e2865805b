"""One tensor from one declaration: a parameter's or buffer's initial value.

``shape``/``dtype`` with an ``init`` scheme from the fixed table of ``fxgen.spec.init``, a literal
``value``, or packed ``data`` (``fxgen.spec.packed``), on a device (``meta`` skips the work).
"""

from __future__ import annotations

import torch

from fxgen.spec.init import init_call
from fxgen.spec.model import BufferSpec, ParameterSpec
from fxgen.spec.packed import unpack
from fxgen.spec.values import DTYPES

__all__ = ["make_tensor"]


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
    tensor = torch.empty(spec.shape, dtype=dtype, device=device)
    if tensor.device.type == "meta":
        return tensor
    name, kwargs = init_call(spec.init)
    with torch.no_grad():
        getattr(torch.nn.init, name + "_")(tensor, **kwargs)
    return tensor
