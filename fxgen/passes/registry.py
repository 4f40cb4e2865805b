"""The catalogue of passes: the built-in ones (each a module of this package declaring ``PASS``)
and those trusted code registers by name (``register_pass``).

A built-in pass is one module: its function, its name and what arguments it takes
(``BuiltinPass``). ``builtin_passes`` finds them by walking this package, so adding one touches
that module alone (plus the schema's and the docs' words about it); ``pass_arguments`` is the
part of the catalogue the check stage is handed (``fxgen.check.passes.Catalogue``).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch.fx

from fxgen.check.passes import PassArguments
from fxgen.passes.context import PassContext

__all__ = ["BuiltinPass", "PassFunction", "builtin_passes", "pass_arguments", "register_pass", "registered"]


# A pass: the GraphModule (changed in place or replaced), its arguments, the context.
PassFunction = Callable[[torch.fx.GraphModule, Mapping[str, Any], PassContext], torch.fx.GraphModule]

_REGISTERED: dict[str, PassFunction] = {}


@dataclass(frozen=True)
class BuiltinPass:
    """A built-in pass, as its module declares it (``PASS = BuiltinPass(...)``)."""

    name: str
    function: PassFunction
    arguments: PassArguments = field(default_factory=PassArguments)


@functools.cache
def builtin_passes() -> dict[str, BuiltinPass]:
    """Every module of this package that declares ``PASS``, by the pass's name (sorted)."""
    found: dict[str, BuiltinPass] = {}
    package = importlib.import_module(__package__ or "fxgen.passes")
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        declared = getattr(module, "PASS", None)
        if isinstance(declared, BuiltinPass):
            if declared.name in found:
                raise RuntimeError(f"two built-in passes are called {declared.name!r}")
            found[declared.name] = declared
    return dict(sorted(found.items()))


def pass_arguments() -> Mapping[str, PassArguments]:
    """What each built-in pass takes, by name: the catalogue the check stage is handed."""
    return {name: declared.arguments for name, declared in builtin_passes().items()}


def register_pass(name: str, function: PassFunction) -> None:
    """Make ``function`` a pass called ``name`` for ``fxgen.transform`` (and for the command line
    when ``[tool.fxgen] passes`` in pyproject.toml names it). Trusted code only: a spec can never
    register, import or enable a pass written in Python. ``function(gm, args, context)`` returns
    the GraphModule; its output is validated like any pass's."""
    from fxgen.check.checker import IDENTIFIER

    if not (isinstance(name, str) and IDENTIFIER.fullmatch(name)):
        raise ValueError(f"a pass name is an identifier, not {name!r}")
    if name in builtin_passes():
        raise ValueError(f"{name!r} is a built-in pass; register yours under another name")
    if not callable(function):
        raise TypeError(f"a pass is a function (gm, args, context) -> gm, not {function!r}")
    _REGISTERED[name] = function


def registered() -> dict[str, PassFunction]:
    return dict(_REGISTERED)
