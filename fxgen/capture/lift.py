"""Dynamo's graph -> the GraphModule ``to_spec`` takes: the same form symbolic tracing gives.

Dynamo hands its backend a graph whose placeholders are every tensor the forward read, the
model's parameters and buffers among them (``L_self_modules_conv_parameters_weight_``), and
which returns a flat tuple. Here, by the identity of the tensor behind each placeholder:

- a model input becomes a placeholder named as in ``forward`` (in ``forward``'s order);
- a parameter, buffer or tensor attribute of the model becomes a ``get_attr`` at its real
  attribute path (its state dict key), never an extra input;
- any other tensor becomes a ``_tensor_constantN`` the spec carries with its values, as torch.fx
  does for the tensors it meets;
- the output is the structure the forward returned (a tensor, tuples, dicts; a Hugging Face
  ``ModelOutput`` as the dict of its fields), rebuilt around the graph's outputs.

Then ``fxgen.capture.fold`` folds the calls Dynamo inlined from torch.nn modules back into
``call_module`` nodes and writes internal callables as public ones, and the result is checked:
the GraphModule must give, bit for bit, what the captured graph gave on the example inputs.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import torch
import torch.fx
from torch.fx._symbolic_trace import _assert_is_none

from fxgen._errors import ExportError, Location
from fxgen.capture.dims import DimFacts
from fxgen.capture.dynamo import Captured, no_parameter_requires_grad
from fxgen.capture.effects import (
    NOTES_KEY,
    disabled_regions,
    global_state_notes,
    refuse_grad_regions,
)
from fxgen.capture.fold import fold_modules, public_callables
from fxgen.capture.trace import at_user_line, forward_signature, left_out_message
from fxgen.capture.vmap import unbatch
from fxgen.construct.checks import check_inputs

__all__ = ["NOTES_KEY", "attribute_at", "lift", "shallow_root", "tensor_paths"]


def tensor_paths(module: torch.nn.Module) -> dict[int, str]:
    """``id(tensor) -> path`` for every parameter, buffer and plain tensor attribute of
    ``module`` (the first path of a tensor registered at several)."""
    paths: dict[int, str] = {}
    named = list(module.named_modules())
    for prefix, sub in named:  # parameters and buffers first: their paths are the state dict's
        dot = prefix + "." if prefix else ""
        for table in (sub._parameters, sub._buffers):
            for name, tensor in table.items():
                if tensor is not None:
                    paths.setdefault(id(tensor), dot + name)
    for prefix, sub in named:
        dot = prefix + "." if prefix else ""
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor):
                paths.setdefault(id(value), dot + name)
    return paths


def lift(
    captured: Captured,
    module: torch.nn.Module,
    *,
    is_leaf: Any,
) -> torch.fx.GraphModule:
    """The GraphModule of ``captured`` in ``to_spec``'s form (see the module docstring). When
    the graph with the torch.nn calls folded does not give Dynamo's outputs (a module returns
    more than the caller used, say), it is lifted again without folding: the functions Dynamo
    recorded, on the modules' tensors at their paths, with a note saying so."""
    try:
        return _lift(captured, module, is_leaf)
    except _Differs as exc:
        try:
            lifted = _lift(captured, module, lambda sub, path: False)
        except _Differs as again:
            raise ExportError(f"{again.message}; the capture cannot be written as a spec that computes the same: "
                              "report it, or export with capture='trace'") from None  # fmt: skip
        lifted.meta[NOTES_KEY].append(f"the torch.nn modules are written as the functions TorchDynamo recorded "
                                      f"(folded into call_module they gave other outputs: {exc})")  # fmt: skip
        return lifted


class _Differs(ExportError):
    """The lifted graph does not give what Dynamo's graph gave."""


def _lift(captured: Captured, module: torch.nn.Module, is_leaf: Any) -> torch.fx.GraphModule:
    from fxgen.capture.trace import TracedGraphModule, declare_unread_state, fix_buffers

    gm = captured.graph
    old_placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    if len(old_placeholders) != len(captured.graph_inputs):
        raise ExportError(f"TorchDynamo's graph has {len(old_placeholders)} inputs but was given "
                          f"{len(captured.graph_inputs)}; export it with capture='trace'")  # fmt: skip
    optional = _left_out_optional(module, captured)
    graph, placeholders = _detached_copy(gm.graph, [*captured.inputs, *optional])
    new_inputs = {name: placeholders[name] for name in captured.inputs}
    unbatch(graph, _where)  # torch.vmap as plain operations, while each node has Dynamo's example value
    paths = tensor_paths(module)
    inputs = {id(tensor): name for name, tensor in captured.inputs.items()}
    old = [node for node in graph.nodes if node.op == "placeholder" and node not in placeholders.values()]
    constants: dict[str, torch.Tensor] = {}
    values: dict[torch.fx.Node, torch.Tensor] = {}  # get_attr node -> the tensor it reads

    def attribute(tensor: torch.Tensor, before: torch.fx.Node) -> torch.fx.Node:
        path = paths.get(id(tensor))
        if path is None:
            path = f"_tensor_constant{len(constants)}"
            constants[path] = tensor.detach()
        with graph.inserting_before(before):
            node = graph.get_attr(path)
        values[node] = tensor
        return node

    sizes = captured.sizes
    for node, tensor in zip(old, captured.graph_inputs, strict=True):
        if isinstance(tensor, torch.Tensor) and id(tensor) in inputs:
            new_inputs[inputs[id(tensor)]].meta["example_value"] = node.meta.get("example_value")
    for index, (node, tensor) in enumerate(zip(old, captured.graph_inputs, strict=True)):
        if index in sizes:  # a symbolic size: read where it is used, or a number
            source = sizes[index]
            if isinstance(source, int):
                node.replace_all_uses_with(source)
            else:
                _read_sizes(graph, node, (new_inputs[source[0]], source[1]))
            graph.erase_node(node)
            continue
        if not isinstance(tensor, torch.Tensor):
            raise ExportError(f"TorchDynamo's graph takes a {type(tensor).__name__} as input {node.name!r}: shapes "
                              "were not specialised; export it with capture='trace'")  # fmt: skip
        name = inputs.get(id(tensor))
        replacement = new_inputs[name] if name is not None else attribute(tensor, node)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
    for node in list(graph.nodes):  # tensors Dynamo put on its own GraphModule
        if node.op == "get_attr" and node not in values:
            value = attribute_at(gm, str(node.target))
            if isinstance(value, torch.fx.GraphModule):
                users = ", ".join(sorted({str(getattr(u.target, "__name__", u.target)) for u in node.users}))
                raise ExportError(f"TorchDynamo's graph runs the nested graph {node.target!r} through {users}, as it "
                                  "records torch.utils.checkpoint, torch.compiler.nested_compile_region and torch.cond; "
                                  "a spec cannot write a nested graph: remove that wrapper for export, or export it "
                                  "with capture='trace'")  # fmt: skip
            if not isinstance(value, torch.Tensor):
                raise ExportError(f"TorchDynamo's graph reads {node.target!r}, a {type(value).__name__}; "
                                  "export it with capture='trace'")  # fmt: skip
            replacement = attribute(value, node)
            node.replace_all_uses_with(replacement)
            graph.erase_node(node)
    _refuse_values(graph, {name: placeholders[name] for name in optional}, type(module).__name__)
    _restructure_output(graph, captured, new_inputs, lambda tensor, before: attribute(tensor, before))
    refuse_grad_regions(graph, module, disabled_regions(graph), _where)
    fold_modules(graph, module, values, is_leaf)
    notes = [*public_callables(graph, constants), *global_state_notes(module)]
    if captured.facts is not None:
        _insert_check(graph, new_inputs, captured.facts)
    graph.lint()
    root = shallow_root(module, constants)
    lifted = TracedGraphModule(root, graph, class_name=type(module).__name__)
    fix_buffers(lifted, module)
    declare_unread_state(lifted, module)
    _check_same(lifted, captured)
    lifted.meta[NOTES_KEY] = notes
    return lifted


def _read_sizes(graph: torch.fx.Graph, symbol: torch.fx.Node, source: tuple[torch.fx.Node, int]) -> None:
    """Replace Dynamo's size placeholder ``symbol`` by ``size`` calls where it is used: each on
    a tensor the using node's module call already holds (its own tensors, or what it was given)
    with that size, as the module's forward read it (``x.size(2)`` inside the block, not a size
    passed in from the top); else on ``source``, the model input it is a dimension of. One call
    per module call and symbol."""
    example = symbol.meta.get("example_value")
    expr = example.node.expr if isinstance(example, torch.SymInt) else None
    order = {node: i for i, node in enumerate(graph.nodes)}
    made: dict[tuple[Any, ...], torch.fx.Node] = {}
    for user in sorted(symbol.users, key=order.__getitem__):
        stack = user.meta.get("nn_module_stack") or {}
        scope = tuple(stack)
        size = made.get(scope)
        if size is None:
            tensor, dim = _holding(user, expr, scope, order) or source
            with graph.inserting_before(user):
                size = graph.call_method("size", (tensor, dim))
            if stack:
                size.meta["nn_module_stack"] = dict(stack)
            made[scope] = size
        user.replace_input_with(symbol, size)


def _holding(user: torch.fx.Node, expr: Any, scope: tuple[Any, ...],
             order: dict[torch.fx.Node, int]) -> tuple[torch.fx.Node, int] | None:  # fmt: skip
    """The latest tensor before ``user`` in its module call ``scope`` (computed there, or given
    to a node there, or given from outside it to a module call it makes: ``y = self.fc(x)`` holds
    ``x``) with a dimension of size ``expr``, and that dimension."""
    if expr is None:
        return None
    node = user.prev
    while node.op != "root" and order.get(node, -1) >= 0:
        for candidate in _held(node, scope):
            value = candidate.meta.get("example_value")
            if isinstance(value, torch.Tensor):
                for d, size in enumerate(value.shape):
                    if isinstance(size, torch.SymInt) and size.node.expr == expr:
                        return candidate, d
        node = node.prev
    return None


def _held(node: torch.fx.Node, scope: tuple[Any, ...]) -> tuple[torch.fx.Node, ...]:
    """The tensors the forward of module call ``scope`` holds at ``node``: the node and its inputs
    if it runs in that call; if it runs in a call made from there, its inputs from outside ``scope``."""
    inside = tuple(node.meta.get("nn_module_stack") or {})
    if inside == scope:
        return (node, *node.all_input_nodes)
    if inside[: len(scope)] != scope:
        return ()
    return tuple(n for n in node.all_input_nodes if tuple(n.meta.get("nn_module_stack") or {})[: len(scope)] != scope)


def _insert_check(graph: torch.fx.Graph, inputs: dict[str, torch.fx.Node], facts: DimFacts) -> None:
    """The check of what the capture assumed about the inputs' sizes, first after the inputs."""
    shapes = tuple((name, tuple(facts.shapes[name])) for name in inputs)
    first = next(node for node in graph.nodes if node.op != "placeholder")
    with graph.inserting_before(first):
        graph.call_function(check_inputs, (tuple(inputs[name] for name in inputs), shapes, tuple(facts.checks)))


def _where(node: torch.fx.Node) -> tuple[Location | None, str]:
    """The user's line Dynamo recorded for ``node`` (its stack trace's innermost frame)."""
    found = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', str(node.meta.get("stack_trace") or ""))
    return at_user_line((found[-1][0], int(found[-1][1]), found[-1][2]) if found else None)


def _detached_copy(graph: torch.fx.Graph, inputs: list[str]) -> tuple[torch.fx.Graph, dict[str, torch.fx.Node]]:
    """A copy of ``graph`` (nodes, names and meta) that belongs to no GraphModule, led by a
    placeholder for each input, named as in ``forward`` (the names are taken first: a node of
    Dynamo's that had one gets another)."""
    copy = torch.fx.Graph()
    placeholders = {}
    for name in inputs:
        placeholders[name] = copy.placeholder(name)
        placeholders[name].type = torch.Tensor
    output = copy.graph_copy(graph, {}, return_output_node=True)
    value, old_output = output if isinstance(output, tuple) else (output, None)
    new_output = copy.output(value)
    if old_output is not None:
        new_output.meta = dict(old_output.meta)
    return copy, placeholders


def _left_out_optional(module: torch.nn.Module, captured: Captured) -> list[str]:
    """The ``forward`` parameters whose default is None that come after the example inputs and
    that neither they nor ``example_kwargs`` give. Each becomes an input, as a trace with that
    default gives one (``concrete_args``): the spec records it, defaulting to None, and a call
    passing a value for it raises an AssertionError naming it (the graph was captured without it)
    instead of ``forward() got an unexpected keyword argument``. One before an example input is
    left out of the spec: the inputs after it have no default to follow it with."""
    signature = forward_signature(module)
    if signature is None:
        return []
    parameters = list(signature.parameters.values())
    given = [k for k, p in enumerate(parameters) if p.name in captured.inputs]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in parameters[given[-1] + 1 if given else 0:]
            if p.kind in kinds and p.default is None and p.name not in captured.kwargs]  # fmt: skip


def _refuse_values(graph: torch.fx.Graph, optional: dict[str, torch.fx.Node], owner: str) -> None:
    """After the inputs, the check that each of ``optional`` is None (``_left_out_optional``)."""
    last = next(n for n in graph.nodes if n.op != "placeholder")
    for name, node in optional.items():
        node.type = torch.Tensor | None
        node.args = (None,)
        with graph.inserting_before(last):
            graph.call_function(_assert_is_none, (node, left_out_message(owner, name)))


def attribute_at(module: torch.nn.Module, target: str) -> Any:
    """The attribute at dotted path ``target`` of ``module`` (AttributeError when there is none)."""
    value: Any = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


def shallow_root(module: torch.nn.Module, constants: dict[str, torch.Tensor]) -> torch.nn.Module:
    """A module holding ``module``'s children, tensors and tensor attributes, plus the constants:
    the GraphModule copies what its graph reads from it, and ``module`` itself gains nothing."""
    root = torch.nn.Module()
    root._modules.update(module._modules)
    root._parameters.update(module._parameters)
    root._buffers.update(module._buffers)
    for name, value in vars(module).items():
        if isinstance(value, torch.Tensor):
            root.__dict__[name] = value
    for name, tensor in constants.items():
        root.register_buffer(name, tensor, persistent=False)
    return root


def _restructure_output(graph: torch.fx.Graph, captured: Captured, inputs: dict[str, torch.fx.Node],
                        attribute: Any) -> None:  # fmt: skip
    """The output node returns what the forward returned, in its structure, not Dynamo's tuple."""
    output = next(node for node in reversed(graph.nodes) if node.op == "output")
    flat = output.args[0]
    flat = tuple(flat) if isinstance(flat, (tuple, list)) else (flat,)
    by_id = {id(tensor): node for tensor, node in zip(captured.graph_outputs, flat, strict=False)
             if isinstance(node, torch.fx.Node)}  # fmt: skip
    by_id.update({id(tensor): inputs[name] for name, tensor in captured.inputs.items()})

    def convert(value: Any, where: str) -> Any:
        if isinstance(value, torch.Tensor):
            node = by_id.get(id(value))
            return node if node is not None else attribute(value, output)
        if isinstance(value, dict):  # a ModelOutput too: its fields that are set
            return {str(k): convert(v, f"{where}[{k!r}]") for k, v in value.items() if v is not None}
        if isinstance(value, (tuple, list)):
            items = [convert(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return items if type(value) is list else tuple(items)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {k: convert(v, f"{where}.{k}") for k, v in fields.items() if v is not None}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise ExportError(f"the forward returns a {type(value).__name__} at {where}, which a spec's output cannot "
                          "hold (tensors, tuples, lists, dicts and plain numbers only); fix the forward argument "
                          "that returns it with example_kwargs (such as use_cache=False)")  # fmt: skip

    output.args = (convert(captured.result, "output"),)


def _check_same(lifted: torch.fx.GraphModule, captured: Captured) -> None:
    """The lifted graph gives what Dynamo's graph gave on the example inputs, bit for bit, run as
    the capture ran that graph: no parameter requires a gradient (``capture_dynamo``). Some kernels
    choose how to compute from ``requires_grad`` even without gradients (``F.linear`` on a sliced
    3-D input differs in the last bit), so the two graphs are compared under the same conditions."""
    try:
        with torch.no_grad(), torch.random.fork_rng(), no_parameter_requires_grad(lifted):
            torch.manual_seed(0)
            got = lifted(**{name: tensor.clone() for name, tensor in captured.inputs.items()})
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise _Differs(f"the converted graph fails on the example inputs: {type(exc).__name__}: {first}") from None
    want = _leaves(captured.result)
    have = _leaves(got)
    if len(want) != len(have):
        raise _Differs(f"the converted graph returns {len(have)} tensors, TorchDynamo's {len(want)}")
    for i, (a, b) in enumerate(zip(want, have, strict=True)):
        same = a.shape == b.shape and a.dtype == b.dtype and (
            torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                  and torch.equal(a.nan_to_num(), b.nan_to_num())))  # fmt: skip
        if not same:
            raise _Differs(f"output {i} of the converted graph differs from TorchDynamo's on the example inputs")


def _leaves(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() if v is not None for t in _leaves(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _leaves(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _leaves(getattr(value, f.name))]
    return []
