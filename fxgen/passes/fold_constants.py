"""``fold_constants``: what the graph computes from the spec's own constant tensors alone (buffers
declared by value or packed data, and literals) is computed once, by torch.fx's ``Interpreter``,
and kept as a buffer declared with its value. Parameters, initialised buffers, random functions
and impure nodes are never folded.

The spec chooses what the constant part computes (``c.expand(10**9).contiguous()`` is one node), so
the fold is first run on meta tensors, which hold shapes and no data: what it would read and write
(``FOLD_BYTES``) and its floating-point operations (``FOLD_FLOPS``, as ``FlopCounterMode`` counts
them) are added up, and a fold beyond either is a located error before anything is computed. A
node whose result meta tensors cannot tell (one that depends on the data: ``nonzero``, ``item``)
is left to run time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_leaves, tree_map
from torch.utils.flop_counter import FlopCounterMode

from fxgen._errors import SpecError
from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass
from fxgen.spec.packed import PACKED_LIMIT

__all__ = ["FOLD_BYTES", "FOLD_FLOPS", "PASS", "fold_constants"]

FOLD_BYTES = PACKED_LIMIT  # tensor bytes a fold reads and writes, all nodes told: the largest tensor a spec may hold
FOLD_FLOPS = 2**32  # floating-point operations a fold computes (a 1024 x 1024 matmul is 2**31): about a second

# Functions and methods whose result is not a function of their arguments.
_RANDOM = ("rand", "bernoulli", "normal", "poisson", "multinomial", "dropout", "uniform", "exponential",
           "cauchy", "geometric", "log_normal", "random", "empty")  # fmt: skip


def fold_constants(
    gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext
) -> torch.fx.GraphModule:
    constant_tensors = {path for path, b in context.spec.buffers.items() if b.value is not None or b.data is not None}
    constant = _constant_part(gm, constant_tensors, context)
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


def _constant_part(gm: torch.fx.GraphModule, tensors: set[str], context: PassContext) -> set[torch.fx.Node]:
    """The nodes computed from the constant ``tensors`` alone, each run on meta tensors first: a
    SpecError at the node that takes the fold beyond ``FOLD_BYTES`` or ``FOLD_FLOPS``."""
    constant: set[torch.fx.Node] = set()
    shapes: dict[torch.fx.Node, Any] = {}  # node -> its value with meta tensors in place of tensors
    interpreter = torch.fx.Interpreter(gm)
    read_written = flops = 0
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            if str(node.target) in tensors:
                constant.add(node)
                shapes[node] = interpreter.fetch_attr(str(node.target)).to("meta")
            continue
        if node.op not in ("call_function", "call_method") or node.is_impure():
            continue
        name = getattr(node.target, "__name__", str(node.target))
        inputs = node.all_input_nodes
        if not inputs or not all(n in constant for n in inputs) or any(r in name for r in _RANDOM):
            continue
        interpreter.env = shapes
        try:
            with FlopCounterMode(display=False) as counter, torch.no_grad():
                shapes[node] = tree_map(_on_meta, interpreter.run_node(node))
        except Exception:  # a result that depends on the data: left to run time
            continue
        read_written += sum(_bytes(shapes[n]) for n in inputs) + _bytes(shapes[node])
        flops += counter.get_total_flops()
        for total, limit, cap, what in ((read_written, FOLD_BYTES, "FOLD_BYTES", "reads and writes {:,} bytes"),
                                        (flops, FOLD_FLOPS, "FOLD_FLOPS", "computes {:,} floating-point operations")):  # fmt: skip
            if total > limit:
                raise SpecError.at(context.locate_node(node.name), f"fold_constants: with node {node.name!r} the "
                                   f"constant part {what.format(total)}, more than the {limit:,} a fold may "
                                   f"(fxgen.passes.fold_constants.{cap}); compute it at run time: remove "
                                   "fold_constants, or fold smaller constants")  # fmt: skip
        constant.add(node)
    return constant


def _on_meta(value: Any) -> Any:
    """A tensor as a meta tensor (a Python value as it is); a data-dependent op fails on meta."""
    return value.to("meta") if isinstance(value, torch.Tensor) else value


def _bytes(value: Any) -> int:
    """The bytes the tensors in ``value`` span as their shape says (an expanded view's in full:
    what reading it costs)."""
    return sum(t.numel() * t.element_size() for t in tree_leaves(value) if isinstance(t, torch.Tensor))


PASS = BuiltinPass("fold_constants", fold_constants)
