"""``decompose``: each node calling a rule's target is replaced by the rule's graph, traced in its
place with ``torch.fx.Proxy`` (the torch.fx documentation's ``relu(x) -> (x > 0) * x``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch.fx
from torch.fx.proxy import GraphAppendingTracer, Proxy

from fxgen.check.passes import DECOMPOSITIONS
from fxgen.passes.bodies import body_module
from fxgen.passes.context import PassContext

__all__ = ["decompose"]


def decompose(gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext) -> torch.fx.GraphModule:
    rules: list[tuple[str, list[Any], torch.fx.GraphModule]] = []
    for i, rule in enumerate(args["rules"]):
        body = DECOMPOSITIONS[rule] if isinstance(rule, str) else rule
        targets = [context.policy.resolve_function(t) for t in body["targets"]]
        label = rule if isinstance(rule, str) else f"rule {i}"
        rules.append((label, targets, body_module(body, context.policy, "Rule")))
    graph = gm.graph
    tracer = GraphAppendingTracer(graph)
    done: dict[str, list[str]] = {}
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        for label, targets, rule in rules:
            if not any(node.target is t for t in targets):
                continue
            try:
                bound = inspect.signature(rule.forward).bind(*node.args, **node.kwargs)
            except TypeError as exc:
                context.note(f"decompose: {label} does not take the arguments of node {node.name!r} ({exc}); "
                             "left as it is", context.locate_node(node.name))  # fmt: skip
                break

            def proxy(value: Any) -> Any:
                wrap: Any = lambda arg: Proxy(arg, tracer)  # noqa: E731
                return torch.fx.node.map_arg(value, wrap)

            before = set(graph.nodes)
            with graph.inserting_before(node):
                result = rule(*proxy(bound.args), **proxy(bound.kwargs))
            _name_after(node, [made for made in graph.nodes if made not in before], rule)
            if not isinstance(result, Proxy):
                context.note(f"decompose: {label} computes a constant from node {node.name!r}'s arguments; "
                             "left as it is", context.locate_node(node.name))  # fmt: skip
                break
            node.replace_all_uses_with(result.node)
            graph.erase_node(node)
            done.setdefault(label, []).append(node.name)
            break
    gm.recompile()
    for label, names in done.items():
        context.note(f"decompose: {label} in {', '.join(names)}")
    if not done:
        context.note("decompose: no node calls a rule's target")
    return gm


def _name_after(node: torch.fx.Node, made: list[torch.fx.Node], rule: torch.fx.GraphModule) -> None:
    """Name what a rule made after the node it replaces and the rule's own names (``r_positive``,
    ``r_out`` for ``r = torch.relu(b)``), when it made one node per node of the rule's graph."""
    steps = [n for n in rule.graph.nodes if n.op not in ("placeholder", "output")]
    if len(steps) != len(made):
        return
    for new, step in zip(made, steps, strict=True):
        new._rename(f"{node.name}_{step.name}")
