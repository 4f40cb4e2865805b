"""Constructor recovery for popular third-party layers, registered only when one is met.

Nothing here imports the third-party package: a recovery is registered the first time export
meets an instance of the class (by its module and name).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["register_known"]


Constructor = tuple[tuple[Any, ...], dict[str, Any]]


def _einops_rearrange(module: Any) -> Constructor:
    return (module.pattern,), dict(module.axes_lengths)


def _einops_reduce(module: Any) -> Constructor:
    return (module.pattern, module.reduction), dict(module.axes_lengths)


_KNOWN: dict[tuple[str, str], Callable[[Any], Constructor]] = {
    ("einops.layers.torch", "Rearrange"): _einops_rearrange,
    ("einops.layers.torch", "Reduce"): _einops_reduce,
}


def register_known(cls: type[torch.nn.Module]) -> None:
    """Register fxgen's recovery for ``cls`` if it is a known third-party layer."""
    recover = _KNOWN.get((cls.__module__, cls.__qualname__))
    if recover is not None:
        from fxgen.describe.recover import register_constructor

        register_constructor(cls, recover)
