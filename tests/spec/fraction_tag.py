"""A toy value tag that exists in the tests only: ``{fraction: [1, 3]}`` is ``fractions.Fraction(1, 3)``.

Everything fxgen needs to know of it is this one module (tests/spec/test_tags.py registers it
at test time and round-trips it through decode, encode and rendering): the proof that adding a
tag touches one module (plus the schema's enum and the docs, for specs on disk).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction as _Fraction
from typing import Any

from fxgen.spec.tags.base import Tag, Writer


class Fraction(Tag):
    name = "fraction"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return _Fraction(body[0], body[1])

    def encodes(self, value: Any) -> bool:
        return isinstance(value, _Fraction)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return [value.numerator, value.denominator]

    def render(self, body: Any, out: Writer) -> str:
        out.module("fractions")
        return f"fractions.Fraction({out.number(body[0])}, {out.number(body[1])})"


TAG = Fraction()
