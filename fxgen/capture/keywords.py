"""Keywords as torch spells them: a captured ``torch.stack(xs, axis=1)`` is written ``dim=1``.

torch's C functions accept NumPy's spellings of two keywords (``axis`` for ``dim``, ``keepdims``
for ``keepdim``), and symbolic tracing and TorchDynamo record the call as the user wrote it.
The generated file would then fail ``mypy`` (torch's stubs know only ``dim``). The rename is
made only where it cannot change the call: a torch builtin (or a C tensor method) whose ATen
overloads all take no ``axis``/``keepdims`` of their own and do take the torch keyword. Export
only: ``to_spec`` gives back a spec's own keywords unchanged.
"""

from __future__ import annotations

import functools
import types

import torch
import torch.fx

__all__ = ["torch_keywords"]


_ALIASES = {"axis": "dim", "keepdims": "keepdim"}


def torch_keywords(graph: torch.fx.Graph) -> None:
    """Rename NumPy keyword spellings of torch calls in ``graph`` to torch's own, in place."""
    for node in graph.nodes:
        if not any(key in _ALIASES for key in node.kwargs):
            continue
        name = _aten_name(node)
        if name is None:
            continue
        taken = _arguments(name)
        kwargs = dict(node.kwargs)
        for alias, real in _ALIASES.items():
            if alias in kwargs and real not in kwargs and alias not in taken and real in taken:
                kwargs = {real if key == alias else key: value for key, value in kwargs.items()}
        node.kwargs = kwargs


def _aten_name(node: torch.fx.Node) -> str | None:
    """The ATen operator a call goes to, when it is a builtin torch function or C tensor method."""
    if node.op == "call_method":
        method = getattr(torch.Tensor, str(node.target), None)
        return str(node.target) if type(method).__name__ == "method_descriptor" else None
    builtin = node.op == "call_function" and isinstance(node.target, types.BuiltinFunctionType)
    return node.target.__name__ if builtin and getattr(node.target, "__module__", None) == "torch" else None  # type: ignore[union-attr]


@functools.cache
def _arguments(name: str) -> frozenset[str]:
    """Every argument name of every overload of ``aten::name`` (empty when there is none)."""
    try:
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except RuntimeError:
        return frozenset()
    return frozenset(arg.name for schema in schemas for arg in schema.arguments)
