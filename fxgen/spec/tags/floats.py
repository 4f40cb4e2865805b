"""``{float: inf}``: the non-finite floats (``inf``, ``-inf``, ``nan``); finite ones are plain numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fxgen.spec.tags.base import Tag, Writer

FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_SOURCE = {"inf": 'float("inf")', "-inf": '-float("inf")', "nan": 'float("nan")'}


class Float(Tag):
    name = "float"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return FLOATS[body]

    def encodes(self, value: Any) -> bool:
        return isinstance(value, float) and not math.isfinite(value)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        return type(body) is str and body in FLOATS

    def render(self, body: Any, out: Writer) -> str:
        return _SOURCE[body]

    def negative(self, body: Any) -> bool:
        return body == "-inf"


TAG: Float = Float()
