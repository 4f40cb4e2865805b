"""``{tuple: [...]}``: a Python tuple (a namedtuple has no encoding; a torch.Size is ``sizes``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fxgen.spec.tags.base import Tag, Writer


class Tuple(Tag):
    name = "tuple"
    holds = "list"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return tuple(value(body) if type(body) is list else (value(v) for v in body))

    def encodes(self, value: Any) -> bool:
        return isinstance(value, tuple) and not hasattr(value, "_fields") and not isinstance(value, torch.Size)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return [item(v) for v in value]

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        return type(body) is list and walk(body)

    def render(self, body: Any, out: Writer) -> str:
        items = [out.value(v) for v in body]
        return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"

    def compound(self, body: Any, inner: Callable[[Any], bool]) -> bool:
        return any(inner(v) for v in body)


TAG: Tuple = Tuple()
