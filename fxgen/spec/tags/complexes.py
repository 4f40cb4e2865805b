"""``{complex: [real, imag]}``: a complex number with finite parts."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fxgen.spec.tags.base import Tag, Writer


class Complex(Tag):
    name = "complex"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        try:
            return complex(float(body[0]), float(body[1]))
        except OverflowError:  # an integer part beyond a float's range
            raise ValueError(f"complex part too large for a float in {body!r}; use parts below 1.8e308") from None

    def encodes(self, value: Any) -> bool:
        return isinstance(value, complex) and math.isfinite(value.real) and math.isfinite(value.imag)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return [float(value.real), float(value.imag)]

    def render(self, body: Any, out: Writer) -> str:
        return f"complex({out.number(body[0])}, {out.number(body[1])})"


TAG: Complex = Complex()
