"""``{size: [2, 3]}``: a torch.Size (integer entries; the schema allows any number, the check says so)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fxgen.spec.tags.base import Tag, Writer


class Size(Tag):
    name = "size"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return torch.Size(body)

    def encodes(self, value: Any) -> bool:
        return isinstance(value, torch.Size)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return [int(d) for d in value]

    def problem(self, body: Any) -> str | None:
        if all(isinstance(d, int) for d in body):
            return None
        return "torch.Size entries are integers; write 4, not 4.0"

    def render(self, body: Any, out: Writer) -> str:
        out.module("torch")
        return "torch.Size([" + ", ".join(out.number(d) for d in body) + "])"


TAG: Size = Size()
