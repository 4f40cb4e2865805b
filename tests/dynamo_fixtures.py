"""Models symbolic tracing cannot trace and TorchDynamo captures (tests/capture/test_dynamo.py),
importable by name for the ``fxgen export`` command line."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ShapeLoop(nn.Module):
    """Iterates a shape (symbolic tracing: 'Proxy object cannot be iterated')."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU()
        self.head = nn.Linear(4, 5)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 5), persistent=False)
        self.offsets = torch.arange(5.0)  # a plain tensor attribute

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.bn(self.conv(x)))
        x = self.act(x)  # the same module twice: two call_module nodes
        for size in x.shape[2:]:
            x = x / size
        return self.head(x.mean((2, 3))) * self.scale + self.offsets


class Traceable(nn.Module):
    """Symbolic tracing handles it: both captures must declare the same modules."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3)
        self.norm = nn.GroupNorm(2, 4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.gelu(self.norm(self.conv(x))).flatten(2).mean(-1))


class DictOut(nn.Module):
    """Returns a dict and a tuple; a forward keyword argument fixed while capturing."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(11, 6)
        self.proj = nn.Linear(6, 6, bias=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, scale_by_length: bool = True) -> dict:
        h = self.emb(ids) * mask[..., None]
        if scale_by_length:
            h = h / ids.shape[-1]
        return {"hidden": self.proj(h), "pair": (h.sum(-1), ids.shape[0])}


class Branchy(nn.Module):
    """Branches on a tensor's value: neither capture can take it as one graph."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # the line the error names
            return self.fc(x)
        return x


class Tied(nn.Module):
    """Tied weights, a buffer updated in training mode, a cache filled on the first call."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(7, 4)
        self.out = nn.Linear(4, 7, bias=False)
        self.out.weight = self.emb.weight
        self.bn = nn.BatchNorm1d(4)
        self.cache: dict[int, torch.Tensor] = {}

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        self.cache[len(self.cache)] = h
        h = self.bn(h.transpose(1, 2)).transpose(1, 2)
        for _ in range(ids.shape[1] // 2):
            h = h + 1
        return self.out(h)


class NoAutocast(nn.Module):
    """Runs a region with autocast disabled, as LLaMA's rotary embedding does."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type="cpu", enabled=False):
            y = x.float().cos()
        for d in x.shape[1:]:
            y = y * d
        return self.fc(y)


class Autocast(nn.Module):
    """Runs a region under bfloat16 autocast: refused (no public function enters it)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            return self.fc(x)


class Routed(nn.Module):
    """A size that depends on the data (MoE routing): Dynamo reads it with aten's size queries."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = torch.where(x[:, 0] > 0)[0]
        picked = self.fc(x[rows])
        return torch.zeros_like(x).index_add(0, rows, picked) / (picked.shape[0] + 1)


class Pair(nn.Module):
    """A leaf that returns two values; its caller uses one."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * 2, x.sum()


class UsesOne(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pair = Pair()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        doubled, _ = self.pair(x)
        for d in x.shape:
            doubled = doubled + d
        return doubled


class Stage(nn.Module):
    """A block whose forward reads its input's shape (symbolic tracing cannot iterate it)."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.norm(self.conv(x)))
        for size in x.shape[2:]:
            x = x / size
        return x


class Staged(nn.Module):
    """Stages in a Sequential, as a person writes a small encoder."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stages = nn.Sequential(Stage(3, 4), Stage(4, 8), Stage(8, 8))
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(x).mean((2, 3)))
