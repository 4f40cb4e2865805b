"""Nodes -> a ``torch.fx.Graph``: the one place a spec's nodes become torch.fx nodes.

``build_graph`` creates each node with ``Graph.create_node``, resolving call targets and types
through the target policy, and records how the spec spelled each function (``TARGET_KEY`` in
``node.meta``: ``F.conv2d`` is ``torch.conv2d``) so ``to_spec`` gives it back. Validation uses it
on its own (to find names torch.fx would rename), and the assemble stage to make GraphModules.
Importing this module installs the torch.fx path fix (``fxgen.construct.fx_fixes``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from fxgen._errors import SpecError
from fxgen.construct import fx_fixes  # noqa: F401  (torch.fx must quote every path it writes)
from fxgen.policy.policy import DEFAULT_POLICY, Policy
from fxgen.spec.model import NO_DEFAULT, Spec, plain_nodes
from fxgen.spec.values import decode, decode_kwargs

__all__ = ["TARGET_KEY", "build_graph"]


TARGET_KEY = "fxgen_target"


def build_graph(spec: Spec, policy: Policy = DEFAULT_POLICY) -> torch.fx.Graph:
    """The spec's nodes as a torch.fx Graph (no module attached)."""
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    for index, node in enumerate(plain_nodes(spec.nodes)):
        kwargs = decode_kwargs(node.kwargs, env.__getitem__)
        args: tuple[Any, ...] = tuple(decode(node.args, env.__getitem__))
        type_expr = policy.resolve_type(node.type)[0] if node.type is not None else None
        if node.op == "placeholder":
            target: Any = node.name
            if node.default is not NO_DEFAULT:
                args = (decode(node.default, env.__getitem__),)
        elif node.op == "output":
            target = "output"
        elif node.op == "call_function":
            assert node.target is not None
            target = policy.resolve_function(node.target)
        else:
            target = node.target
        created = graph.create_node(node.op, target, args, kwargs, name=node.name, type_expr=type_expr)
        if node.name is not None and created.name != node.name:
            error = SpecError.at(
                spec.locate(("nodes", index, "name")),
                f"node name {node.name!r} was already taken by an earlier unnamed node; "
                "give that node an explicit name",
            )
            error.index = index  # type: ignore[attr-defined]  # which node: a resolved graph's caller locates it
            raise error
        if node.op == "call_function":
            created.meta[TARGET_KEY] = node.target  # the spelling, for to_spec (F.conv2d is torch.conv2d)
        env[created.name] = created
    return graph
