"""The hierarchy of block calls a model ran, and its proof (``verify``): expanded, it must be the
flat graph. ``fxgen.capture.partition`` reads it off the flat graph; for a trace whose tracer
recorded no module calls, ``trace_blocks`` traces the model as the blocks its author wrote
instead: each instance of a user-defined ``nn.Module`` class is a leaf of its parent's graph and
is traced on its own; an ``nn.Sequential`` of blocks and torch modules stays one call.

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
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_aggregate

from fxgen._errors import ExportError
from fxgen.capture.preserve import Snapshot
from fxgen.capture.trace import LeafSpec, declare_tensor, forward_signature, trace

__all__ = ["Hierarchy", "NotTheSame", "TraceOptions", "block_classes", "declare_reads", "first_paths",
           "kept_sequentials", "trace_blocks", "verify"]


class NotTheSame(Exception):
    """The blocks chosen cannot be traced on their own, or their graphs expanded are not the
    flat trace: the message says why, for the note export gives; ``culprit`` is the class to
    inline, where it is known (None: a difference nothing points at)."""

    def __init__(self, message: str, culprit: type | None = None, more: dict[type, str] | None = None) -> None:
        super().__init__(message)
        self.culprit = culprit
        self.more = more or {}  # other classes found wrong in the same attempt, and why


@dataclass
class Hierarchy:
    """The top graph and one graph per block instance (by ``id``), each calling its blocks and
    kept Sequentials as leaves, with their call sites' constants bound."""

    root: torch.fx.GraphModule
    blocks: dict[int, torch.fx.GraphModule] = field(default_factory=dict)
    kept: set[int] = field(default_factory=set)  # ids of the nn.Sequential containers called whole
    params: dict[int, list[str]] = field(default_factory=dict)  # block -> the parameters its callers give nodes
    read: dict[int, list[str]] = field(default_factory=dict)  # block -> its graph's placeholders (parameter names)
    # module or tensor (id) -> its first path in the model, the one torch.fx names it by: a module
    # registered twice (``self.act`` also inside ``self.final``) is called at that path
    paths: dict[int, str] = field(default_factory=dict)
    failed: dict[type, str] = field(default_factory=dict)  # block classes that do not trace alone, and why
    flat: torch.fx.GraphModule | None = None  # the one graph it expands to, node for node (``verify``)


@dataclass
class TraceOptions:
    concrete_args: dict[str, Any] | None = None
    leaf_modules: tuple[LeafSpec, ...] = ()
    autowrap_functions: tuple[Callable[..., Any], ...] = ()
    tracer_class: type[torch.fx.Tracer] | None = None


def block_classes(module: torch.nn.Module, options: TraceOptions, *, any_signature: bool = False) -> list[type]:
    """The user-defined classes the tracer would trace through, in the order the model holds
    them: candidates for blocks. torch's own classes, containers, GraphModules, leaves the
    caller named and classes whose forward takes ``*args``/``**kwargs`` are not (the latter
    are, with ``any_signature``: a graph split by the module calls it recorded needs no signature)."""
    base = options.tracer_class or torch.fx.Tracer
    tracer = base()
    leaf_types = tuple(t for t in options.leaf_modules if isinstance(t, type))
    leaf_paths = {t for t in options.leaf_modules if isinstance(t, str)}
    found: dict[type, None] = {}
    for path, sub in module.named_modules():
        cls = type(sub)
        if not path or cls in found or isinstance(sub, (torch.fx.GraphModule, *leaf_types)):
            continue
        if path in leaf_paths or cls.__module__.split(".")[0] == "torch" or (not any_signature and _takes_varargs(cls)):
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
    kept = kept_sequentials(module, blocks, options)
    tracer_class = _leaf_tracer(options.tracer_class or torch.fx.Tracer, set(blocks) | kept)
    snapshot = Snapshot(module)  # one for all the traces below (each would take its own)
    try:
        try:
            root = _trace(module, options.concrete_args, options, tracer_class)
        except ExportError as exc:
            raise NotTheSame(str(exc)) from None  # the parent fails on a leaf's result: which one is not known
        hierarchy = Hierarchy(root, kept=kept, paths=first_paths(module))
        _trace_called(root, blocks, hierarchy, options, tracer_class)
    finally:
        snapshot.restore()
    for gm in (hierarchy.root, *hierarchy.blocks.values()):
        declare_reads(gm, hierarchy.blocks)
    if hierarchy.failed:  # every class whose instances cannot be traced on their own, at once
        (culprit, message), *_ = hierarchy.failed.items()
        raise NotTheSame(message, culprit, hierarchy.failed)
    verify(hierarchy, flat, blocks)
    return hierarchy


def verify(hierarchy: Hierarchy, flat: torch.fx.GraphModule, blocks: dict[int, torch.nn.Module]) -> None:
    """NotTheSame unless ``hierarchy`` expanded (block calls replaced by their graphs) is
    ``flat`` node for node; the culprit is the class of the block holding the first difference."""
    expanded = _expand(hierarchy)
    at = _first_difference(_expand_flat(flat, hierarchy.paths), expanded)
    if at is not None:
        index, difference = at
        owners = expanded.owners
        owner = next((owners[i] for i in (index, index - 1) if 0 <= i < len(owners) and owners[i] is not None), None)
        raise NotTheSame(difference, type(blocks[owner]) if owner is not None else None)
    hierarchy.flat = flat


def declare_reads(gm: torch.fx.GraphModule, blocks: dict[int, torch.fx.GraphModule]) -> None:
    """A tensor ``gm`` reads through a block it calls (``embed.ids``: Hugging Face's models slice
    their embeddings' buffer) is declared by that block's graph module too, as the original
    holds it, so the block's class has it: a block declares only what it reads and its state
    dict otherwise, and a non-persistent buffer is in neither."""
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        parts = str(node.target).split(".")
        owner: torch.nn.Module = gm
        for i, part in enumerate(parts[:-1]):
            owner = getattr(owner, part)
            block = blocks.get(id(owner))
            if block is not None:
                rest = parts[i + 1:]
                declare_tensor(block, ".".join(rest), owner.get_submodule(".".join(rest[:-1])))
                break


def _trace(module: torch.nn.Module, concrete: dict[str, Any] | None, options: TraceOptions,
           tracer_class: type[torch.fx.Tracer]) -> torch.fx.GraphModule:  # fmt: skip
    return trace(module, concrete_args=concrete, leaf_modules=options.leaf_modules,
                 autowrap_functions=options.autowrap_functions, tracer_class=tracer_class, preserve=False)  # fmt: skip


def first_paths(module: torch.nn.Module) -> dict[int, str]:
    paths: dict[int, str] = {}
    for named in (module.named_modules(), module.named_parameters(), module.named_buffers()):
        for path, value in named:
            paths.setdefault(id(value), path)
    return paths


def _leaf_tracer(base: type[torch.fx.Tracer], leaves: set[int]) -> type[torch.fx.Tracer]:
    class _BlockTracer(base):  # type: ignore[valid-type, misc]
        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            return id(m) in leaves or bool(super().is_leaf_module(m, qualname))

    return _BlockTracer


def kept_sequentials(module: torch.nn.Module, blocks: dict[int, torch.nn.Module], options: TraceOptions) -> set[int]:
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
        if type(block) in hierarchy.failed:
            continue
        try:
            if key not in hierarchy.blocks:
                params, constants = _bind_calls(block, calls)
                sub_gm = _trace(block, constants or None, TraceOptions(None, *_rest(options)), tracer_class)
                names = list(_signature(block).parameters)
                _drop_constant_placeholders(sub_gm, constants, names)
                read = [_parameter(n, names) for n in sub_gm.graph.nodes if n.op == "placeholder"]
                if any(p not in params for p in read):
                    raise ExportError(f"the traced graph of {type(block).__name__} takes {read}, its calls give {params}")
                hierarchy.blocks[key] = sub_gm
                hierarchy.params[key] = params
                hierarchy.read[key] = read  # a tracer may leave out a parameter the graph never reads
                _trace_called(sub_gm, blocks, hierarchy, options, tracer_class)
            _bind_calls(block, calls, expect=hierarchy.params[key])
        except ExportError as exc:
            hierarchy.failed.setdefault(type(block), str(exc))
            continue
        for node, args, kwargs in calls:
            if node is not None:
                bound = _signature(block).bind(*args, **kwargs).arguments
                node.args = tuple(bound[p] for p in hierarchy.read[key])
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
    """``forward``'s signature (``trace.forward_signature``: once per class); a block whose
    signature cannot be read is not traced on its own."""
    signature = forward_signature(block)
    if signature is None:
        raise ExportError(f"{type(block).__name__}.forward has no signature to bind its calls to")
    return signature


_CONSTANT_TYPES = (type(None), bool, int, float, str)


def _bind_calls(block: torch.nn.Module, calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]],
                expect: list[str] | None = None) -> tuple[list[str], dict[str, Any]]:  # fmt: skip
    """The block's parameters every call gives a node (in signature order), and the constants
    the others have: the same at every call site, or the block is not traced on its own.
    ``expect``: the parameters of an instance already traced from other call sites."""
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
    if expect is not None and params != expect:
        raise ExportError(f"{name} is called with different constant arguments at different places")
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
    """torch.fx keeps a placeholder for each concrete argument and asserts its value; the block's
    forward takes only the values its callers compute, so both go."""
    graph = gm.graph
    for node in [n for n in graph.nodes if n.op == "placeholder"]:
        name = _parameter(node, names)
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


def _parameter(placeholder: torch.fx.Node, names: list[str]) -> str:
    """The forward parameter (of ``names``) a placeholder stands for: torch.fx's target is its
    name, or ``name_1`` for a concrete argument."""
    target = str(placeholder.target).lstrip("*")
    if target not in names:
        base = re.fullmatch(r"(.+)_[0-9]+", target)
        if base is not None and base.group(1) in names:
            return base.group(1)
    return target


# -- the hierarchy expanded, against the flat trace ------------------------------------------
@dataclass(frozen=True)
class _Ref:
    index: int


@dataclass(frozen=True)
class _Input:
    index: int


def _expand_flat(flat: torch.fx.GraphModule, paths: dict[int, str]) -> list[tuple[Any, ...]]:
    records: list[tuple[Any, ...]] = []
    env: dict[torch.fx.Node, Any] = {}
    inputs = 0
    for node in flat.graph.nodes:
        if node.op == "placeholder":
            env[node] = _Input(inputs)
            inputs += 1
        elif node.op == "output":
            records.append(("output", _mapped(node.args[0], env)))
        else:
            env[node] = _record(records, node, "", flat, env, paths)
    return records


class _Records(list[tuple[Any, ...]]):
    """Expanded nodes, each with the block instance (``id``) whose graph it came from."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: list[int | None] = []
        self.owner: int | None = None

    def append(self, record: tuple[Any, ...]) -> None:
        super().append(record)
        self.owners.append(self.owner)


def _expand(hierarchy: Hierarchy) -> _Records:
    records = _Records()
    inputs = [n for n in hierarchy.root.graph.nodes if n.op == "placeholder"]
    env: dict[torch.fx.Node, Any] = {n: _Input(i) for i, n in enumerate(inputs)}
    records.append(("output", _walk(hierarchy.root, "", env, hierarchy, records)))
    return records


def _walk(gm: torch.fx.GraphModule, prefix: str, env: dict[torch.fx.Node, Any], hierarchy: Hierarchy,
          records: _Records) -> Any:  # fmt: skip
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            return _mapped(node.args[0], env)
        if node.op == "call_module":
            env[node] = _call(gm, str(node.target), prefix, _mapped(node.args, env), _mapped(node.kwargs, env),
                              hierarchy, records)  # fmt: skip
        elif node.op == "call_function" and node.target is operator.getitem and _static_item(node, env):
            try:
                env[node] = _mapped(node.args[0], env)[node.args[1]]
            except (KeyError, IndexError, TypeError):  # (a ModelOutput returned as a plain dict)
                raise NotTheSame(f"{_producer(gm, node)} returns a value its caller cannot index with "
                                 f"{node.args[1]!r} once the block is a class of its own", _block_type(gm, node, hierarchy)) from None
        else:
            env[node] = _record(records, node, prefix, gm, env, hierarchy.paths)
    return None


def _block_type(gm: torch.fx.GraphModule, node: torch.fx.Node, hierarchy: Hierarchy) -> type | None:
    """The block class whose call made ``node``'s first argument, if a block's call did."""
    source = node.args[0]
    if isinstance(source, torch.fx.Node) and source.op == "call_module":
        sub = gm.get_submodule(str(source.target))
        if id(sub) in hierarchy.blocks:
            return type(sub)
    return None


def _producer(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    source = node.args[0]
    return f"{source.target!r}" if isinstance(source, torch.fx.Node) else "a block"


def _static_item(node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> bool:
    """``out[0]`` of a block that returns a tuple: the flat trace has the item itself."""
    seq = _mapped(node.args[0], env)
    return isinstance(seq, (tuple, list, dict)) and not isinstance(node.args[1], torch.fx.Node)


def _call(gm: torch.nn.Module, target: str, prefix: str, args: Any, kwargs: Any, hierarchy: Hierarchy,
          records: _Records) -> Any:  # fmt: skip
    sub = gm.get_submodule(target)
    path = prefix + target
    block = hierarchy.blocks.get(id(sub))
    if block is not None:
        inputs = [n for n in block.graph.nodes if n.op == "placeholder"]
        env = dict(zip(inputs, args, strict=True))
        outer, records.owner = records.owner, id(sub)
        try:
            return _walk(block, path + ".", env, hierarchy, records)
        finally:
            records.owner = outer
    if id(sub) in hierarchy.kept:
        (value,) = args
        for name in sub._modules:
            value = _call(sub, name, path + ".", (value,), {}, hierarchy, records)
        return value
    records.append(("call_module", hierarchy.paths.get(id(sub), path), args, kwargs))
    return _Ref(len(records) - 1)


def _mapped(value: Any, env: dict[torch.fx.Node, Any]) -> Any:
    return map_aggregate(value, lambda v: env[v] if isinstance(v, torch.fx.Node) else v)


def _record(records: list[tuple[Any, ...]], node: torch.fx.Node, prefix: str, gm: torch.fx.GraphModule,
            env: dict[torch.fx.Node, Any], paths: dict[int, str]) -> _Ref:  # fmt: skip
    target: Any = node.target
    if node.op == "get_attr":
        target = _attribute_key(gm, str(target), prefix, paths)
    elif node.op == "call_module":
        target = paths.get(id(gm.get_submodule(str(target))), prefix + str(target))
    records.append((node.op, target, _mapped(node.args, env), _mapped(node.kwargs, env)))
    return _Ref(len(records) - 1)


def _attribute_key(gm: torch.fx.GraphModule, target: str, prefix: str, paths: dict[int, str]) -> Any:
    """An attribute of the model by its first path in it; a constant torch.fx made while tracing
    (``_tensor_constant0``), named by the graph it is in, by its value."""
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    if id(value) in paths:
        return paths[id(value)]
    if not (isinstance(value, torch.Tensor) and target.rpartition(".")[2].startswith("_tensor_constant")):
        return prefix + target
    data = value.detach().cpu()
    raw = data.numpy().tobytes() if data.dtype == torch.bool else data.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
    return ("constant", str(data.dtype), tuple(data.shape), raw)


def _first_difference(flat: list[tuple[Any, ...]], blocks: list[tuple[Any, ...]]) -> tuple[int, str] | None:
    """Where the expanded hierarchy first differs from the flat graph, and how (outputs last)."""
    for i, (x, y) in enumerate(zip(flat, blocks, strict=False)):
        if _equal(x, y):
            continue
        if len(flat) != len(blocks):
            return i, f"the flat graph has {len(flat) - 1} nodes, traced as blocks {len(blocks) - 1}"
        if x[0] == "output":
            return i, "the blocks return something else than the flat graph"
        return i, f"node {i} of the model's flat graph is {_show(x)}, traced as blocks it is {_show(y)}"
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
