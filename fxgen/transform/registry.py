"""The passes by name: the built-in ones, and those trusted code registers (``register_pass``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch.fx

from fxgen._errors import Location
from fxgen.policy.policy import Policy
from fxgen.spec.model import Spec

__all__ = ["PassContext", "PassFunction", "builtin", "register_pass", "registered"]


@dataclass
class PassContext:
    """What a pass may consult besides the GraphModule: the target policy, the spec it came from
    (to locate what it reports), where the pass was named, and the notes it reports."""

    policy: Policy
    spec: Spec
    where: Location
    notes: list[str] = field(default_factory=list)

    def note(self, message: str, location: Location | None = None) -> None:
        self.notes.append(f"{location or self.where}: note: {message}")

    def locate_node(self, name: str) -> Location:
        """Where the spec declares the node ``name`` (the pass's own place for a node it made)."""
        for i, node in enumerate(self.spec.nodes):
            if node.name == name:
                return self.spec.locate(("nodes", i))
        return self.where


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


def builtin(name: str) -> PassFunction:
    from fxgen.transform import dead_code, decompose, fold_constants, fuse_conv_bn, replace, rewrite

    return {
        "replace": replace.replace,
        "rewrite": rewrite.rewrite,
        "decompose": decompose.decompose,
        "fuse_conv_bn": fuse_conv_bn.fuse_conv_bn,
        "eliminate_dead_code": dead_code.eliminate_dead_code,
        "fold_constants": fold_constants.fold_constants,
    }[name]
