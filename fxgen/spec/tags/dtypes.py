"""``{dtype: float32}``: a torch.dtype, from the fixed table of the dtypes a spec may name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fxgen.spec.tags.base import Named, UnencodableValue

DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in ["float16", "float32", "float64", "bfloat16", "complex64", "complex128", "int8", "int16", "int32", "int64", "uint8", "bool"]
}


class Dtype(Named):
    name = "dtype"
    table = DTYPES
    kind = torch.dtype

    def encodes(self, value: Any) -> bool:
        return isinstance(value, torch.dtype)  # an exotic dtype is reported by encode

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return dtype_name(value)


def dtype_name(dtype: torch.dtype) -> str:
    """The spec's name of a dtype (raises UnencodableValue for exotic dtypes)."""
    try:
        return TAG.names[dtype]
    except KeyError:
        raise UnencodableValue(
            f"dtype {dtype} is not supported by the spec format (supported: {', '.join(DTYPES)})"
        ) from None


TAG: Dtype = Dtype()
