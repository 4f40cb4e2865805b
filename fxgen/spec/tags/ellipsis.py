"""``{ellipsis: null}``: Python's ``...``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fxgen.spec.tags.base import Tag, Writer


class Ellipsis_(Tag):
    name = "ellipsis"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return Ellipsis

    def encodes(self, value: Any) -> bool:
        return value is Ellipsis

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return None

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        return body is None

    def render(self, body: Any, out: Writer) -> str:
        return "..."

    def compound(self, body: Any, inner: Callable[[Any], bool]) -> bool:
        return False


TAG: Ellipsis_ = Ellipsis_()
