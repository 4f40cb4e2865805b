"""``replace``: every call of one function becomes a call of another (the torch.fx documentation's
first example, ``torch.add`` -> ``torch.mul``). Both are resolved by the target policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.fx

from fxgen.check.passes import CheckBody, PassArguments, check_function
from fxgen.construct.graph import TARGET_KEY
from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass
from fxgen.read.yaml_events import JsonPath

__all__ = ["PASS", "replace"]


def replace(gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext) -> torch.fx.GraphModule:
    old = context.policy.resolve_function(args["target"])
    new = context.policy.resolve_function(args["by"])
    replaced = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is old:
            node.target = new
            node.meta[TARGET_KEY] = args["by"]
            replaced.append(node.name)
    gm.recompile()
    context.note(f"replace: {args['target']} -> {args['by']} in {len(replaced)} node{'s' * (len(replaced) != 1)}"
                 + (f" ({', '.join(replaced)})" if replaced else ""))  # fmt: skip
    return gm


def _check(checker: Any, at: JsonPath, args: Mapping[str, Any], body: CheckBody | None) -> None:
    for key in ("target", "by"):
        if key in args:
            check_function(checker, (*at, key), args[key], "replace")


PASS = BuiltinPass("replace", replace, PassArguments(frozenset({"target", "by"}), frozenset({"target", "by"}), _check))
