"""Modules for the export tests, importable by qualified name (as generated code requires)."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn


def clamp_unit(x: torch.Tensor) -> torch.Tensor:
    """A user function kept as one call in the graph (torch.fx.wrap below)."""
    return x.clamp(-1.0, 1.0)


torch.fx.wrap("clamp_unit")
torch.fx.wrap("len")


class Everything(nn.Module):
    """Uses every value encoding export writes: tuples, lists, slices, ellipsis, None, dtypes,
    devices, memory formats, inf, getattr, tensor constants small and large, wrapped functions."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.norm = nn.BatchNorm2d(8)
        self.proj = nn.Linear(8, 4)
        self.scale = nn.Parameter(torch.ones(8))
        self.frozen = nn.Parameter(torch.full((4,), 0.5), requires_grad=False)
        self.register_buffer("offset", torch.arange(4, dtype=torch.float32))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x: torch.Tensor, gain: float = 2.0) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.norm(self.conv(x)) + self.scratch.sum()
        y = y * self.scale.view(1, -1, 1, 1)
        y = y[:, :, 1:-1, ::2]
        y = y.contiguous(memory_format=torch.channels_last)
        pooled = F.adaptive_avg_pool2d(y, (1, 1)).flatten(1)
        z = self.proj(pooled) + self.offset + self.frozen
        z = clamp_unit(z * gain)
        n = len(x)
        w = z[..., None].to(torch.float64).sum(dim=-1) / math.sqrt(n)
        small = torch.tensor([1.0, 2.0, 3.0, 4.0])
        large = torch.linspace(0, 1, 108)
        shape = x.shape
        extra = (x.flatten(1) * large).sum()
        w = (w.float() + small + extra).reshape(shape[0], -1)
        w = torch.clamp(w, min=-math.inf, max=1e6) * n
        return w, torch.zeros_like(w, device="cpu", dtype=torch.float32)


class Branchy(nn.Module):
    """Dynamic control flow: torch.fx cannot trace it without concrete_args."""

    def forward(self, x: torch.Tensor, flag: bool = True) -> torch.Tensor:
        if flag:
            return x + 1
        return x - 1


class OptionalInputs(nn.Module):
    """Arguments fixed with concrete_args ahead of one that is not: torch.fx puts each one's
    check (``torch._assert``, ``_assert_is_none``) before the next placeholder."""

    def forward(
        self, x: torch.Tensor, flag: bool = False, mask: torch.Tensor | None = None, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        if flag:
            x = x * 2
        if mask is not None:
            x = x * mask
        return x if bias is None else x + bias


class TiedLM(nn.Module):
    """A language-model head sharing the embedding's weight (weight tying)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.head = nn.Linear(8, 20, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.emb(tokens)))


class DataDependent(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x
        return -x


class Swish(nn.Module):
    """A user layer traced as a leaf, recovered through fxgen.register_constructor."""

    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x)


class WithLeaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = Swish(beta=1.5)
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4, bias=False)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = self.act(block(x))
        return self.fc(x)


def make_with_leaf() -> nn.Module:
    """A function returning a module, for `fxgen export tests.export_fixtures:make_with_leaf`."""
    torch.manual_seed(0)
    return WithLeaf()


def triple(x: torch.Tensor) -> torch.Tensor:
    """Traced through by default; kept as one call with autowrap_functions=[triple]."""
    return x * 3


class UsesTriple(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triple(x) + 1


class Embed(nn.Module):
    """Embeddings with a non-persistent buffer the block itself never reads (its parent does, as
    Hugging Face's models read their embeddings' ``token_type_ids``)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.register_buffer("ids", torch.arange(8) % 3, persistent=False)

    def forward(self, x: torch.Tensor, kinds: torch.Tensor) -> torch.Tensor:
        return self.emb(x) + kinds.unsqueeze(-1)


class FrozenStem(nn.Module):
    """Runs its stem without gradients: export refuses the region (a spec has none)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            x = self.stem(x)
        return self.head(x)


calls = {"count": 0}  # module-global state a forward reads


class ReadsCount(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + calls["count"]


class RunsModulesItself(torch.fx.Tracer):
    """A tracer that runs a container's forward itself, without ``Tracer.call_module`` (which
    records the call in ``nn_module_stack``)."""

    def call_module(self, m: nn.Module, forward: Any, args: Any, kwargs: Any) -> Any:
        path = self.path_of_module(m)
        if self.is_leaf_module(m, path):
            return self.create_proxy("call_module", path, args, kwargs)
        return forward(*args, **kwargs)
