"""Trace a model as the blocks its author wrote: each instance of a user-defined ``nn.Module``
class is a leaf of its parent's graph and is traced on its own; an ``nn.Sequential`` of blocks
and torch modules stays one call.

Tracing a block on its own is only right if it computes what tracing through it computes. A
block is traced with the values its call sites give it: a node becomes a placeholder, a constant
(``mask=None``, an int) is bound as torch.fx's ``concrete_args`` and left out of the block's
signature and of the call. Then the whole hierarchy is expanded, block calls replaced by their
graphs, and compared node for node with the flat trace of the same model: any difference and the
hierarchy is refused (``NotTheSame``), so the caller keeps the blocks that do agree.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_aggregate

from fxgen._errors import ExportError
from fxgen.capture.trace import LeafSpec, trace

__all__ = ["Hierarchy", "NotTheSame", "TraceOptions", "block_classes", "trace_blocks"]


class NotTheSame(Exception):
    """The blocks chosen cannot be traced on their own, or their graphs expanded are not the
    flat trace: the message says why, for the note export gives."""


@dataclass
class Hierarchy:
    """The top graph and one graph per block instance (by ``id``), each calling its blocks and
    kept Sequentials as leaves, with their call sites' constants bound."""

    root: torch.fx.GraphModule
    blocks: dict[int, torch.fx.GraphModule] = field(default_factory=dict)
    kept: set[int] = field(default_factory=set)  # ids of the nn.Sequential containers called whole


@dataclass
class TraceOptions:
    concrete_args: dict[str, Any] | None = None
    leaf_modules: tuple[LeafSpec, ...] = ()
    autowrap_functions: tuple[Callable[..., Any], ...] = ()
    tracer_class: type[torch.fx.Tracer] | None = None


def block_classes(module: torch.nn.Module, options: TraceOptions) -> list[type]:
    """The user-defined classes the tracer would trace through, in the order the model holds
    them: candidates for blocks. torch's own classes, containers, GraphModules, leaves the
    caller named and classes whose forward takes ``*args``/``**kwargs`` are not."""
    base = options.tracer_class or torch.fx.Tracer
    tracer = base()
    leaf_types = tuple(t for t in options.leaf_modules if isinstance(t, type))
    leaf_paths = {t for t in options.leaf_modules if isinstance(t, str)}
    found: dict[type, None] = {}
    for path, sub in module.named_modules():
        cls = type(sub)
        if not path or cls in found or isinstance(sub, (torch.fx.GraphModule, *leaf_types)):
            continue
        if path in leaf_paths or cls.__module__.split(".")[0] == "torch" or _takes_varargs(cls):
            continue
        try:
            if tracer.is_leaf_module(sub, path):
                continue
        except Exception:  # a tracer that needs a trace under way to answer: not a block
            continue
        found[cls] = None
    return list(found)


def _takes_varargs(cls: type) -> bool:
    try:
        params = inspect.signature(cls.forward).parameters.values()  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def trace_blocks(module: torch.nn.Module, flat: torch.fx.GraphModule, classes: Iterable[type],
                 options: TraceOptions) -> Hierarchy:  # fmt: skip
    """``module`` traced with the instances of ``classes`` as blocks; NotTheSame unless the
    expanded hierarchy is ``flat`` node for node."""
    wanted = tuple(classes)
    blocks = {id(m): m for m in module.modules() if m is not module and type(m) in wanted}
    kept = _kept_sequentials(module, blocks, options)
    tracer_class = _leaf_tracer(options.tracer_class or torch.fx.Tracer, set(blocks) | kept)
    try:
        root = _trace(module, options.concrete_args, options, tracer_class)
        hierarchy = Hierarchy(root, kept=kept)
        _trace_called(root, blocks, hierarchy, options, tracer_class)
    except ExportError as exc:
        raise NotTheSame(str(exc)) from None
    difference = _first_difference(_expand_flat(flat), _expand(hierarchy))
    if difference is not None:
        raise NotTheSame(difference)
    return hierarchy


def _trace(module: torch.nn.Module, concrete: dict[str, Any] | None, options: TraceOptions,
           tracer_class: type[torch.fx.Tracer]) -> torch.fx.GraphModule:  # fmt: skip
    return trace(module, concrete_args=concrete, leaf_modules=options.leaf_modules,
                 autowrap_functions=options.autowrap_functions, tracer_class=tracer_class)  # fmt: skip


def _leaf_tracer(base: type[torch.fx.Tracer], leaves: set[int]) -> type[torch.fx.Tracer]:
    class _BlockTracer(base):  # type: ignore[valid-type, misc]
        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            return id(m) in leaves or bool(super().is_leaf_module(m, qualname))

    return _BlockTracer


def _kept_sequentials(module: torch.nn.Module, blocks: dict[int, torch.nn.Module], options: TraceOptions) -> set[int]:
    """The ``nn.Sequential`` containers whose every item is a block, a module the tracer keeps
    as a leaf, or such a Sequential: each stays one call, declared from its contents."""
    tracer = (options.tracer_class or torch.fx.Tracer)()
    kept: set[int] = set()

    def whole(path: str, sub: torch.nn.Module) -> bool:
        if id(sub) in blocks:
            return True
        if type(sub) is torch.nn.Sequential:
            names = [name for name, _ in sub.named_children()]
            items = [whole(f"{path}.{name}", child) for name, child in sub.named_children()]
            if items and all(items) and names == [str(i) for i in range(len(names))]:  # Sequential(*items) gives these
                kept.add(id(sub))
                return True
            return False
        try:
            return type(sub).__module__.split(".")[0] == "torch" and bool(tracer.is_leaf_module(sub, path))
        except Exception:
            return False

    for path, sub in module.named_modules():
        if path and type(sub) is torch.nn.Sequential and id(sub) not in kept:
            whole(path, sub)
    return kept


# -- tracing each block with its call sites' values --------------------------------------------
def _trace_called(gm: torch.fx.GraphModule, blocks: dict[int, torch.nn.Module], hierarchy: Hierarchy,
                  options: TraceOptions, tracer_class: type[torch.fx.Tracer]) -> None:  # fmt: skip
    """Trace every block ``gm`` calls (directly or as an item of a kept Sequential), once per
    instance, and rewrite each call to pass only the values that are nodes."""
    sites: dict[int, list[tuple[torch.fx.Node | None, tuple[Any, ...], dict[str, Any]]]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_module":
            continue
        sub = gm.get_submodule(node.target)
        if id(sub) in blocks:
            sites.setdefault(id(sub), []).append((node, node.args, dict(node.kwargs)))
        elif id(sub) in hierarchy.kept:
            for item in _sequence_blocks(sub, blocks, hierarchy.kept):
                sites.setdefault(id(item), []).append((None, (node,), {}))  # called with one value
    for key, calls in sites.items():
        block = blocks[key]
        params, constants = _bind_calls(block, calls)
        if key not in hierarchy.blocks:
            sub_gm = _trace(block, constants or None, TraceOptions(None, *_rest(options)), tracer_class)
            _drop_constant_placeholders(sub_gm, constants, list(_signature(block).parameters))
            hierarchy.blocks[key] = sub_gm
            _trace_called(sub_gm, blocks, hierarchy, options, tracer_class)
        for node, args, kwargs in calls:
            if node is not None:
                bound = _signature(block).bind(*args, **kwargs).arguments
                node.args = tuple(bound[p] for p in params)
                node.kwargs = {}
    gm.recompile()


def _rest(options: TraceOptions) -> tuple[Any, ...]:
    return options.leaf_modules, options.autowrap_functions, options.tracer_class


def _sequence_blocks(seq: torch.nn.Module, blocks: dict[int, torch.nn.Module], kept: set[int]) -> list[torch.nn.Module]:
    found = []
    for child in seq.children():
        if id(child) in blocks:
            found.append(child)
        elif id(child) in kept:
            found.extend(_sequence_blocks(child, blocks, kept))
    return found


def _signature(block: torch.nn.Module) -> inspect.Signature:
    return inspect.signature(block.forward)


_CONSTANT_TYPES = (type(None), bool, int, float, str)


def _bind_calls(block: torch.nn.Module, calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]) -> tuple[list[str], dict[str, Any]]:
    """The block's parameters every call gives a node (in signature order), and the constants
    the others have: the same at every call site, or the block is not traced on its own."""
    name = type(block).__name__
    signature = _signature(block)
    params: list[str] | None = None
    constants: dict[str, Any] = {}
    for _, args, kwargs in calls:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ExportError(f"a call of {name} does not fit its forward: {exc}") from None
        bound.apply_defaults()
        nodes = [p for p, v in bound.arguments.items() if _holds_node(v)]
        values = {p: v for p, v in bound.arguments.items() if p not in nodes}
        if params is None:
            params, constants = nodes, values
        elif nodes != params or not _same_constants(values, constants):
            raise ExportError(f"{name} is called with different constant arguments at different places")
    for p, value in constants.items():
        if not _is_constant(value):
            raise ExportError(f"{name} is called with {p}={type(value).__name__}, which is not a plain constant")
    return params or [], constants


def _holds_node(value: Any) -> bool:
    found = False

    def see(v: Any) -> Any:
        nonlocal found
        found = found or isinstance(v, torch.fx.Node)
        return v

    map_aggregate(value, see)
    return found


def _is_constant(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return type(value) in _CONSTANT_TYPES


def _same_constants(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(type(a[k]) is type(b[k]) and a[k] == b[k] for k in a)


def _drop_constant_placeholders(gm: torch.fx.GraphModule, constants: dict[str, Any], names: list[str]) -> None:
    """torch.fx keeps a placeholder for each concrete argument (one per parameter, in order) and
    asserts its value; the block's forward takes only the values its callers compute, so both go."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for node, name in zip(placeholders, names, strict=True):
        if name not in constants:
            continue
        for user in list(node.users):
            for check in list(user.users):  # eq -> torch._assert
                if check.op == "call_function" and not check.users:
                    graph.erase_node(check)
            if not user.users:
                graph.erase_node(user)
        if node.users:
            raise ExportError(f"the constant argument {name!r} is read as a value by the traced graph")
        graph.erase_node(node)
    gm.recompile()


# -- the hierarchy expanded, against the flat trace ------------------------------------------
@dataclass(frozen=True)
class _Ref:
    index: int


@dataclass(frozen=True)
class _Input:
    index: int


def _expand_flat(flat: torch.fx.GraphModule) -> tuple[list[tuple[Any, ...]], Any]:
    records: list[tuple[Any, ...]] = []
    env: dict[torch.fx.Node, Any] = {}
    inputs = 0
    result: Any = None
    for node in flat.graph.nodes:
        if node.op == "placeholder":
            env[node] = _Input(inputs)
            inputs += 1
        elif node.op == "output":
            result = _mapped(node.args[0], env)
        else:
            env[node] = _record(records, node, "", flat, env)
    return records, result


def _expand(hierarchy: Hierarchy) -> tuple[list[tuple[Any, ...]], Any]:
    records: list[tuple[Any, ...]] = []
    inputs = [n for n in hierarchy.root.graph.nodes if n.op == "placeholder"]
    env: dict[torch.fx.Node, Any] = {n: _Input(i) for i, n in enumerate(inputs)}
    return records, _walk(hierarchy.root, "", env, hierarchy, records)


def _walk(gm: torch.fx.GraphModule, prefix: str, env: dict[torch.fx.Node, Any], hierarchy: Hierarchy,
          records: list[tuple[Any, ...]]) -> Any:  # fmt: skip
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            return _mapped(node.args[0], env)
        if node.op == "call_module":
            env[node] = _call(gm, str(node.target), prefix, _mapped(node.args, env), _mapped(node.kwargs, env),
                              hierarchy, records)  # fmt: skip
        elif node.op == "call_function" and node.target is operator.getitem and _static_item(node, env):
            env[node] = _mapped(node.args[0], env)[node.args[1]]
        else:
            env[node] = _record(records, node, prefix, gm, env)
    return None


def _static_item(node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> bool:
    """``out[0]`` of a block that returns a tuple: the flat trace has the item itself."""
    seq = _mapped(node.args[0], env)
    return isinstance(seq, (tuple, list, dict)) and not isinstance(node.args[1], torch.fx.Node)


def _call(gm: torch.nn.Module, target: str, prefix: str, args: Any, kwargs: Any, hierarchy: Hierarchy,
          records: list[tuple[Any, ...]]) -> Any:  # fmt: skip
    sub = gm.get_submodule(target)
    path = prefix + target
    block = hierarchy.blocks.get(id(sub))
    if block is not None:
        inputs = [n for n in block.graph.nodes if n.op == "placeholder"]
        env = dict(zip(inputs, args, strict=True))
        return _walk(block, path + ".", env, hierarchy, records)
    if id(sub) in hierarchy.kept:
        (value,) = args
        for name in sub._modules:
            value = _call(sub, name, path + ".", (value,), {}, hierarchy, records)
        return value
    records.append(("call_module", path, args, kwargs))
    return _Ref(len(records) - 1)


def _mapped(value: Any, env: dict[torch.fx.Node, Any]) -> Any:
    return map_aggregate(value, lambda v: env[v] if isinstance(v, torch.fx.Node) else v)


def _record(records: list[tuple[Any, ...]], node: torch.fx.Node, prefix: str, gm: torch.fx.GraphModule,
            env: dict[torch.fx.Node, Any]) -> _Ref:  # fmt: skip
    target: Any = node.target
    if node.op == "get_attr":
        target = _attribute_key(gm, str(target), prefix)
    elif node.op == "call_module":
        target = prefix + str(target)
    records.append((node.op, target, _mapped(node.args, env), _mapped(node.kwargs, env)))
    return _Ref(len(records) - 1)


def _attribute_key(gm: torch.fx.GraphModule, target: str, prefix: str) -> Any:
    """A constant torch.fx made while tracing (``_tensor_constant0``) is named by the graph it is
    in: compare it by value. Any other attribute by its path in the model."""
    if not target.rpartition(".")[2].startswith("_tensor_constant"):
        return prefix + target
    tensor = gm.get_buffer(target) if target in dict(gm.named_buffers()) else getattr(gm, target)
    data = tensor.detach().cpu()
    return ("constant", str(data.dtype), tuple(data.shape), data.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
            if data.dtype != torch.bool else data.numpy().tobytes())  # fmt: skip


def _first_difference(flat: tuple[list[tuple[Any, ...]], Any], blocks: tuple[list[tuple[Any, ...]], Any]) -> str | None:
    (a, out_a), (b, out_b) = flat, blocks
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not _equal(x, y):
            return f"node {i} of the model's flat graph is {_show(x)}, traced as blocks it is {_show(y)}"
    if len(a) != len(b):
        return f"the flat graph has {len(a)} nodes, traced as blocks {len(b)}"
    if not _equal(out_a, out_b):
        return "the blocks return something else than the flat graph"
    return None


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # tensors in arguments: not comparable this way
        return False


def _show(record: tuple[Any, ...]) -> str:
    op, target = record[0], record[1]
    name = getattr(target, "__name__", None) or str(target)
    return f"{op} {name}"
