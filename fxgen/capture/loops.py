"""Runs of calls over a container's items, written back as the loop the author wrote.

A forward that runs ``for blk in self.blocks: x = blk(x, mask)`` is traced as one call per item
(``blocks_0``, ``blocks_1``, ...), and each block class was already proven, expanded, to be the
captured graph (``fxgen.capture.hierarchy.verify``). Export writes such a run of a node list as
one ``for`` with ``carry`` (docs/spec-format.md, "Conditionals and repeats of nodes") when it is
exactly that, and leaves it as it is otherwise:

- N >= 2 equally long steps, step k calling item ``k`` of one ``nn.ModuleList`` or
  ``nn.Sequential`` (exactly that class, on every instance of the class whose nodes these are),
  which holds exactly those N items, all of one class (a ModuleList of two blocks, walked as
  ``for attn, ff in self.layers``, is one class), everything under it declared as modules and
  nothing of it read outside the run;
- every step the first one's nodes, the item called aside, reading the previous step's last
  value where the first step reads the value the run starts from (a step may compute before
  its call and after it: a Hugging Face layer's ``layer(h)[0]`` is a step of two nodes), the
  same other values, and nothing after the run reading a value of a step but the last step's
  last one, or a list of every step's (the loop's ``collect``: ``hidden_states_out.append(x)``).

The container is then declared as one ``ModuleList``/``Sequential`` of its items (``[{repeat: N,
module: ...}]`` when they are declared alike), which the generated class walks as ``for block in
self.blocks:``. Nothing is taken on trust: the loop is expanded by the resolver ``fxgen.load``
runs (``fxgen.spec.resolve.expand_nodes``) and must give back the run's nodes node for node, up
to the names the loop gives them (``blocks_out_0`` .. for a body node ``blocks_out``), or the
run stays as it is. Only the top-level node list of each class is looked at (a run inside an
``if`` stays).
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import keyword
import re
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fxgen.check.checker import RESERVED_NAMES
from fxgen.describe.align import map_refs_node
from fxgen.spec.expr import ExprError
from fxgen.spec.model import (
    ClassSpec,
    ForNodes,
    IfNodes,
    Item,
    ModuleSpec,
    Node,
    Spec,
    walk_items,
    walk_nodes,
)
from fxgen.spec.resolve import data_cases, expand_nodes
from fxgen.spec.values import iter_refs

__all__ = ["write_loops"]

CONTAINERS = {torch.nn.ModuleList: "torch.nn.ModuleList", torch.nn.Sequential: "torch.nn.Sequential"}
_INDEX_NAMES = ("i", "j", "k", "n")  # the loop index, the first one no other name of the class is
_COUNTED = re.compile(r"(.*)_\d+")  # torch.fx's name for a repeated target: ``getitem_8``, ``blocks_0``
_CARRY = "\0carry"  # in a step's template: the value the previous step hands on
_LOCAL = "\0local"  # in a step's template: this step's own node (by its place in the step)

# a body's container at a path -> its class's name and number of items (all instances agree), or None
ContainerOf = Callable[[str], tuple[str, int] | None]


def write_loops(spec: Spec, model: torch.nn.Module) -> Spec:
    """``spec`` (exported from ``model``) with each run of calls over a container's items in
    its top-level node lists written as a ``for`` (module docstring); format 2 if it has one."""
    instances = _instances(spec, model)
    classes: dict[str, ClassSpec] = {}
    for name, body in spec.classes.items():
        changed = _body_loops(body, _container_of(instances.get(name, [])))
        classes[name] = dataclasses.replace(body, **changed) if changed else body
    top = _body_loops(spec, _container_of(instances[None]))
    if top is None and all(classes[name] is spec.classes[name] for name in classes):
        return spec
    return dataclasses.replace(spec, **(top or {}), classes=classes, fxgen=2)


# -- the model's containers ------------------------------------------------------------------
def _instances(spec: Spec, model: torch.nn.Module) -> dict[str | None, list[torch.nn.Module]]:
    """Each class's instances in ``model`` (None: the top class, ``model`` itself), found by
    walking the declarations (a block inside a declared Sequential included)."""
    found: dict[str | None, list[torch.nn.Module]] = {None: [model]}

    def declarations(modules: dict[str, ModuleSpec], owner: torch.nn.Module) -> None:
        for path, declared in modules.items():
            try:
                sub = owner.get_submodule(path)
            except AttributeError:
                continue
            declaration(declared.to_dict(), sub)

    def declaration(data: dict[str, Any], sub: torch.nn.Module) -> None:
        cls = data.get("class")
        if cls in spec.classes:
            found.setdefault(cls, []).append(sub)
            declarations(spec.classes[cls].modules, sub)
        elif cls in CONTAINERS.values() and type(sub) in CONTAINERS:
            args = data.get("args", [])
            items = args[0] if cls == "torch.nn.ModuleList" and args else args
            children = list(sub._modules.values())
            for k, item in enumerate(items if isinstance(items, list) else []):
                child = children[k] if k < len(children) else None
                if isinstance(item, dict) and "module" in item and child is not None:
                    declaration(item["module"], child)

    declarations(spec.modules, model)
    return found


def _container_of(instances: list[torch.nn.Module]) -> ContainerOf:
    def container(path: str) -> tuple[str, int] | None:
        found = set()
        for owner in instances:
            try:
                sub = owner.get_submodule(path)
            except AttributeError:
                return None
            names = list(sub._modules)
            if type(sub) not in CONTAINERS or names != [str(k) for k in range(len(names))] or sub._parameters or sub._buffers:
                return None
            found.add((CONTAINERS[type(sub)], len(names)))
        return found.pop() if len(found) == 1 else None

    return container


# -- one class's node list -------------------------------------------------------------------
def _body_loops(body: Spec | ClassSpec, container_of: ContainerOf) -> dict[str, Any] | None:
    """The ``nodes`` and ``modules`` of ``body`` with its runs written as loops; None if none is."""
    items, modules = list(body.nodes), dict(body.modules)
    changed = False
    i = 0
    while i < len(items):
        written = next((w for run in _Run.at(items, i, body, modules, container_of) if (w := run.written())), None)
        if written is None:
            i += 1
            continue
        items, modules, i = written
        changed = True
    return {"nodes": items, "modules": modules} if changed else None


@dataclasses.dataclass
class _Run:
    items: list[Item]
    start: int
    steps: list[list[Node]]
    container: str  # the path of the container the steps call the items of
    body: Spec | ClassSpec
    modules: dict[str, ModuleSpec]
    declared: ModuleSpec  # the container's declaration, in place of its items

    @classmethod
    def at(cls, items: list[Item], i: int, body: Spec | ClassSpec, modules: dict[str, ModuleSpec],
           container_of: ContainerOf) -> Iterator[_Run]:  # fmt: skip
        """The runs of calls over a container's items whose first call is ``items[i]``: the
        calls equally far apart, each step beginning that many nodes before its call (a value
        the step computes before it, ``x[:, :1]``), nearest first."""
        first = items[i]
        if not isinstance(first, Node) or first.op != "call_module" or not first.target:
            return
        parts = first.target.split(".")
        for at in (k for k in range(len(parts) - 1, 0, -1) if parts[k] == "0"):  # the nearest container first
            path, rest = ".".join(parts[:at]), "".join(f".{part}" for part in parts[at + 1:])
            yield from cls._runs(items, i, path, rest, body, modules, container_of)

    @classmethod
    def _runs(cls, items: list[Item], i: int, path: str, rest: str, body: Spec | ClassSpec,
              modules: dict[str, ModuleSpec], container_of: ContainerOf) -> Iterator[_Run]:  # fmt: skip
        length = next((j - i for j in range(i + 1, len(items)) if _calls(items[j], f"{path}.1{rest}")), None)
        if length is None:
            return
        count = 0
        while i + count * length < len(items) and _calls(items[i + count * length], f"{path}.{count}{rest}"):
            count += 1
        declared = _declaration(path, count, body, modules, container_of)
        if declared is None:
            return
        for before in range(min(length, i + 1)):
            start = i - before
            steps = [items[start + k * length:start + (k + 1) * length] for k in range(count)]
            if len(steps[-1]) == length and all(type(n) is Node for step in steps for n in step):
                yield cls(items, start, steps, path, body, modules, declared)  # type: ignore[arg-type]  # (nodes)

    def written(self) -> tuple[list[Item], dict[str, ModuleSpec], int] | None:
        """The items and modules with the run as a loop (its ``collect`` read where a list of
        every step's last value was), and where to look on; None if it is no such run (or the
        loop, expanded, is not it)."""
        steps, n = self.steps, len(self.steps)
        end = self.start + n * len(steps[0])
        before, after = self.items[:self.start], self.items[end:]
        if any(_under(node.target, self.container) for node in _nodes(before + after)):
            return None  # the container is used otherwise too
        start = self.start_value()
        if start is None:
            return None
        templates = [self.template(k, start if k == 0 else str(steps[k - 1][-1].name)) for k in range(n)]
        if any(t != templates[0] for t in templates[1:]):
            return None
        last = str(steps[-1][-1].name)
        run_names = {str(node.name) for step in steps for node in step}
        lasts = [f"%{step[-1].name}" for step in steps]  # a list of them after it: the loop's `collect`
        probed, collects = _collecting(after, lasts, "%\0collected")
        after_refs = [ref for item in walk_items(probed) for ref in _item_refs(item)]
        if any(ref in run_names and ref != last for ref in after_refs):
            return None  # a value inside the loop is read after it
        taken = _names(self.body, self.items) - run_names
        bases = self.base_names(taken)
        if bases is None:
            return None
        var = _fresh_name(_INDEX_NAMES, taken)
        alias: list[Item] = []
        carried = start
        if start in after_refs or start == last:
            carried = _fresh_name(("h", "hidden"), taken)
            alias = [Node("alias", carried, args=[f"%{start}"])]
        local = {str(node.name): bases[j] for j, node in enumerate(steps[0])}

        def inside(name: str) -> str:
            return local.get(name, carried if name == start else name)

        nodes: list[Item] = [dataclasses.replace(map_refs_node(node, inside), target=self.indexed(node.target, 0, var))
                             for node in steps[0]]  # fmt: skip
        collect = _fresh_name((f"{self.container.rpartition('.')[2]}_outs", "outs"), taken) if collects else None
        loop = ForNodes(var, n, nodes, carry={carried: f"%{bases[-1]}"}, collect=collect)
        if collect is not None:
            after = _collecting(after, lasts, f"%{collect}")[0]
        renamed = [_renamed_item(item, {last: carried}) for item in after]
        if not self.proven(alias, loop, carried, bases):
            return None
        items = [*before, *alias, loop, *renamed]
        return items, self.with_container(), self.start + len(alias) + 1

    def start_value(self) -> str | None:
        """The value the run starts from: what the first step reads where the second reads the
        first step's last value (one name), or None."""
        previous = self.steps[0][-1].name
        found: set[str] = set()
        for first, second in zip(self.steps[0], self.steps[1], strict=True):
            refs, refs2 = _node_refs(first), _node_refs(second)
            if len(refs) != len(refs2):
                return None
            found.update(a for (pa, a), (pb, b) in zip(refs, refs2, strict=True) if b == previous and pa == pb)
        return found.pop() if len(found) == 1 else None

    def template(self, k: int, previous: str) -> list[dict[str, Any]]:
        """Step ``k`` with the item it calls as ``{i}``, its own nodes by their place and the
        value it is handed (``previous``) as one marker: equal for every step of a loop."""
        local = {str(node.name): j for j, node in enumerate(self.steps[k])}

        def mark(name: str) -> str:
            return f"{_LOCAL}{local[name]}" if name in local else _CARRY if name == previous else name

        out = []
        for node in self.steps[k]:
            data = map_refs_node(node, mark).to_dict()
            data.pop("name", None)
            if "target" in data:
                data["target"] = self.indexed(data["target"], k, "\0index")
            out.append(data)
        return out

    def indexed(self, target: str | None, k: int, var: str) -> str | None:
        """``blocks.2.conv`` (item ``k`` = 2 of the container) -> ``blocks.{i}.conv``."""
        item = f"{self.container}.{k}"
        if target is None or not (target == item or target.startswith(item + ".")):
            return target
        return f"{self.container}.{{{var}}}{target[len(item):]}"

    def base_names(self, taken: set[str]) -> list[str] | None:
        """A name for each node of the loop's body: ``blocks_out`` for the call of an item of
        ``blocks`` (never the generated loop's item, ``block``), the callee's class for a call of
        a module inside the item (``feed_forward``), what torch.fx named the first step's other
        nodes without their number (``getitem``), else that prefixed by the container's name;
        none of them, nor them numbered as the loop numbers its steps (``blocks_out_0``), taken."""
        n = len(self.steps)
        leaf = self.container.rpartition(".")[2]
        bases: list[str] = []
        for node in self.steps[0]:
            found = _COUNTED.fullmatch(str(node.name))
            own = found.group(1) if found else str(node.name)
            options = [own, f"{leaf}_{own}"]
            if node.op == "call_module" and node.target == f"{self.container}.0":
                options.insert(0, f"{leaf}_out")
            elif node.op == "call_module" and node.target in self.modules and _under(node.target, self.container):
                options.insert(0, _snake(self.modules[node.target].cls.rpartition(".")[2]))
            options += [f"{options[0]}{k}" for k in range(2, 100)]
            free = next((name for name in options if _usable(name) and name not in taken
                         and not any(f"{name}_{k}" in taken for k in range(n))), None)  # fmt: skip
            if free is None:
                return None
            bases.append(free)
            taken |= {free, *(f"{free}_{k}" for k in range(n))}
        return bases

    def proven(self, alias: list[Item], loop: ForNodes, carried: str, bases: list[str]) -> bool:
        """The loop expanded as ``fxgen.load`` expands it is the run, node for node, with the
        names the loop gives the steps' nodes, and after it its carried value the last step's
        last one and its collected list each step's: in each mode the steps read
        (``{arg: training}``)."""
        names = {str(node.name): f"{bases[j]}_{k}" for k, step in enumerate(self.steps) for j, node in enumerate(step)}
        run = [map_refs_node(node, lambda name: names.get(name, name)).to_dict() for step in self.steps for node in step]
        lasts = [f"%{names[str(step[-1].name)]}" for step in self.steps]
        run.append({"op": "output", "args": [lasts[-1], *([lasts] if loop.collect else [])]})
        ends = [f"%{carried}", *([f"%{loop.collect}"] if loop.collect else [])]
        written = [item.to_dict() for item in (*alias, loop, Node("output", args=ends))]
        try:
            return all(_expanded(written, env) == _expanded(run, env) for env in data_cases(run))
        except ExprError:
            return False

    def with_container(self) -> dict[str, ModuleSpec]:
        """The modules, what is declared under the container replaced by its declaration (at the
        place of the first)."""
        out: dict[str, ModuleSpec] = {}
        for path, declared in self.modules.items():
            if not _under(path, self.container):
                out[path] = declared
            elif self.container not in out:
                out[self.container] = self.declared
        return out


def _expanded(items: list[dict[str, Any]], env: dict[str, Any]) -> list[dict[str, Any]]:
    return [node for node, _ in expand_nodes(items, env)]


def _declaration(path: str, count: int, body: Spec | ClassSpec, modules: dict[str, ModuleSpec],
                 container_of: ContainerOf) -> ModuleSpec | None:  # fmt: skip
    """The declaration of the container at ``path`` in place of what is declared under it, if a
    run can be a loop over it: a ModuleList or Sequential (the model's, on every instance) of
    ``count`` items of one class (a ModuleList of two blocks, ``for attn, ff in self.layers``,
    is one class), everything under its path declared as modules."""
    under = {p for table in (modules, body.parameters, body.buffers) for p in table if _under(p, path)}
    used: set[str] = set()
    whole = _declared_at(path, modules, container_of, used) if count >= 2 else None
    if whole is None or used != under or whole["class"] not in CONTAINERS.values():
        return None
    listed = _listed(whole)
    declared = [item["module"] for item in listed if isinstance(item, dict) and isinstance(item.get("module"), dict)]
    if len(declared) != count or len(listed) != count:
        return None
    if len({json.dumps(_classes(d)) for d in declared}) != 1:
        return None
    if all(d == declared[0] for d in declared):
        listed = [{"repeat": count, "module": declared[0]}]
    return ModuleSpec(whole["class"], [listed] if whole["class"] == "torch.nn.ModuleList" else listed)


def _declared_at(path: str, modules: dict[str, ModuleSpec], container_of: ContainerOf,
                 used: set[str]) -> dict[str, Any] | None:  # fmt: skip
    """The module at ``path`` as one declaration: its own, or the ModuleList or Sequential the
    model holds there made of what is declared under it (``used``: the paths it took)."""
    if path in modules:
        data = modules[path].to_dict()
        used.add(path)
        return data if set(data) <= {"class", "args", "kwargs"} else None
    found = container_of(path)
    if found is None:
        return None
    cls, count = found
    items = []
    for k in range(count):
        item = _declared_at(f"{path}.{k}", modules, container_of, used)
        if item is None:
            return None
        items.append({"module": item})
    return {"class": cls, "args": [items] if cls == "torch.nn.ModuleList" else items}


def _listed(declared: dict[str, Any]) -> list[Any]:
    """The items of a ModuleList's or Sequential's declaration."""
    args = declared.get("args", [])
    items = args[0] if declared["class"] == "torch.nn.ModuleList" and args else args
    return items if isinstance(items, list) else []


def _classes(declared: dict[str, Any]) -> list[Any]:
    """A declaration's class and, for a container, its items' (what one class of items means)."""
    if declared.get("class") not in CONTAINERS.values():
        return [declared.get("class")]
    return [declared["class"], *(_classes(item["module"]) if isinstance(item, dict) and isinstance(item.get("module"), dict)
                                 else None for item in _listed(declared))]  # fmt: skip


def _calls(item: Item, target: str) -> bool:
    return isinstance(item, Node) and item.op == "call_module" and item.target == target


def _under(target: str | None, path: str) -> bool:
    return target is not None and (target == path or target.startswith(path + "."))


def _nodes(items: list[Item]) -> Iterator[Node]:
    return (item for item in walk_items(items) if isinstance(item, Node))


def _node_refs(node: Node) -> list[tuple[tuple[Any, ...], str]]:
    return [*iter_refs(node.args, ("args",)), *iter_refs(node.kwargs, ("kwargs",)), *iter_refs(node.default, ("default",))]


def _item_refs(item: Item) -> list[str]:
    if isinstance(item, Node):
        return [ref for _, ref in _node_refs(item)]
    if isinstance(item, ForNodes):
        return [ref for _, ref in iter_refs(list(item.carry.values()))]
    return []


def _collecting(items: list[Item], lasts: list[str], ref: str) -> tuple[list[Item], bool]:
    """``items`` with each list of exactly the steps' last values (``[%blocks_0, %blocks_1]``, a
    node's argument or inside a tuple or list) read as ``ref``, and whether there was one."""
    found = False

    def value(v: Any) -> Any:
        nonlocal found
        if isinstance(v, list):
            if v == lasts:
                found = True
                return ref
            return [value(x) for x in v]
        if isinstance(v, dict):  # a tag's body (a tuple's items) stays a list
            return {k: [value(x) for x in body] if isinstance(body, list) else value(body) for k, body in v.items()}
        return v

    def item(it: Item) -> Item:
        if isinstance(it, Node):
            return dataclasses.replace(it, args=[value(a) for a in it.args], kwargs={k: value(a) for k, a in it.kwargs.items()})
        if isinstance(it, IfNodes):
            return IfNodes(it.cond, [item(i) for i in it.then], [item(i) for i in it.orelse])
        return dataclasses.replace(it, nodes=[item(i) for i in it.nodes])

    out = [item(it) for it in items]
    return out, found


def _renamed_item(item: Item, names: dict[str, str]) -> Item:
    """``item`` reading ``names[x]`` wherever it read ``x`` (nested items too)."""
    def rename(name: str) -> str:
        return names.get(name, name)

    if isinstance(item, Node):
        return dataclasses.replace(map_refs_node(item, rename), name=item.name)
    if isinstance(item, IfNodes):
        return IfNodes(item.cond, [_renamed_item(i, names) for i in item.then], [_renamed_item(i, names) for i in item.orelse])
    carry = {key: f"%{rename(str(value)[1:])}" if str(value).startswith("%") else value for key, value in item.carry.items()}
    return dataclasses.replace(item, nodes=[_renamed_item(i, names) for i in item.nodes], carry=carry)


def _names(body: Spec | ClassSpec, items: list[Item]) -> set[str]:
    """Every name a class's forward or its arguments use: nodes (a loop's numbered as it numbers
    its steps too), aliases, loop indices, carried and collected names, arguments and values."""
    names = {*body.args, *body.values}
    for item in walk_items(items):
        if isinstance(item, Node) and item.name is not None:
            names.add(item.name)
        elif isinstance(item, ForNodes):
            names.update([item.var, *item.carry, *([item.collect] if item.collect else [])])
            steps = range(item.count) if type(item.count) is int else ()
            names.update(f"{node.name}_{k}" for node in walk_nodes(item.nodes) if node.name for k in steps)
    return names


def _snake(name: str) -> str:
    """``FeedForward`` -> ``feed_forward``, ``GELU`` -> ``gelu``."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)).lower()


def _usable(name: str) -> bool:
    return (name.isidentifier() and name.isascii() and not keyword.iskeyword(name) and not keyword.issoftkeyword(name)
            and not hasattr(builtins, name) and name not in RESERVED_NAMES)  # fmt: skip


def _fresh_name(options: tuple[str, ...], taken: set[str]) -> str:
    """The first of ``options`` not taken (then ``NAME2``, ``NAME3``, .. of the first), taken now."""
    candidates: Iterator[str] = iter(options)
    name = next((c for c in candidates if c not in taken and _usable(c)), None)
    k = 2
    while name is None or name in taken:
        name = f"{options[0]}{k}"
        k += 1
    taken.add(name)
    return name
