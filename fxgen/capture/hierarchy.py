"""The hierarchy of block calls a model ran, and its proof (``verify``): expanded, it must be the
flat graph.

``fxgen.capture.partition`` reads the hierarchy off the one traced or captured graph, by the
module calls each node recorded (``nn_module_stack``: ``fxgen.capture.trace`` has every tracer
record them). Nothing is taken on trust: the whole hierarchy is expanded, block calls replaced by
their graphs, and compared node for node with the flat graph; any difference and the hierarchy
is refused (``NotTheSame``, naming the class whose graph holds it), so the caller keeps the
blocks that do agree.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_aggregate

from fxgen.capture.options import CaptureOptions
from fxgen.capture.trace import declare_tensor

__all__ = ["Hierarchy", "NotTheSame", "block_classes", "declare_reads", "first_paths",
           "kept_sequentials", "rewrites_state", "verify"]


class NotTheSame(Exception):
    """The blocks chosen cannot be split from the graph, or their graphs expanded are not the
    flat graph: the message says why, for the note export gives; ``culprit`` is the class to
    inline, where it is known (None: a difference nothing points at)."""

    def __init__(self, message: str, culprit: type | None = None, more: dict[type, str] | None = None) -> None:
        super().__init__(message)
        self.culprit = culprit
        self.more = more or {}  # other classes found wrong in the same attempt, and why


@dataclass
class Hierarchy:
    """The top graph and one graph module per block instance (by ``id``), each calling its
    blocks and kept Sequentials as leaves; instances of a class with equal graphs share one."""

    root: torch.fx.GraphModule
    blocks: dict[int, torch.fx.GraphModule] = field(default_factory=dict)
    kept: set[int] = field(default_factory=set)  # ids of the nn.Sequential containers called whole
    # module or tensor (id) -> its first path in the model, the one torch.fx names it by: a module
    # registered twice (``self.act`` also inside ``self.final``) is called at that path
    paths: dict[int, str] = field(default_factory=dict)
    flat: torch.fx.GraphModule | None = None  # the one graph it expands to, node for node (``verify``)
    # block -> the earlier instance of its class whose graph module it shares (an equal graph):
    # its modules and tensors are its own, read at the same paths
    shared: dict[int, int] = field(default_factory=dict)


def block_classes(module: torch.nn.Module, options: CaptureOptions) -> list[type]:
    """The user-defined classes the tracer would trace through, in the order the model holds
    them: candidates for blocks. torch's own classes, containers, GraphModules and leaves the
    caller named are not."""
    base = options.tracer_class or torch.fx.Tracer
    tracer = base()
    leaf_types = tuple(t for t in options.leaf_modules if isinstance(t, type))
    leaf_paths = {t for t in options.leaf_modules if isinstance(t, str)}
    found: dict[type, None] = {}
    for path, sub in module.named_modules():
        cls = type(sub)
        if not path or cls in found or isinstance(sub, (torch.fx.GraphModule, *leaf_types)):
            continue
        if path in leaf_paths or cls.__module__.split(".")[0] == "torch":
            continue
        try:
            if tracer.is_leaf_module(sub, path):
                continue
        except Exception:  # a tracer that needs a trace under way to answer: not a block
            continue
        found[cls] = None
    return list(found)


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


def declare_reads(gm: torch.fx.GraphModule, blocks: dict[int, torch.fx.GraphModule],
                  instance: torch.nn.Module | None = None) -> None:  # fmt: skip
    """A tensor ``gm`` reads through a block it calls (``embed.ids``: Hugging Face's models slice
    their embeddings' buffer) is declared by that block's graph module too, as the original
    holds it, so the block's class has it: a block declares only what it reads and its state
    dict otherwise, and a non-persistent buffer is in neither. ``instance``: the block whose
    call ``gm`` is (instances with equal graphs share one), its modules read."""
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        parts = str(node.target).split(".")
        owner: torch.nn.Module = gm if instance is None else instance
        for i, part in enumerate(parts[:-1]):
            owner = getattr(owner, part)
            block = blocks.get(id(owner))
            if block is not None:
                rest = parts[i + 1:]
                declare_tensor(block, ".".join(rest), owner.get_submodule(".".join(rest[:-1])))
                break


def rewrites_state(module: torch.nn.Module) -> bool:
    """Whether ``module`` writes its state dict other than as its parameters and buffers."""
    cls = type(module)
    return bool(
        module._state_dict_hooks
        or module._state_dict_pre_hooks
        or cls._save_to_state_dict is not torch.nn.Module._save_to_state_dict
        or getattr(cls, "get_extra_state", torch.nn.Module.get_extra_state) is not torch.nn.Module.get_extra_state
    )


def first_paths(module: torch.nn.Module) -> dict[int, str]:
    paths: dict[int, str] = {}
    for named in (module.named_modules(), module.named_parameters(), module.named_buffers()):
        for path, value in named:
            paths.setdefault(id(value), path)
    return paths


def kept_sequentials(module: torch.nn.Module, blocks: dict[int, torch.nn.Module], options: CaptureOptions) -> set[int]:
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
    records.append(("output", _walk(hierarchy.root, hierarchy.root, "", env, hierarchy, records)))
    return records


def _walk(gm: torch.fx.GraphModule, owner: torch.nn.Module, prefix: str, env: dict[torch.fx.Node, Any],
          hierarchy: Hierarchy, records: _Records) -> Any:  # fmt: skip
    """``gm``'s graph expanded, its modules and tensors those of ``owner`` (the block instance
    whose call it is: instances with equal graphs share one)."""
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            return _mapped(node.args[0], env)
        if node.op == "call_module":
            env[node] = _call(owner, str(node.target), prefix, _mapped(node.args, env), _mapped(node.kwargs, env),
                              hierarchy, records)  # fmt: skip
        elif node.op == "call_function" and node.target is operator.getitem and _static_item(node, env):
            try:
                env[node] = _mapped(node.args[0], env)[node.args[1]]
            except (KeyError, IndexError, TypeError):  # (a ModelOutput returned as a plain dict)
                raise NotTheSame(f"{_producer(gm, node)} returns a value its caller cannot index with "
                                 f"{node.args[1]!r} once the block is a class of its own", _block_type(owner, node, hierarchy)) from None
        else:
            env[node] = _record(records, node, prefix, owner, env, hierarchy.paths)
    return None


def _block_type(owner: torch.nn.Module, node: torch.fx.Node, hierarchy: Hierarchy) -> type | None:
    """The block class whose call made ``node``'s first argument, if a block's call did."""
    source = node.args[0]
    if isinstance(source, torch.fx.Node) and source.op == "call_module":
        sub = owner.get_submodule(str(source.target))
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
            return _walk(block, sub, path + ".", env, hierarchy, records)
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


def _record(records: list[tuple[Any, ...]], node: torch.fx.Node, prefix: str, owner: torch.nn.Module,
            env: dict[torch.fx.Node, Any], paths: dict[int, str]) -> _Ref:  # fmt: skip
    target: Any = node.target
    if node.op == "get_attr":
        target = _attribute_key(owner, str(target), prefix, paths)
    elif node.op == "call_module":
        target = paths.get(id(owner.get_submodule(str(target))), prefix + str(target))
    records.append((node.op, target, _mapped(node.args, env), _mapped(node.kwargs, env)))
    return _Ref(len(records) - 1)


def _attribute_key(gm: torch.nn.Module, target: str, prefix: str, paths: dict[int, str]) -> Any:
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
