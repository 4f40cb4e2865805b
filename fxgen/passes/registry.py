"""The passes trusted code registers by name (``register_pass``); the built-in ones are in ``run``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch.fx

from fxgen.passes.context import PassContext

__all__ = ["PassFunction", "register_pass", "registered"]


# A pass: the GraphModule (changed in place or replaced), its arguments, the context.
PassFunction = Callable[[torch.fx.GraphModule, Mapping[str, Any], PassContext], torch.fx.GraphModule]

_REGISTERED: dict[str, PassFunction] = {}


def register_pass(name: str, function: PassFunction) -> None:
    """Make ``function`` a pass called ``name`` for ``fxgen.transform`` (and for the command line
    when ``[tool.fxgen] passes`` in pyproject.toml names it). Trusted code only: a spec can never
    register, import or enable a pass written in Python. ``function(gm, args, context)`` returns
    the GraphModule; its output is validated like any pass's."""
    from fxgen.check.checker import IDENTIFIER
    from fxgen.check.passes import BUILTIN_PASSES

    if not (isinstance(name, str) and IDENTIFIER.fullmatch(name)):
        raise ValueError(f"a pass name is an identifier, not {name!r}")
    if name in BUILTIN_PASSES:
        raise ValueError(f"{name!r} is a built-in pass; register yours under another name")
    if not callable(function):
        raise TypeError(f"a pass is a function (gm, args, context) -> gm, not {function!r}")
    _REGISTERED[name] = function


def registered() -> dict[str, PassFunction]:
    return dict(_REGISTERED)

