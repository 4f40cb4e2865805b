"""``{memory_format: channels_last}``: a torch.memory_format, from a fixed table."""

from __future__ import annotations

import torch

from fxgen.spec.tags.base import Named

MEMORY_FORMATS: dict[str, torch.memory_format] = {
    name: getattr(torch, name)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
}


class MemoryFormat(Named):
    name = "memory_format"
    table = MEMORY_FORMATS
    kind = torch.memory_format


TAG: MemoryFormat = MemoryFormat()
