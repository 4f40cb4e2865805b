"""A flat graph -> the hierarchy of block calls it ran (``fxgen.capture.hierarchy.Hierarchy``),
in one pass and without tracing anything again.

torch.fx's tracer and TorchDynamo both record on every node the module calls it ran inside
(``nn_module_stack``, outermost first, one key per call: the module's path for a trace, its id
for Dynamo, ``@N`` for the N-th call). The nodes of one call of a block are therefore one piece
of the graph, its region. Each region becomes the block's graph: the values it reads from
outside become its placeholders (in the order it first reads them), and its parent calls it. It
returns what its ``forward`` returned where the trace recorded that (``trace.ModuleCalls``: a
value, or a tuple or list its caller indexes), else the values read after it (a tuple when
there are several). A tensor attribute is read inside the innermost block that owns it, and
passed in to blocks that do not. An ``nn.Sequential`` of blocks and torch modules whose items
hand one value on from one to the next stays one call. Inputs are named after the ``forward``
parameters they came in by: from the arguments the tracer recorded, or for a capture as
``fxgen.capture.arguments`` measures them.

Nothing is taken on trust: the hierarchy expanded must be the flat graph node for node
(``hierarchy.verify``), and every call of one instance must give the same graph. A region in
pieces, or a block that calls a module or reads a tensor it does not own, is refused
(``NotTheSame`` naming the class), so the caller inlines that class and tries the rest.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_arg

from fxgen.capture.fold import stack_module
from fxgen.capture.hierarchy import (
    Hierarchy,
    NotTheSame,
    declare_reads,
    first_paths,
    kept_sequentials,
    rewrites_state,
    verify,
)
from fxgen.capture.lift import attribute_at, shallow_root, tensor_paths
from fxgen.capture.options import CaptureOptions
from fxgen.capture.trace import (
    CALLS_KEY,
    ModuleCalls,
    TracedGraphModule,
    declare_unread_state,
    fix_buffers,
    forward_signature,
    resolve_annotations,
)

__all__ = ["partition_blocks"]


Chain = tuple[str, ...]  # the keys of the block (and kept Sequential) calls a node ran inside
Returned = torch.fx.Node | tuple[Any, ...] | list[Any]  # a block's result: one value, or items its caller indexes


def partition_blocks(module: torch.nn.Module, flat: torch.fx.GraphModule, classes: Iterable[type],
                     options: CaptureOptions) -> Hierarchy:  # fmt: skip
    """``flat`` (a symbolic trace of ``module``, or its lifted Dynamo capture) split into the calls
    of the instances of ``classes``; NotTheSame unless the hierarchy expanded is the graph node
    for node."""
    wanted = tuple(classes)
    blocks = {id(m): m for m in module.modules() if m is not module and type(m) in wanted}
    kept = kept_sequentials(module, blocks, options)
    while True:
        try:
            return _Partition(module, flat, blocks, kept).hierarchy()
        except _Unkept as exc:  # called whole it would not compute the same: its items are called one by one
            kept = kept - {exc.key}


class _Unkept(Exception):
    """A Sequential that cannot be called whole (its items do not hand one value on)."""

    def __init__(self, key: int) -> None:
        super().__init__(key)
        self.key = key


@dataclass
class _Region:
    """The nodes of one call of a block (or kept Sequential), nested calls as regions."""

    key: str
    module: torch.nn.Module
    items: list[torch.fx.Node | _Region] = field(default_factory=list)

    @functools.cached_property
    def inside(self) -> frozenset[torch.fx.Node]:
        """Its nodes, nested calls' included (asked once the regions are complete)."""
        return frozenset(self.nodes())

    def nodes(self) -> list[torch.fx.Node]:
        """Its nodes in graph order, nested calls' included (one walk, no generator per level)."""
        found: list[torch.fx.Node] = []
        stack = [iter(self.items)]
        while stack:
            for item in stack[-1]:
                if isinstance(item, _Region):
                    stack.append(iter(item.items))
                    break
                found.append(item)
            else:
                stack.pop()
        return found


class _Partition:
    def __init__(self, module: torch.nn.Module, flat: torch.fx.GraphModule, blocks: dict[int, torch.nn.Module],
                 kept: set[int]) -> None:  # fmt: skip
        self.module = module
        self.flat = flat
        self.blocks = blocks
        self.kept = kept
        self.submodules = {id(m): (path, m) for path, m in module.named_modules() if path}  # (fold's lookup)
        # A trace names each module call by the module's path (``path@N`` for the N-th call), a
        # Dynamo capture by its id: the trace's record of the calls' arguments tells which.
        self.traced: ModuleCalls | None = flat.meta.get(CALLS_KEY)
        self.by_path = {path: m for path, m in module.named_modules() if path} if self.traced is not None else {}
        self.origin: dict[torch.fx.Node, torch.fx.Node] = {}  # node of the prepared graph -> of ``flat``
        self.prepared_of: dict[torch.fx.Node, torch.fx.Node] = {}  # and back (``get_attr`` nodes aside)
        self.called: dict[str, torch.nn.Module] = {}  # stack key -> the block or Sequential it calls
        self._tensors: dict[int, dict[int, str]] = {}  # module -> tensor id -> its path in the module
        self._modules: dict[int, dict[int, str]] = {}  # module -> submodule id -> its path in the module
        self.calls: dict[int, list[list[torch.fx.Node]]] = {}  # block -> what each of its calls reads from outside
        self.call_keys: dict[int, list[str]] = {}  # block -> the stack key of each of its calls
        self.returns_whole: set[int] = set()  # blocks whose graph returns what their forward returns
        self.shapes: dict[tuple[Any, ...], int] = {}  # what makes two instances' graph modules the same -> the first
        self.shape_of: dict[int, tuple[Any, ...]] = {}  # block -> the shape of its first call
        self.done: dict[int, tuple[list[torch.fx.Node], Returned]] = {}  # region (id) -> what _block gave
        self._found: dict[str, Any] = {}  # stack key -> (its entry, the (path, module) it names or None)

    def hierarchy(self) -> Hierarchy:
        prepared, chains = self._prepared()
        root = self._regions(prepared, chains)
        hierarchy = Hierarchy(root=prepared, paths=first_paths(self.module))
        graph = torch.fx.Graph()
        self._fill(graph, root, {}, hierarchy)
        hierarchy.root = self._graph_module(graph, self.module)
        declare_reads(hierarchy.root, hierarchy.blocks)
        for key, gm in hierarchy.blocks.items():  # each instance, through its own blocks
            declare_reads(gm, hierarchy.blocks, self.submodules[key][1])
        own = {key: gm for key, gm in hierarchy.blocks.items() if key not in hierarchy.shared}  # one per graph
        self._name_inputs(prepared, hierarchy)
        if self.traced is not None:
            for key, gm in own.items():
                _annotate(gm, self.submodules[key][1], returns_whole=key in self.returns_whole)
        verify(hierarchy, prepared, self.blocks)
        return hierarchy

    # -- which calls each node ran inside ----------------------------------------------------
    def _chain(self, node: torch.fx.Node) -> Chain:
        keys = []
        for key, entry in (node.meta.get("nn_module_stack") or {}).items():
            found = self._found.get(key, _MISSING)  # (a call's entry is the same on each of its nodes)
            if found is _MISSING or found[0] != entry:
                found = (entry, stack_module(key, entry, self.submodules) if self.traced is None
                         else self._at_path(key, entry))  # fmt: skip
                self._found[key] = found
            called = found[1]
            if called is not None and (id(called[1]) in self.blocks or id(called[1]) in self.kept):
                self.called[key] = called[1]
                keys.append(key)
        return tuple(keys)

    def _at_path(self, key: str, entry: Any) -> tuple[str, torch.nn.Module] | None:
        """The (path, module) a symbolic trace's stack entry names; its class must agree."""
        path = str(key).split("@", 1)[0]
        found = self.by_path.get(path)
        if found is None or not isinstance(entry, tuple) or len(entry) < 2 or type(found) is not entry[1]:
            return None
        return path, found

    def _prepared(self) -> tuple[torch.fx.GraphModule, dict[torch.fx.Node, Chain]]:
        """``flat`` with each ``get_attr`` read where it is used: one copy per place that reads
        it (the innermost block owning the tensor, or the top), just before that place's first
        use. The same computation; each call of a block is then one piece of the graph. A graph
        that reads no tensor this way (most conv nets call every layer) is used as it is: its
        copy would be the same graph, node for node."""
        nodes = list(self.flat.graph.nodes)
        chains = {n: (self._chain(n) if n.op not in ("placeholder", "output") else ()) for n in nodes if n.op != "get_attr"}
        if len(chains) == len(nodes):  # (no ``get_attr`` node)
            self.prepared_of = {node: node for node in nodes}
            self.origin = dict(self.prepared_of)
            return self.flat, chains
        index = {node: i for i, node in enumerate(nodes)}
        start: dict[Chain, int] = {}
        for node, chain in chains.items():
            for depth in range(1, len(chain) + 1):
                start.setdefault(chain[:depth], index[node])
        home: dict[tuple[torch.fx.Node, Chain], Chain] = {}
        before: dict[int, list[tuple[torch.fx.Node, Chain]]] = {}
        for node in nodes:
            if node.op != "get_attr":
                continue
            tensor = attribute_at(self.flat, str(node.target))
            first: dict[Chain, int] = {}
            for user in node.users:
                chain = chains[user]
                at_home = home.get((node, chain))
                if at_home is None:
                    at_home = home[(node, chain)] = self._home(chain, tensor)
                at = start[chain[: len(at_home) + 1]] if len(chain) > len(at_home) else index[user]
                first[at_home] = min(first.get(at_home, at), at)
            for at_home, at in first.items():
                before.setdefault(at, []).append((node, at_home))
        graph = torch.fx.Graph()
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        copies: dict[tuple[torch.fx.Node, Chain], torch.fx.Node] = {}
        new_chains: dict[torch.fx.Node, Chain] = {}
        for i, node in enumerate(nodes):
            if node.op == "get_attr":
                continue
            for attr, at_home in before.get(i, ()):
                copies[(attr, at_home)] = copy = graph.node_copy(attr)
                new_chains[copy] = at_home
            chain = chains[node]

            def read(arg: torch.fx.Node, chain: Chain = chain) -> torch.fx.Node:
                return copies[(arg, home[(arg, chain)])] if arg.op == "get_attr" else env[arg]

            env[node] = graph.node_copy(node, read)
            new_chains[env[node]] = chain
        self.prepared_of = env
        self.origin = {new: old for old, new in env.items()}
        self.origin.update({copy: attr for (attr, _), copy in copies.items()})
        return TracedGraphModule(self.flat, graph, class_name=type(self.flat).__name__), new_chains

    def _home(self, chain: Chain, tensor: Any) -> Chain:
        """The longest prefix of ``chain`` whose innermost block owns ``tensor``, else the top."""
        for depth in range(len(chain), 0, -1):
            sub = self.called[chain[depth - 1]]
            if id(sub) in self.blocks and id(tensor) in self._tensor_paths(sub):
                return chain[:depth]
        return ()

    def _regions(self, prepared: torch.fx.GraphModule, chains: dict[torch.fx.Node, Chain]) -> _Region:
        root = _Region("", self.module)
        open_regions = [root]
        closed: set[str] = set()
        for node in prepared.graph.nodes:
            chain = chains[node]
            depth = 0
            while depth < len(chain) and depth + 1 < len(open_regions) and open_regions[depth + 1].key == chain[depth]:
                depth += 1
            while len(open_regions) > depth + 1:
                closed.add(open_regions.pop().key)
            for key in chain[depth:]:
                if key in closed:
                    raise self._refuse(key, "its nodes are not one piece of the captured graph")
                region = _Region(key, self.called[key])
                open_regions[-1].items.append(region)
                open_regions.append(region)
            open_regions[-1].items.append(node)
        return root

    # -- one graph per region ------------------------------------------------------------------
    def _fill(self, graph: torch.fx.Graph, region: _Region, env: dict[torch.fx.Node, torch.fx.Node],
              hierarchy: Hierarchy) -> None:  # fmt: skip
        """Write ``region``'s items into ``graph``: nodes copied (targets relative to the region's
        module, default names), nested regions as calls."""
        for item in region.items:
            if isinstance(item, _Region):
                self._call(graph, region, item, env, hierarchy)
                continue
            if item.op in ("placeholder", "output"):  # the top graph's own
                env[item] = graph.node_copy(item, env.__getitem__)
                continue
            new = graph.create_node(item.op, self._target(region, item), map_arg(item.args, env.__getitem__),
                                    map_arg(item.kwargs, env.__getitem__), type_expr=item.type)  # fmt: skip
            new.meta = dict(item.meta)
            env[item] = new

    def _target(self, region: _Region, node: torch.fx.Node) -> Any:
        """``node``'s target in the region's graph: a module or tensor by its path in the region's
        module (the block calls and reads only what it owns)."""
        target: Any = node.target
        if node.op == "call_module":
            return self._module_path(region, attribute_at(self.flat, str(target)))
        if node.op == "get_attr":
            tensor = attribute_at(self.flat, str(target))
            target = self._tensor_paths(region.module).get(id(tensor), target if region.key == "" else None)
            if target is None:
                raise self._refuse(region.key, f"it reads {node.target!r}, which it does not own")
        return target

    def _call(self, graph: torch.fx.Graph, parent: _Region, region: _Region, env: dict[torch.fx.Node, torch.fx.Node],
              hierarchy: Hierarchy) -> None:  # fmt: skip
        if id(region.module) in self.kept:
            value, result = self._chained(region, hierarchy)
            env[result] = graph.call_module(self._module_path(parent, region.module), (env[value],))
            hierarchy.kept.add(id(region.module))
            return
        inputs, out = self._block(region, hierarchy)
        call = graph.call_module(self._module_path(parent, region.module), tuple(env[a] for a in inputs))
        if isinstance(out, torch.fx.Node):
            env[out] = call
            return
        for i, value in self._picked(parent, region, out, env):
            env[value] = graph.call_function(operator.getitem, (call, i))

    def _picked(self, parent: _Region, region: _Region, out: tuple[Any, ...] | list[Any],
                defined: dict[torch.fx.Node, Any]) -> list[tuple[int, torch.fx.Node]]:  # fmt: skip
        """The items of a block's result its parent takes (``out[i]``): each value read after the
        call or returned by the parent, once."""
        inside = region.inside
        handed_on = self._returned_by(parent)
        picked: list[tuple[int, torch.fx.Node]] = []
        seen: set[torch.fx.Node] = set()
        for i, value in enumerate(out):
            if isinstance(value, torch.fx.Node) and value in inside and value not in defined and value not in seen and (
                    value in handed_on or any(user not in inside for user in value.users)):  # fmt: skip
                picked.append((i, value))
                seen.add(value)
        return picked

    def _returned_by(self, region: _Region) -> set[torch.fx.Node]:
        """The values the trace recorded ``region``'s call returning."""
        recorded = self._recorded(region)
        return {v for v in _items(recorded) if isinstance(v, torch.fx.Node)} if recorded is not None else set()

    def _recorded(self, region: _Region) -> Returned | None:
        """What the trace recorded ``region``'s call returning, as nodes of this graph; None for
        the top, a Dynamo capture, a result that is not a value or a flat tuple or list of values
        and constants, or one holding a tensor attribute (read where it is used, no one node)."""
        returned = self.traced.result(region.key) if self.traced is not None and region.key else None
        if returned is None:
            return None
        items = _items(returned)
        if any(isinstance(v, torch.fx.Node) and v not in self.prepared_of for v in items):
            return None
        if isinstance(returned, torch.fx.Node):
            return self.prepared_of[returned]
        return type(returned)(self.prepared_of[v] if isinstance(v, torch.fx.Node) else v for v in returned)

    def _block(self, region: _Region, hierarchy: Hierarchy) -> tuple[list[torch.fx.Node], Returned]:
        """The block's graph (kept in ``hierarchy.blocks``), the values it reads from outside (in
        graph order) and what it hands back: one value, or items its caller indexes."""
        done = self.done.get(id(region))
        if done is not None:  # (split off while the shape of its caller was taken)
            return done
        inside = region.inside
        given: dict[torch.fx.Node, None] = {}  # (ordered, each once)
        results: list[torch.fx.Node] = []
        for node in region.nodes():
            for arg in node.all_input_nodes:
                if arg not in inside:
                    given[arg] = None
            if any(user not in inside for user in node.users):
                results.append(node)
        inputs = list(given)
        names = _input_names(region.module, len(inputs))
        items, defined = self._shape(region, inputs, hierarchy)
        returned = self._returned(region, inside, inputs, results)
        if returned is not None and not all(v in defined for v in _items(returned) if isinstance(v, torch.fx.Node)):
            returned = None  # (an item a nested block computes and nothing reads: not handed out by it)
        out: Returned = returned if returned is not None else results[0] if len(results) == 1 else tuple(results)
        shape = (type(region.module), returned is not None, tuple(names), items, _output_key(out, defined))
        key = id(region.module)
        self.calls.setdefault(key, []).append(inputs)
        self.call_keys.setdefault(key, []).append(region.key)
        if returned is not None and key not in hierarchy.blocks:
            self.returns_whole.add(key)
        before = hierarchy.blocks.get(key)
        if before is None:
            self.shape_of[key] = shape
            if not self._shares(shape, region.module, hierarchy):
                hierarchy.blocks[key] = self._graph_module(self._graph(region, inputs, names, out, hierarchy), region.module)
        elif self.shape_of[key] != shape and (before.graph.python_code("self").src
                                              != self._graph(region, inputs, names, out, hierarchy).python_code("self").src):  # fmt: skip
            raise self._refuse(region.key, "two of its calls compute different graphs")
        self.done[id(region)] = inputs, out
        return inputs, out

    def _graph(self, region: _Region, inputs: list[torch.fx.Node], names: list[str], out: Returned,
               hierarchy: Hierarchy) -> torch.fx.Graph:  # fmt: skip
        """The graph of one call of a block: its inputs as placeholders, its nodes, its result."""
        graph = torch.fx.Graph()
        env = {arg: graph.placeholder(name) for arg, name in zip(inputs, names, strict=True)}
        self._fill(graph, region, env, hierarchy)
        if isinstance(out, torch.fx.Node):
            graph.output(env[out])
        else:  # (an empty tuple: the block's result is not used, ``return None``)
            graph.output(type(out)(env[v] if isinstance(v, torch.fx.Node) else v for v in out) or None)
        return graph

    def _shape(self, region: _Region, inputs: list[torch.fx.Node],
               hierarchy: Hierarchy) -> tuple[tuple[Any, ...], dict[torch.fx.Node, int]]:  # fmt: skip
        """What ``_graph`` would write for the region, item by item, without writing it (values
        by their place, constants as ``_value_key`` has them), and the values it defines: two
        calls with equal shapes (and input names and results) give equal graphs. The blocks it
        calls are split off on the way, once (``_block`` remembers each call)."""
        defined = {arg: i for i, arg in enumerate(inputs)}
        items: list[Any] = []
        for item in region.items:
            if isinstance(item, torch.fx.Node):
                items.append((item.op, _value_key(self._target(region, item)), _value_key(item.args, defined),
                              _value_key(item.kwargs, defined), _value_key(item.type)))  # fmt: skip
                defined[item] = len(defined)
                continue
            path = self._module_path(region, item.module)
            if id(item.module) in self.kept:
                value, result = self._chained(item, hierarchy)
                hierarchy.kept.add(id(item.module))
                items.append(("kept", path, defined[value]))
                defined[result] = len(defined)
                continue
            called, out = self._block(item, hierarchy)
            if isinstance(out, torch.fx.Node):
                items.append(("block", path, tuple(defined[a] for a in called)))
                defined[out] = len(defined)
                continue
            picked = self._picked(region, item, out, defined)
            items.append(("block", path, tuple(defined[a] for a in called), tuple(i for i, _ in picked)))
            for _, value in picked:
                defined[value] = len(defined)
        return tuple(items), defined

    def _shares(self, shape: tuple[Any, ...], block: torch.nn.Module, hierarchy: Hierarchy) -> bool:
        """Whether the block's first call shares the graph module of an earlier instance of its
        class: an equal graph, and a state dict with the same keys (so the same tensors it never
        reads are declared). Not where a state dict is rewritten or the instance has a forward
        of its own."""
        state = self._state_keys
        if state is None or "forward" in vars(block):
            return False
        whole = (shape, state.get(self.submodules[id(block)][0], ()))
        first = self.shapes.get(whole)
        if first is None:
            self.shapes[whole] = id(block)
            return False
        hierarchy.shared[id(block)] = first
        hierarchy.blocks[id(block)] = hierarchy.blocks[first]
        return True

    def _returned(self, region: _Region, inside: frozenset[torch.fx.Node], inputs: list[torch.fx.Node],
                  results: list[torch.fx.Node]) -> Returned | None:  # fmt: skip
        """What a traced block's forward returned in this call, when it holds every value read
        after the call and only values the block computes or was given; None otherwise: the
        block then returns the values read after it, in graph order."""
        recorded = self._recorded(region)
        if recorded is None:
            return None
        nodes = {v for v in _items(recorded) if isinstance(v, torch.fx.Node)}
        return recorded if set(results) <= nodes <= inside | set(inputs) else None

    def _chained(self, region: _Region, hierarchy: Hierarchy) -> tuple[torch.fx.Node, torch.fx.Node]:
        """A kept Sequential's input and result: each child called once, in order, on what the
        one before gave, nothing else read or handed on; else it is not kept (``_Unkept``)."""
        children = list(region.module.children())
        if len(region.items) != len(children) or len(region.module._modules) != len(children):
            raise _Unkept(id(region.module))
        first: torch.fx.Node | None = None
        value: torch.fx.Node | None = None
        for child, item in zip(children, region.items, strict=True):
            if isinstance(item, _Region) and item.module is child:
                if id(child) in self.kept:
                    given, result = self._chained(item, hierarchy)
                    hierarchy.kept.add(id(child))  # (a Sequential inside a kept one is called whole too)
                else:
                    inputs, out = self._block(item, hierarchy)
                    if len(inputs) != 1 or not isinstance(out, torch.fx.Node):
                        raise _Unkept(id(region.module))
                    given, result = inputs[0], out
            elif (isinstance(item, torch.fx.Node) and item.op == "call_module" and len(item.args) == 1
                  and not item.kwargs and attribute_at(self.flat, str(item.target)) is child):  # fmt: skip
                given, result = item.args[0], item  # type: ignore[assignment]
            else:
                raise _Unkept(id(region.module))
            if not isinstance(given, torch.fx.Node) or (value is not None and given is not value):
                raise _Unkept(id(region.module))
            if first is None:
                first = given
            value = result
        inside = region.inside
        if first is None or value is None or any(
            user not in inside for node in inside - {value} for user in node.users
        ):
            raise _Unkept(id(region.module))
        return first, value

    def _name_inputs(self, prepared: torch.fx.GraphModule, hierarchy: Hierarchy) -> None:
        """Name each block's placeholders after the forward parameters they came in by, where
        ``fxgen.capture.arguments`` can tell (the same for every instance of a class)."""
        from fxgen.capture.arguments import EXAMPLE_KEY, agreed_names, parameter_names

        instances = {key: self.submodules[key][1] for key in self.calls}
        if self.traced is not None:  # the tracer saw the arguments: which node each parameter was given
            traced = self.traced
            given = {key: [traced.parameters(call, block) for call in self.call_keys[key]]
                     for key, block in instances.items()}  # fmt: skip
            found = agreed_names(self.calls, instances, given, self.origin.get)
        else:
            found = parameter_names(self.module, prepared, self.flat.meta.get(EXAMPLE_KEY), self.calls, instances)
        for key, names in found.items():
            if key in hierarchy.shared:  # (named with the instance whose graph module it shares: a class's names agree)
                continue
            gm = hierarchy.blocks[key]
            placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
            others = {n.name for n in gm.graph.nodes if n.op != "placeholder"}
            if len(names) != len(placeholders) or others & set(names) or not all(_plain_name(n) for n in names):
                continue
            for node, name in zip(placeholders, names, strict=True):
                if node.target != name:  # (named so already: ``input`` is written ``input_1``)
                    node._rename(name)  # (``arg1`` itself may be taken: then ``arg1_1``, still right)
                    node.target = node.name
            gm.recompile()

    @functools.cached_property
    def _model_keys(self) -> list[str] | None:
        """The model's state-dict keys; None when anything rewrites a state dict (then a
        submodule's own may differ from its part of the model's)."""
        if any(rewrites_state(m) for m in self.module.modules()):
            return None
        return list(self.module.state_dict(keep_vars=True))

    @functools.cached_property
    def _state_keys(self) -> dict[str, tuple[str, ...]] | None:
        """Each block instance's state-dict keys, by its path, from one state dict of the model;
        None when anything rewrites a state dict (then an instance's own may differ)."""
        if self._model_keys is None:
            return None
        wanted = {self.submodules[key][0] for key in self.blocks if key in self.submodules}
        found: dict[str, list[str]] = {}
        for key in self._model_keys:
            end = key.find(".")
            while end > 0:
                if key[:end] in wanted:
                    found.setdefault(key[:end], []).append(key[end + 1:])
                end = key.find(".", end + 1)
        return {path: tuple(keys) for path, keys in found.items()}

    # -- paths and modules ---------------------------------------------------------------------
    def _module_path(self, region: _Region, sub: torch.nn.Module) -> str:
        """``sub``'s path inside the region's module (the block calls only what it owns). Where
        ``sub``'s first path in the model lies inside the module's, it is that path's rest: the
        module's own walk finds it there first too (found earlier, it would be found earlier in
        the model's walk). Else the module's own walk says, as ``named_modules`` would."""
        at = self.submodules.get(id(sub))
        if at is not None:
            if region.module is self.module:
                return at[0]
            owner = self.submodules.get(id(region.module))
            if owner is not None and at[0].startswith(owner[0] + "."):
                return at[0][len(owner[0]) + 1:]
        paths = self._modules.get(id(region.module))
        if paths is None:
            paths = self._modules[id(region.module)] = {}
            for path, m in region.module.named_modules():
                if path:
                    paths.setdefault(id(m), path)
        path = paths.get(id(sub))
        if path is None:
            raise self._refuse(region.key, f"it calls a {type(sub).__name__} that is not one of its own modules")
        return path

    def _tensor_paths(self, sub: torch.nn.Module) -> dict[int, str]:
        paths = self._tensors.get(id(sub))
        if paths is None:
            paths = self._tensors[id(sub)] = tensor_paths(sub)
        return paths

    def _refuse(self, key: str, why: str) -> Exception:
        sub = self.called.get(key, self.module)
        if id(sub) in self.kept:
            return _Unkept(id(sub))
        return NotTheSame(f"{type(sub).__name__} cannot be a block of the captured graph: {why}", type(sub))

    def _graph_module(self, graph: torch.fx.Graph, owner: torch.nn.Module) -> torch.fx.GraphModule:
        """A GraphModule over ``owner``'s own modules and tensors (the flat capture's constants
        too, for the top), with the state it never reads declared, as ``trace`` makes it. Made
        from a module as torch.fx's tracer makes it: it copies what it reads without registering
        anything on the user's modules (a dict root would re-register a buffer it reads through
        a block it calls, persistent)."""
        root = owner
        if owner is self.module:
            constants = {}
            for node in graph.nodes:
                if node.op == "get_attr" and not _has(owner, str(node.target)):
                    constants[str(node.target)] = attribute_at(self.flat, str(node.target))
            root = shallow_root(owner, constants)
        gm = TracedGraphModule(root, graph, class_name=type(owner).__name__)
        fix_buffers(gm, owner)
        declare_unread_state(gm, owner, self._owned_keys(owner))
        return gm

    def _owned_keys(self, owner: torch.nn.Module) -> list[str] | tuple[str, ...] | None:
        """``owner.state_dict()``'s keys, from the model's one state dict (None: ask ``owner``)."""
        if owner is self.module or self._state_keys is None:
            return self._model_keys
        return self._state_keys.get(self.submodules[id(owner)][0], ())


_MISSING = object()
_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


def _value_key(value: Any, defined: dict[torch.fx.Node, int] | None = None) -> Any:
    """A value as a key: a node by its name, or by its place in ``defined``."""
    kind = type(value)
    if kind is torch.fx.Node:
        return "%", value.name if defined is None else defined[value]
    if isinstance(value, (tuple, list)):  # (torch.fx's immutable_list too)
        return kind, tuple(_value_key(v, defined) for v in value)
    if isinstance(value, dict):
        return kind, tuple((k, _value_key(v, defined)) for k, v in value.items())
    if kind is slice:
        return kind, _value_key(value.start, defined), _value_key(value.stop, defined), _value_key(value.step, defined)
    if kind in _PLAIN:
        return kind, value
    return kind, id(value)


def _output_key(out: Returned, defined: dict[torch.fx.Node, int]) -> Any:
    return ("%", defined[out]) if isinstance(out, torch.fx.Node) else _value_key(out, defined)


def _annotate(gm: torch.fx.GraphModule, block: torch.nn.Module, *, returns_whole: bool) -> None:
    """The annotations torch.fx's tracer gives a block traced on its own: each input named after
    a ``forward`` parameter takes that parameter's, and the result the return annotation where
    the graph returns what the forward returns (else it returns what its caller reads)."""
    annotations = getattr(inspect.unwrap(type(block).forward), "__annotations__", {})
    if not annotations:
        return
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.type = annotations.get(str(node.target))
        elif node.op == "output":
            node.type = annotations.get("return") if returns_whole else None
    resolve_annotations(gm.graph, block)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            # Given one value of the graph: a None would have been folded into the graph, and a
            # tuple or list given would be one input per item (GPT2Block's hidden_states says
            # Optional[Tuple[FloatTensor]] and is given a tensor).
            node.type = _without_none(node.type)
            if (typing.get_origin(node.type) or node.type) in (tuple, list, dict):
                node.type = None
        elif node.op == "output" and not _fits(node.type, node.args[0]):
            node.type = None  # (``-> Tensor`` on a forward returning a tuple: annotations can be wrong)
    gm.recompile()


def _without_none(annotation: Any) -> Any:
    """``X | None`` (``Optional[X]``) as ``X``: what a block input given a graph value is."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007
    return annotation


def _fits(annotation: Any, returned: Any) -> bool:
    """Whether a return annotation can describe what the graph returns: one value, or a tuple of
    as many items (``tuple[X, ...]`` any number), each constant item (``None``, a number) one
    the item's annotation admits. A graph value is taken on trust, as torch.fx's tracer does."""
    if annotation is None:
        return True
    origin, args = typing.get_origin(annotation) or annotation, typing.get_args(annotation)
    if not isinstance(returned, (tuple, list)):
        return origin not in (tuple, list) and (isinstance(returned, torch.fx.Node) or _admits(annotation, returned))
    if origin is not type(returned):
        return False
    if origin is list or not args:
        items: list[Any] = [args[0] if args else Any] * len(returned)
    elif len(args) == 2 and args[1] is Ellipsis:
        items = [args[0]] * len(returned)
    elif len(args) == len(returned):
        items = list(args)
    else:
        return False
    return all(isinstance(v, torch.fx.Node) or _admits(a, v) for a, v in zip(items, returned, strict=True))


def _admits(annotation: Any, value: Any) -> bool:
    """Whether a constant is of the annotated type; an annotation this cannot read admits none."""
    if annotation is Any or annotation is object:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_admits(a, value) for a in typing.get_args(annotation))
    kind = origin if origin is not None else annotation
    return isinstance(kind, type) and isinstance(value, kind)


def _items(returned: Returned) -> list[Any]:
    return [returned] if isinstance(returned, torch.fx.Node) else list(returned)


def _has(module: torch.nn.Module, target: str) -> bool:
    try:
        attribute_at(module, target)
    except AttributeError:
        return False
    return True


def _plain_name(name: str) -> bool:
    return name.isidentifier() and name.isascii() and not name.startswith("_")


def _input_names(block: torch.nn.Module, count: int) -> list[str]:
    """The forward's parameter when it has only one, else ``arg0``, ``arg1``…: a capture does
    not say which parameter each value came in by."""
    signature = forward_signature(block)
    params = [p for p in (signature.parameters.values() if signature is not None else ())
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]  # fmt: skip
    if count == 1 and len(params) == 1 and params[0].name.isidentifier() and not params[0].name.startswith("_"):
        return [params[0].name]
    return [f"arg{i}" for i in range(count)]
