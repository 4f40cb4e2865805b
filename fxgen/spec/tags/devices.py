"""``{device: cuda:0}``: a torch.device (checked against torch's device types, never by running one)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from fxgen.spec.tags.base import Tag, Writer

_DEVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?::(?:0|[1-9][0-9]*))?")


class Device(Tag):
    name = "device"

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return torch.device(body)

    def encodes(self, value: Any) -> bool:
        return isinstance(value, torch.device)

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return str(value)

    def problem(self, body: Any) -> str | None:
        if not _DEVICE.fullmatch(body):
            problem = "a device is a type with an optional index"
        else:
            try:
                torch.device(body)
                return None
            except RuntimeError:
                problem = f"unknown device type {body.partition(':')[0]!r}"
        return f"invalid device {body!r}: {problem}; write a device such as cpu, cuda:0 or meta"

    def render(self, body: Any, out: Writer) -> str:
        out.module("torch")
        return f"torch.device({out.string(body)})"


TAG: Device = Device()
