"""``scale`` is kept as one call in traced graphs (torch.fx.wrap), like torchvision's stochastic_depth."""

from __future__ import annotations

import torch
import torch.fx
from torch import nn


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Multiply by ``factor``; branches on a Python value, as wrapped functions often do."""
    if factor == 1.0:
        return x
    return x * factor


torch.fx.wrap("scale")


class Scale(nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale(x, self.factor)
