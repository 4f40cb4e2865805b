"""A format-2 spec with its blocks opened to a depth: what ``fxgen show --depth N`` looks at.

Opening a block call replaces the ``call_module`` node with the block's own nodes for that
instance: its placeholders become the call's arguments (or their defaults), its ``get_attr`` and
``call_module`` targets live under the module's path (``mlp.fc1``), its declarations are those of
the instance (its constructor arguments substituted), and what its output returns takes the
call's place in the nodes after it. Node names are the module path's, joined with ``_``
(``mlp_h``), made unique. The result is a plain spec of the same model: its table, its shapes and
its pictures are those of the opened graph, and its parameters are the same tensors at the same
paths, so counts per module do not change. Data in, data out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fxgen.assemble.module import concrete_declarations, default_instance, instance_spec
from fxgen.spec.model import (
    NO_DEFAULT,
    BufferSpec,
    Item,
    ModuleSpec,
    Node,
    ParameterSpec,
    Spec,
    walk_nodes,
)
from fxgen.spec.resolve import bind, cases, resolve_nodes, spec_functions, with_values
from fxgen.spec.values import parse_ref

__all__ = ["expand_blocks"]


def expand_blocks(spec: Spec, depth: int, args: Mapping[str, Any] | None = None) -> Spec:
    """``spec`` (validated) with every block call opened, and the calls inside those, ``depth``
    levels deep (0: ``spec`` itself), each body as the plain graph of its instance (in eval mode
    where it depends on the mode); a ``torch.nn.Sequential`` on the way is opened into the
    calls of its items without counting as a level. ``args``: the top class's arguments, over
    their defaults (the blocks' arguments are computed from them, as the model is built)."""
    if depth <= 0 or not spec.classes:
        return spec
    out = _Opened(spec)
    values = with_values(bind(spec.args, [], dict(args or {})), spec.values, spec_functions(spec))
    spec = instance_spec(spec, values) if args else default_instance(spec)[0]
    nodes = out.body(walk_nodes(spec.nodes), concrete_declarations(spec, values), prefix="", names="", inputs=None,
                     depth=depth)  # fmt: skip
    assert isinstance(nodes, list)
    modules = {path: item for path, item in spec.modules.items() if path not in out.opened}
    opened: list[Item] = list(out.nodes)
    return Spec(name=spec.name, nodes=opened, doc=spec.doc, modules={**modules, **out.modules},
                parameters={**spec.parameters, **out.parameters}, buffers={**spec.buffers, **out.buffers},
                fxgen=spec.fxgen, args=spec.args, classes=spec.classes, values=spec.values, functions=spec.functions,
                inputs=spec.inputs)  # fmt: skip


@dataclass
class _Opened:
    """The opened graph as it is written: its nodes, the names taken, and the declarations of
    every opened block instance."""

    spec: Spec
    nodes: list[Node] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)  # top-level module paths opened
    modules: dict[str, ModuleSpec] = field(default_factory=dict)
    parameters: dict[str, ParameterSpec] = field(default_factory=dict)
    buffers: dict[str, BufferSpec] = field(default_factory=dict)

    def body(
        self, nodes: list[Node], declared: Spec, *, prefix: str, names: str, inputs: dict[str, Any] | None, depth: int
    ) -> Any:
        """Write ``nodes`` (a body whose declarations are ``declared``, concrete) under module
        path ``prefix``; ``inputs``: the encoded value of each placeholder (None at the top,
        whose placeholders stay). Returns what the body's output returns (encoded), at the top
        the node list."""
        renamed: dict[str, Any] = {}
        modules = dict(declared.modules)
        todo = list(reversed(nodes))
        while todo:
            node = todo.pop()
            if inputs is not None and node.op == "placeholder":
                assert node.name is not None
                renamed[node.name] = inputs[node.name]
                continue
            if inputs is not None and node.op == "output":
                return _remap(node.args[0], renamed)
            if node.op == "call_module" and depth > 0 and node.target not in modules:
                self.spread(node.target or "", modules, prefix)
            entry = modules.get(node.target or "") if node.op == "call_module" and depth > 0 else None
            if entry is not None and node.target is not None and (items := _chain(node, entry)) is not None:
                # a Sequential of blocks: its items called one after the other, each then opened
                paths = [f"{node.target}.{i}" for i in range(len(items))]
                modules.update(zip(paths, items, strict=True))
                self.declare(prefix + node.target, {prefix + path: item for path, item in zip(paths, items, strict=True)})
                values = [f"%{node.name}" if i == len(items) - 1 else f"%{node.name}_{i}" for i in range(len(items))]
                calls = [Node("call_module", values[i][1:], path, [node.args[0] if i == 0 else values[i - 1]])
                         for i, path in enumerate(paths)]  # fmt: skip
                todo.extend(reversed(calls))
                continue
            if entry is not None and entry.cls in self.spec.classes:
                assert node.name is not None and node.target is not None
                renamed[node.name] = self.call(node, entry, renamed, prefix=prefix, depth=depth)
                continue
            name = self.fresh(names + (node.name or node.op))
            if node.name is not None:
                renamed[node.name] = "%" + name
            target = prefix + node.target if node.op in ("get_attr", "call_module") and node.target else node.target
            self.nodes.append(Node(node.op, name, target, _remap(node.args, renamed), _remap(node.kwargs, renamed),
                                   node.type, node.default))  # fmt: skip
        return self.nodes

    def spread(self, target: str, modules: dict[str, ModuleSpec], prefix: str) -> None:
        """A call of an item of a declared ``ModuleList`` or ``Sequential`` (``h.0``): the
        container declared as its items, each on its own path, so the item can be opened."""
        parent, _, index = target.rpartition(".")
        items = _items(modules[parent]) if parent in modules else None
        if items is None or not index.isdigit() or int(index) >= len(items):
            return
        paths = [f"{parent}.{i}" for i in range(len(items))]
        del modules[parent]
        modules.update(zip(paths, items, strict=True))
        self.declare(prefix + parent, {prefix + path: item for path, item in zip(paths, items, strict=True)})

    def declare(self, path: str, items: Mapping[str, Any], table: str = "modules") -> None:
        """The opened module at ``path`` stands for the declarations ``items`` (full paths)."""
        self.modules.pop(path, None)
        if path in self.spec.modules:  # declared at the top: the spec's own declaration goes
            self.opened.add(path)
        getattr(self, table).update(items)

    def call(self, node: Node, entry: ModuleSpec, renamed: dict[str, Any], *, prefix: str, depth: int) -> Any:
        """Open the call ``node`` of block ``entry`` (declared concrete) in place; what it returns."""
        assert node.target is not None
        body = self.spec.classes[entry.cls]
        values = with_values(bind(body.args, entry.args, entry.kwargs), body.values, spec_functions(self.spec))
        block = concrete_declarations(self.spec.block(entry.cls), values)
        path = prefix + node.target
        for table in ("parameters", "buffers", "modules"):  # a module called twice: the same paths again
            self.declare(path, {f"{path}.{inner}": item for inner, item in getattr(block, table).items()}, table)
        placeholders = [n for n in walk_nodes(body.nodes) if n.op == "placeholder"]
        args = _remap(node.args, renamed)
        kwargs = _remap(node.kwargs, renamed)
        inputs: dict[str, Any] = {}
        for i, placeholder in enumerate(placeholders):
            assert placeholder.name is not None
            if i < len(args):
                inputs[placeholder.name] = args[i]
            elif placeholder.name in kwargs:
                inputs[placeholder.name] = kwargs[placeholder.name]
            else:
                inputs[placeholder.name] = None if placeholder.default is NO_DEFAULT else placeholder.default
        names = path.replace(".", "_") + "_"
        nodes = _instance(body.nodes, values)
        return self.body(nodes, block, prefix=path + ".", names=names, inputs=inputs, depth=depth - 1)

    def fresh(self, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``... when a node has it already."""
        candidate, n = name, 0
        while candidate in self.taken:
            n += 1
            candidate = f"{name}_{n}"
        self.taken.add(candidate)
        return candidate


def _instance(items: list[Item], values: Mapping[str, Any]) -> list[Node]:
    """A body's plain graph for one instance: its conditionals taken and loops unrolled (in
    eval mode where the graph depends on the mode: what a model is shown as)."""
    return resolve_nodes(items, {**values, **cases(items)[0]})  # eval mode, every input given


def _chain(node: Node, entry: ModuleSpec) -> list[ModuleSpec] | None:
    """The items of a ``torch.nn.Sequential`` called on one value (which it hands from item to
    item), or None for any other call."""
    if entry.cls != "torch.nn.Sequential" or node.kwargs or len(node.args) != 1:
        return None
    return _items(entry)


def _items(entry: ModuleSpec) -> list[ModuleSpec] | None:
    """The declarations of a ``Sequential``'s or ``ModuleList``'s items, each a module value
    (repeats already made copies), or None for anything else."""
    items = entry.args[0] if entry.cls == "torch.nn.ModuleList" and len(entry.args) == 1 else entry.args
    if entry.cls not in ("torch.nn.Sequential", "torch.nn.ModuleList") or entry.kwargs or not isinstance(items, list):
        return None
    if not items or not all(isinstance(item, dict) and set(item) == {"module"} for item in items):
        return None
    return [ModuleSpec.from_data(item["module"]) for item in items]


def _remap(value: Any, renamed: Mapping[str, Any]) -> Any:
    """An encoded value with each reference to a node replaced by what the node became."""
    if isinstance(value, str):
        ref = parse_ref(value)
        return renamed.get(ref, value) if ref is not None else value
    if isinstance(value, list):
        return [_remap(item, renamed) for item in value]
    if isinstance(value, dict):
        return {key: _remap(item, renamed) for key, item in value.items()}
    return value

