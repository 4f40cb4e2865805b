"""``decompose``: each node calling a rule's target is replaced by the rule's graph, traced in its
place with ``torch.fx.Proxy`` (the torch.fx documentation's ``relu(x) -> (x > 0) * x``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch.fx
from torch.fx.proxy import GraphAppendingTracer, Proxy

from fxgen._errors import Suggestions
from fxgen.check.passes import CheckBody, PassArguments, check_function, is_body
from fxgen.passes.bodies import body_module
from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass
from fxgen.read.yaml_events import JsonPath

__all__ = ["DECOMPOSITIONS", "PASS", "decompose"]


def _fn(name: str, body: list[dict[str, Any]], *targets: str) -> tuple[str, dict[str, Any]]:
    return name, {"targets": list(targets), "nodes": body}


def _x(*more: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"op": "placeholder", "name": "x"}, *more, {"op": "output", "args": ["%out"]}]


# The library of ``decompose`` rules: each a small graph traced in place of a node calling one of
# its targets (positional arguments first, then keywords, bound to the graph's placeholders).
DECOMPOSITIONS: dict[str, dict[str, Any]] = dict([
    _fn("relu", _x(  # relu(x) -> (x > 0) * x, the torch.fx documentation's example
        {"op": "call_function", "name": "positive", "target": "operator.gt", "args": ["%x", 0]},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%positive", "%x"]},
    ), "torch.relu", "torch.nn.functional.relu"),
    _fn("relu6", _x(  # relu6(x) -> clamp(x, 0, 6)
        {"op": "call_function", "name": "out", "target": "torch.clamp", "args": ["%x", 0.0, 6.0]},
    ), "torch.nn.functional.relu6"),
    _fn("silu", _x(  # silu(x) -> x * sigmoid(x)
        {"op": "call_function", "name": "gate", "target": "torch.sigmoid", "args": ["%x"]},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%x", "%gate"]},
    ), "torch.nn.functional.silu"),
    _fn("hardsigmoid", _x(  # hardsigmoid(x) -> clamp(x + 3, 0, 6) / 6
        {"op": "call_function", "name": "shifted", "target": "operator.add", "args": ["%x", 3.0]},
        {"op": "call_function", "name": "clamped", "target": "torch.clamp", "args": ["%shifted", 0.0, 6.0]},
        {"op": "call_function", "name": "out", "target": "operator.truediv", "args": ["%clamped", 6.0]},
    ), "torch.nn.functional.hardsigmoid"),
    _fn("hardswish", _x(  # hardswish(x) -> x * clamp(x + 3, 0, 6) / 6
        {"op": "call_function", "name": "shifted", "target": "operator.add", "args": ["%x", 3.0]},
        {"op": "call_function", "name": "clamped", "target": "torch.clamp", "args": ["%shifted", 0.0, 6.0]},
        {"op": "call_function", "name": "scaled", "target": "operator.mul", "args": ["%x", "%clamped"]},
        {"op": "call_function", "name": "out", "target": "operator.truediv", "args": ["%scaled", 6.0]},
    ), "torch.nn.functional.hardswish"),
    _fn("mish", _x(  # mish(x) -> x * tanh(softplus(x))
        {"op": "call_function", "name": "soft", "target": "torch.nn.functional.softplus", "args": ["%x"]},
        {"op": "call_function", "name": "squashed", "target": "torch.tanh", "args": ["%soft"]},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%x", "%squashed"]},
    ), "torch.nn.functional.mish"),
])  # fmt: skip



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


def _check(checker: Any, at: JsonPath, args: Mapping[str, Any], body: CheckBody | None) -> None:
    if "rules" in args:
        _check_rules(checker, (*at, "rules"), args["rules"], body)


def _check_rules(checker: Any, at: JsonPath, rules: Any, body: CheckBody | None) -> None:
    if not isinstance(rules, list) or not rules:
        checker.error(at, "decompose: `rules` is a non-empty list of library rule names "
                      f"({', '.join(DECOMPOSITIONS)}) or `{{targets: [...], nodes: [...]}}` rules")  # fmt: skip
        return
    library = Suggestions(DECOMPOSITIONS)
    for j, rule in enumerate(rules):
        here: JsonPath = (*at, j)
        if isinstance(rule, str):
            if rule not in DECOMPOSITIONS:
                near = library.closest(rule)
                hint = f"did you mean {near!r}? " if near else ""
                checker.error(here, f"decompose: no library rule {rule!r}; {hint}the library has "
                              f"{', '.join(DECOMPOSITIONS)}")  # fmt: skip
            continue
        if not (isinstance(rule, dict) and set(rule) == {"targets", "nodes"}):
            checker.error(here, "decompose: a rule is a library rule's name or `{targets: [FUNCTION, ...], "
                          "nodes: [...]}`")  # fmt: skip
            continue
        targets = rule["targets"]
        if not isinstance(targets, list) or not targets:
            checker.error((*here, "targets"), "decompose: `targets` is a non-empty list of function names")
        else:
            for k, target in enumerate(targets):
                check_function(checker, (*here, "targets", k), target, "decompose")
        if is_body(checker, here, {"nodes": rule["nodes"]}) and body is not None:
            body(here, {"nodes": rule["nodes"]})


PASS = BuiltinPass("decompose", decompose, PassArguments(frozenset({"rules"}), frozenset({"rules"}), _check))
