"""``fold_constants``: what the graph computes from the spec's own constant tensors alone (buffers
declared by value or packed data, and literals) is computed once, by torch.fx's ``Interpreter``,
and kept as a buffer declared with its value. Parameters, initialised buffers, random functions
and impure nodes are never folded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.fx

from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass

__all__ = ["PASS", "fold_constants"]

# Functions and methods whose result is not a function of their arguments.
_RANDOM = ("rand", "bernoulli", "normal", "poisson", "multinomial", "dropout", "uniform", "exponential",
           "cauchy", "geometric", "log_normal", "random", "empty")  # fmt: skip


def fold_constants(
    gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext
) -> torch.fx.GraphModule:
    constant_tensors = {path for path, b in context.spec.buffers.items() if b.value is not None or b.data is not None}
    constant: set[torch.fx.Node] = set()
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            if str(node.target) in constant_tensors:
                constant.add(node)
        elif node.op in ("call_function", "call_method") and not node.is_impure():
            name = getattr(node.target, "__name__", str(node.target))
            inputs = node.all_input_nodes
            if inputs and all(n in constant for n in inputs) and not any(r in name for r in _RANDOM):
                constant.add(node)
    # fold the constant nodes that something else reads (the edge of the constant part)
    edge = [n for n in gm.graph.nodes if n in constant and n.op != "get_attr" and any(u not in constant for u in n.users)]
    interpreter = torch.fx.Interpreter(gm)
    env: dict[torch.fx.Node, Any] = {}
    with torch.no_grad():
        for node in gm.graph.nodes:
            if node in constant:
                interpreter.env = env
                env[node] = interpreter.run_node(node)
    folded = []
    taken = set(dict(gm.named_buffers())) | set(dict(gm.named_parameters())) | set(dict(gm.named_modules()))
    for node in edge:
        value = env[node]
        if not isinstance(value, torch.Tensor):
            continue
        path = f"folded_{node.name}"
        while path in taken:
            path += "_"
        taken.add(path)
        gm.register_buffer(path, value.detach().clone(), persistent=False)  # its value goes in the spec
        with gm.graph.inserting_before(node):
            attr = gm.graph.get_attr(path)
        node.replace_all_uses_with(attr)
        folded.append(node.name)
    for node in reversed(list(gm.graph.nodes)):  # the constant part nothing reads any more
        if node in constant and not node.users:
            gm.graph.erase_node(node)
    gm.recompile()
    context.note(f"fold_constants: computed {len(folded)} value{'s' * (len(folded) != 1)} ahead"
                 + (f" ({', '.join(folded)})" if folded else ""))  # fmt: skip
    return gm


PASS = BuiltinPass("fold_constants", fold_constants)
