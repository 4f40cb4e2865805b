"""Ten-line modules, each a class of model that export must reproduce exactly (tests/test_exactness.py)."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from shadowpkg import Scale
from torch import nn


class Unsaved(nn.Module):
    """Tensors the checkpoint does not carry: a non-persistent buffer and a plain attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("idx", torch.arange(4).flip(0), persistent=False)
        self.table = torch.tensor([1.0, 2.0, 3.0, 4.0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)[:, self.idx] * self.table


class Constants(nn.Module):
    """Tensors torch.fx turns into ``_tensor_constantN``, small and large, of awkward dtypes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.tables = [torch.randn(300, 4).to(torch.bfloat16), torch.tensor([float("nan"), -0.0, 1.5, float("inf")])]
        self.mask = [torch.rand(4, 4) > 0.5]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = (self.lin(x).to(torch.bfloat16) @ self.tables[0].T).float()[:, :4]
        y = y.masked_fill(self.mask[0][:3], 0.0)
        return y + self.tables[1]


class RotaryLike(nn.Module):
    """A large non-persistent buffer (rotary frequencies), a complex one and an integer table."""

    def __init__(self) -> None:
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))
        freqs = torch.outer(torch.arange(64).float(), inv)
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("cis", torch.polar(torch.ones_like(freqs), freqs), persistent=False)
        self.register_buffer("index", torch.randperm(64).view(8, 8), persistent=False)
        self.register_buffer("flags", torch.rand(8) > 0.3, persistent=False)
        self.register_buffer("halves", torch.randn(5).half(), persistent=False)
        self.register_buffer("scalar", torch.tensor(2.5), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.sum()  # a traced value first: each buffer below is then read by its get_attr
        parts = [s * self.cos, (s * self.cis).real, s * self.index, s * self.flags, s * self.halves, s * self.scalar]
        return x + sum(p.sum() for p in parts)


class FunctionalNorm(nn.Module):
    """A batch norm run as F.batch_norm on a submodule's tensors: num_batches_tracked is never read,
    and a head the forward never uses."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 3)
        self.spare = nn.ModuleList([nn.LayerNorm(4), nn.Identity()])
        self.register_buffer("unused_stat", torch.ones(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.1, bn.eps)


class OddNames(nn.Module):
    """Attribute names that are not identifiers: real checkpoints carry keys like these."""

    def __init__(self) -> None:
        super().__init__()
        self.seq = nn.Sequential(OrderedDict([("block1-0", nn.Linear(4, 4)), ("act fn", nn.ReLU()),
                                              ("class", nn.Linear(4, 4))]))  # fmt: skip
        self.cells = nn.ModuleDict({"(0, 0)": nn.Linear(4, 4), 'q"uote\\': nn.Linear(4, 4), "01": nn.Tanh()})
        self.register_buffer("ünï", torch.ones(4))
        self.register_parameter("w eight", nn.Parameter(torch.randn(4)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.seq(x) * getattr(self, "w eight") + self.ünï
        for cell in self.cells.values():
            y = cell(y)
        return y


class Shadowed(nn.Module):
    """Calls a wrapped function whose package re-exports it under its own module's name."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = Scale(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale(self.lin(x))


class Cached(nn.Module):
    """A forward that caches a value on first call, as attention-bias caches do."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.cache: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if "bias" not in self.cache:
            self.cache["bias"] = self.lin.weight.sum(0)
        return self.lin(x) + self.cache["bias"]


class Bookkept(nn.Module):
    """Modules a framework marked after construction (Hugging Face's ``_is_hf_initialized``)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.norm = nn.LayerNorm(4)
        for module in self.modules():
            module._is_hf_initialized = True

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.norm(self.emb(ids))


class HiddenCache(nn.Module):
    """A cache kept on a plain object, which export does not look into."""

    def __init__(self, *, mix: bool) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.store = SimpleNamespace(bias=None)
        self.mix = mix

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.store.bias is None:
            self.store.bias = self.lin.weight.sum(0)
        return self.lin(x) + self.store.bias if self.mix else self.store.bias * 2


class WeightNormed(nn.Module):
    """A parametrized layer: its state dict holds the parametrization's tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3, padding=1), dim=2)
        self.lin = nn.Linear(5, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(self.conv(x))
