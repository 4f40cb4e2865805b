"""``{dict: {name: value}}``: a Python dict with string keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fxgen.spec.tags.base import Tag, Writer


class Dict(Tag):
    name = "dict"
    holds = "mapping"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return {k: value(v) for k, v in body.items()}

    def encodes(self, value: Any) -> bool:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return {str.__str__(k): item(v) for k, v in value.items()}

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        # validation reads a one-key {size: ...} mapping anywhere as a torch.Size tag
        if type(body) is not dict or list(body) == ["size"]:
            return False
        return all(type(k) is str and walk(v) for k, v in body.items())

    def render(self, body: Any, out: Writer) -> str:
        return "{" + ", ".join(f"{out.string(k)}: {out.value(v)}" for k, v in body.items()) + "}"

    def compound(self, body: Any, inner: Callable[[Any], bool]) -> bool:
        return any(inner(v) for v in body.values())


TAG: Dict = Dict()
