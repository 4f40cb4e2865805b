"""``{slice: [start, stop, step]}``: a Python slice (codegen writes ``a:b`` syntax inside an index)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fxgen.spec.tags.base import Tag, Writer


class Slice(Tag):
    name = "slice"
    holds = "list"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return slice(*(value(body) if type(body) is list else (value(v) for v in body)))

    def encodes(self, value: Any) -> bool:
        return isinstance(value, slice)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return [item(v) for v in (value.start, value.stop, value.step)]

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        return type(body) is list and len(body) == 3 and walk(body)

    def render(self, body: Any, out: Writer) -> str:
        return "slice(" + ", ".join(out.value(v) for v in body) + ")"


TAG: Slice = Slice()
