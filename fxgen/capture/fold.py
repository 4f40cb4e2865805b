"""Fold Dynamo's inlined torch.nn calls back into modules, and keep private callables out.

Dynamo inlines every ``forward``, torch.nn's included: a ``Conv2d`` becomes ``torch.conv2d`` on
the module's own weight and bias. Symbolic tracing keeps it as one ``call_module`` and the spec
declares ``conv1: torch.nn.Conv2d(...)``. :func:`fold_modules` gives the same: each node records
the modules it ran inside (``nn_module_stack``, one key per call), so the nodes of one call of a
module symbolic tracing treats as a leaf are found, and when they take one value from outside
(besides the module's own tensors) and hand one value on, they become ``call_module`` on that
value. A call that does not fit (several inputs, several results) stays as the functions Dynamo
recorded, on the module's tensors at their paths: still exact, only less short. The lifted graph
is checked against Dynamo's afterwards (``fxgen.capture.lift``), so a fold that changed what is
computed is refused, not written.

:func:`public_callables` makes sure nothing private reaches the spec: every function a node
calls must be one the default target policy names. One that is not (``torch._functorch``
helpers, autocast markers) is folded into a tensor constant when its inputs are constants under
the captured shapes, or refused, naming the line of the forward that called it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from fxgen._errors import ExportError

__all__ = ["fold_modules", "public_callables", "stack_module"]


def fold_modules(
    graph: torch.fx.Graph,
    module: torch.nn.Module,
    values: dict[torch.fx.Node, torch.Tensor],
    is_leaf: Callable[[torch.nn.Module, str], bool],
) -> None:
    """Turn each call of a leaf module Dynamo inlined into one ``call_module`` (docstring above).
    ``values`` maps each get_attr node to the tensor it reads."""
    by_id = {id(sub): (path, sub) for path, sub in module.named_modules() if path}
    calls: dict[str, list[torch.fx.Node]] = {}
    owner: dict[str, tuple[str, torch.nn.Module]] = {}
    for node in graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        for key, entry in (node.meta.get("nn_module_stack") or {}).items():  # outermost first
            found = stack_module(key, entry, by_id)
            if found is not None and is_leaf(found[1], found[0]):
                calls.setdefault(key, []).append(node)
                owner[key] = found
                break
    for key, members in calls.items():
        path, sub = owner[key]
        _fold(graph, path, sub, members, values)


def stack_module(key: str, entry: Any, by_id: dict[int, tuple[str, torch.nn.Module]]) -> tuple[str, torch.nn.Module] | None:
    """The (path, module) a stack entry names: its key is the module's id (``@N`` for the N-th
    call), and its class must agree."""
    try:
        found = by_id.get(int(str(key).split("@", 1)[0]))
    except ValueError:
        return None
    if found is None or not isinstance(entry, tuple) or len(entry) < 2 or type(found[1]) is not entry[1]:
        return None
    return found


def _fold(graph: torch.fx.Graph, path: str, sub: torch.nn.Module, members: list[torch.fx.Node],
          values: dict[torch.fx.Node, torch.Tensor]) -> None:  # fmt: skip
    inside = set(members)
    own = {id(t) for t in (*sub.parameters(), *sub.buffers())}
    own.update(id(v) for v in vars(sub).values() if isinstance(v, torch.Tensor))
    inputs: list[torch.fx.Node] = []
    own_reads: list[torch.fx.Node] = []
    for node in members:
        for arg in node.all_input_nodes:
            if arg in inside:
                continue
            if arg.op == "get_attr" and id(values.get(arg)) in own:
                own_reads.append(arg)
            elif arg not in inputs:
                inputs.append(arg)
    results = [node for node in members if any(user not in inside for user in node.users)]
    if len(inputs) != 1 or len(results) != 1:
        return
    order = {node: i for i, node in enumerate(graph.nodes)}
    result = results[0]
    if order[inputs[0]] > order[result]:
        return
    with graph.inserting_before(result):
        call = graph.call_module(path, (inputs[0],))
    call.meta = dict(result.meta)
    result.replace_all_uses_with(call)
    for node in sorted(members, key=order.__getitem__, reverse=True):
        graph.erase_node(node)
    for node in own_reads:
        if not node.users and node.graph is graph and node in order:
            graph.erase_node(node)
            del order[node]


# -- private callables -------------------------------------------------------------------------
def public_callables(graph: torch.fx.Graph, constants: dict[str, torch.Tensor]) -> list[str]:
    """Every call_function target a name the default policy resolves; a call that has none is
    folded to a constant (added to ``constants``) or refused. Returns notes for the user (the
    autocast regions written without their markers)."""
    from fxgen.describe.to_spec import function_name
    from fxgen.policy.policy import DEFAULT_POLICY, TargetError

    notes = _drop_disabled_autocast(graph)
    for node in list(graph.nodes):  # folding erases only nodes before the current one
        if node.op == "call_function" and node.target in _NO_COMPUTATION and not node.users:
            _erase_dead(graph, node)  # telemetry, or Dynamo's own checks of the sizes it derived
            continue
        method = _TENSOR_METHODS.get(node.target) if node.op == "call_function" else None
        if method is not None:  # aten's size queries: a data-dependent size, read as Tensor.size does
            node.op, node.target = "call_method", method
            continue
        if node.op == "call_method" and str(node.target).startswith("_"):
            _fold_or_refuse(graph, node, f"the private tensor method {node.target!r}", constants)
            continue
        if node.op != "call_function":
            continue
        try:
            name = function_name(node.target)
            DEFAULT_POLICY.resolve_function(name)
        except (ExportError, TargetError):
            shown = getattr(node.target, "__qualname__", None) or repr(node.target)
            home = getattr(node.target, "__module__", None)
            _fold_or_refuse(graph, node, f"{home + '.' if home else ''}{shown}", constants)
    return notes


# Calls that compute nothing the graph returns: torch's usage telemetry, and the runtime checks
# Dynamo adds for the sizes it derived from data (``u0 >= 0`` for a ``nonzero``'s length),
# which hold for every tensor torch can make. They are dropped, with the size arithmetic that
# only they used.
_NO_COMPUTATION: frozenset[Any] = frozenset(
    target
    for target in (getattr(torch._C, "_log_api_usage_once", None),
                   getattr(getattr(torch.ops.aten, "_assert_scalar", None), "default", None),
                   getattr(getattr(torch.ops.aten, "sym_constrain_range_for_size", None), "default", None))
    if target is not None
)  # fmt: skip


# Dynamo reads the size of a tensor whose shape depends on data (``nonzero``, a mask's
# ``where``, MoE routing) with aten's size queries; each is a public tensor method.
_TENSOR_METHODS: dict[Any, str] = {
    getattr(packet, overload): method
    for packet, method in ((getattr(torch.ops.aten, "sym_size", None), "size"),
                           (getattr(torch.ops.aten, "sym_stride", None), "stride"),
                           (getattr(torch.ops.aten, "sym_numel", None), "numel"))
    for overload in ("int", "default")
    if packet is not None and hasattr(packet, overload)
}  # fmt: skip


def _drop_disabled_autocast(graph: torch.fx.Graph) -> list[str]:
    """Remove the markers of ``torch.autocast(..., enabled=False)`` regions (LLaMA's rotary
    embedding runs in one). The capture ran without autocast, so there they change nothing;
    the spec has no way to write a context manager, and the functions that would switch
    autocast by hand change global state, which the default policy refuses. Other autocast
    regions are refused with the rest of the private callables."""
    from torch.amp import autocast_mode

    enter = getattr(autocast_mode, "_enter_autocast", None)
    exit_ = getattr(autocast_mode, "_exit_autocast", None)
    notes = []
    for node in list(graph.nodes):
        if node.op != "call_function" or enter is None or node.target is not enter:
            continue
        values = list(node.args) + [None] * 4
        device, enabled = values[0], values[2]
        if enabled is not False or any(isinstance(v, torch.fx.Node) for v in node.args):
            continue
        exits = list(node.users)
        if not all(user.op == "call_function" and user.target is exit_ and not user.users for user in exits):
            continue
        for user in exits:
            graph.erase_node(user)
        graph.erase_node(node)
        notes.append(f"a torch.autocast(device_type={device!r}, enabled=False) region{_user_line(node)} is written "
                     "without the context manager: exact without autocast, as captured; under an autocast the "
                     "caller enters, the spec runs it in the autocast dtype")  # fmt: skip
    return notes


def _fold_or_refuse(graph: torch.fx.Graph, node: torch.fx.Node, what: str, constants: dict[str, torch.Tensor]) -> None:
    try:
        value = _constant(node, {})
    except _NotConstant:
        value = None
    if not isinstance(value, torch.Tensor):
        raise ExportError(f"the captured graph calls {what} (node {node.name!r}{_user_line(node)}), which is no "
                          "public torch function a spec may name and computes no constant tensor under the "
                          "captured shapes; compute it with public torch functions in the forward, or export "
                          "with capture='trace'")  # fmt: skip
    name = f"_tensor_constant{len(constants)}"
    while name in constants:
        name += "_"
    constants[name] = value.detach()
    with graph.inserting_before(node):
        replacement = graph.get_attr(name)
    node.replace_all_uses_with(replacement)
    _erase_dead(graph, node)


def _erase_dead(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """Erase ``node`` and the constant nodes only it used."""
    pending = [node]
    while pending:
        current = pending.pop()
        if current.users or current.op in ("placeholder", "output"):
            continue
        inputs = current.all_input_nodes
        graph.erase_node(current)
        pending.extend(inputs)


class _NotConstant(Exception):
    pass


def _constant(node: torch.fx.Node, cache: dict[torch.fx.Node, Any]) -> Any:
    """The value ``node`` computes when it depends on no input, parameter or buffer."""
    if node in cache:
        return cache[node]
    if node.op not in ("call_function", "call_method"):
        raise _NotConstant
    if not isinstance(node.meta.get("example_value"), (torch.Tensor, int, float, bool)):
        raise _NotConstant  # only what computes a value is run here: never a call made for its effect
    args = torch.fx.node.map_arg(node.args, lambda n: _constant(n, cache))
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: _constant(n, cache))
    with torch.no_grad():
        if node.op == "call_method":
            self_value, *rest = args
            value = getattr(self_value, str(node.target))(*rest, **kwargs)
        else:
            value = node.target(*args, **kwargs)  # type: ignore[operator]
    cache[node] = value
    return value


def _user_line(node: torch.fx.Node) -> str:
    """``, at file.py:12`` from the stack trace Dynamo records on each node."""
    trace = node.meta.get("stack_trace")
    if not isinstance(trace, str):
        return ""
    import re

    found = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not found:
        return ""
    filename, line = found[-1]
    return f", at {filename}:{line}"
