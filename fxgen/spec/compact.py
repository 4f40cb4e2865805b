"""The compact node form, desugared to the canonical node list before any check sees the nodes.

A spec's node list may hold, next to canonical nodes (``{op: ..., name: ..., target: ...}``),
compact items, each standing for exactly the canonical nodes it desugars to:

* ``TARGET``: one step of a chain: ``TARGET`` called on the previous item's value;
* ``{NAME: TARGET}``: the same step, named;
* ``{NAME: [TARGET, ARG, ...]}``: a call with these arguments, ``"%"`` among them (at any depth)
  being the previous item's value;
* ``{NAME: "%value"}``: a second name for a value (``op: alias``);
* ``{"a, b": CALL}``: a call (or a ``"%value"``) whose result is unpacked by name (one
  ``operator.getitem`` each);
* ``{target: ..., args: ..., kwargs: ...}`` without ``op``: a canonical node whose op is implied;
* ``[ITEM, ...]``: these items in its place (several steps on one line).

The op is implied by what the target names: a declared module (or an item of one) is
``call_module``, a declared parameter or buffer ``get_attr``, ``.name`` ``call_method``, anything
else ``call_function``. A class whose nodes are compact needs no placeholder: when the first step
takes the previous value (or the nodes read ``%x`` and give no value that name), the input
``x: torch.Tensor`` is implied (at the top level with
``inputs:``, each input is a placeholder, in order, and the first step takes the first); and no
output node: the last value is returned, as a ``torch.Tensor``. A step nobody named gets the name
torch.fx would give it. The canonical list stays the definition: ``fxgen expand`` prints it, everything below the read
stage sees only it, and every desugared node keeps the location of the compact item it comes from,
so every later error points into the compact text (:class:`CompactDocument`).

A pure function of the data (no torch, no file), so the same spec always desugars to the same
nodes; a spec without compact items is returned as it is.
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fxgen._errors import Diagnostic, Location, SpecError
from fxgen.read.reader import Document
from fxgen.read.yaml_events import KEY, JsonPath
from fxgen.spec.chains import at_modules, module_chain
from fxgen.spec.layers import desugar_layers
from fxgen.spec.returns import callees_first, class_at, typed_output
from fxgen.spec.shorthand import Source, desugar_declarations
from fxgen.spec.values import iter_refs

__all__ = ["PREVIOUS", "CompactDocument", "desugar", "desugared", "fx_name", "implied_op", "is_compact"]


PREVIOUS = "%"  # in a compact item's arguments: the previous item's value


_NODE_KEYS = frozenset({"op", "name", "target", "args", "kwargs", "type", "default", "if", "for"})


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")


_SNAKE = re.compile(r"(?<!^)(?<!_)(?=[A-Z][a-z])|(?<=[a-z0-9])(?=[A-Z])")


_INPUT = {"op": "placeholder", "name": "x", "type": "torch.Tensor"}  # a chain's implied input


_IMPLIED = "<input>"  # the previous value of a chain's first step: the implied input


_REFUSED = "<refused>"  # the previous value after an item refused (reported once, at that item)


_ALLOWED = (
    "a node list item is a node ({op: ..., ...}), a conditional {if: ...}, a repeat {for: ...}, or a compact "
    'step: TARGET, {NAME: TARGET}, {NAME: [TARGET, ARG, ...]} ("%" there is the previous value), '
    '{NAME: "%value"}, {"a, b": CALL} or {target: ..., args: [...], kwargs: {...}} without op'
)


_NOT_A_CALL = (
    "a step is not written as a call: write its target and arguments as a named step, "
    '{NAME: [TARGET, ARG, ...]} ({y: [torch.add, "%x", 1]}), with "%" for the previous value'
)


class CompactError(Exception):
    """Problems of compact items, each at the path of the item (in the data as written)."""

    def __init__(self, problems: list[tuple[JsonPath, str]]) -> None:
        super().__init__(problems[0][1])
        self.problems = problems




@dataclass
class CompactDocument(Document):
    """A Document whose node lists were desugared: ``data`` is canonical, and each path is located
    where the item it comes from is written (``inner``: the document as read)."""

    inner: Document | None = field(default=None, repr=False, compare=False)
    sources: dict[JsonPath, Source] = field(default_factory=dict, repr=False, compare=False)

    def source(self, path: JsonPath) -> JsonPath:
        """Where ``path`` of the canonical data is in the data as written."""
        for size in range(len(path), 0, -1):
            found = self.sources.get(path[:size])
            if found is not None:
                where, same = found
                return (*where, *path[size:]) if same else where
        return path

    def locate(self, path: JsonPath) -> Location:
        assert self.inner is not None
        return self.inner.locate(self.source(path))

    def key_location(self, path: JsonPath) -> Location:
        assert self.inner is not None
        return self.inner.key_location(self.source(path))


def desugared(doc: Document, reserved: Iterable[str] = ()) -> Document:
    """``doc`` with its layer tables (``fxgen.spec.layers``), its compact items and its
    declaration shorthands (``fxgen.spec.shorthand``) desugared (``doc`` itself when it has
    none); a SpecError names every one that is not well formed, at its line. ``reserved``: names
    a node may not take (the generated module's globals), which a step's own name avoids."""
    data, layered, problems = desugar_layers(doc.data, lambda path: fx_name("call_module", path))
    errors = [Diagnostic(doc.locate(where), message) for where, message in problems]
    if layered is not None:  # located through the rows: every later path is one of this data
        doc = CompactDocument(data=data, path=doc.path, raw=doc.raw, plain_json=doc.plain_json, inner=doc, sources=layered)
    data, declared, problems = desugar_declarations(doc.data)
    try:
        data, sources = desugar(data, reserved)
    except CompactError as exc:
        problems += exc.problems
        sources = None
    if problems or errors:
        raise SpecError(errors + [Diagnostic(doc.locate(where), message) for where, message in problems]) from None
    if sources is None and declared is None:
        return doc
    sources = {**(declared or {}), **(sources or {})}
    return CompactDocument(data=data, path=doc.path, raw=doc.raw, plain_json=doc.plain_json, inner=doc, sources=sources)


def desugar(data: Any, reserved: Iterable[str] = ()) -> tuple[Any, dict[JsonPath, Source] | None]:
    """The canonical data of ``data`` and, for each node-list item, the path it comes from; None
    for the sources when nothing is compact (``data`` is then returned unchanged)."""
    if not isinstance(data, dict):
        return data, None
    bodies: list[tuple[JsonPath, dict[str, Any]]] = [((), data)]
    classes = data.get("classes")
    if isinstance(classes, dict):
        bodies += [(("classes", name), body) for name, body in classes.items() if isinstance(body, dict)]
    problems: list[tuple[JsonPath, str]] = []
    chains: dict[JsonPath, list[str]] = {}
    for k, (where, body) in enumerate(bodies):
        chain = module_chain(body, where, problems)
        if chain:
            chains[where] = chain
            bodies[k] = (where, {**body, "nodes": list(chain)})
    blocks: dict[str, Any] = classes if isinstance(classes, dict) else {}
    order: dict[JsonPath, int] = {("classes", name): k for k, name in enumerate(callees_first(blocks))}
    bodies = [(where, body) for where, body in bodies if _has_compact(body.get("nodes"))]
    if not bodies:
        if problems:
            raise CompactError(problems)
        return data, None
    out = dict(data)
    if any(where for where, _ in bodies):
        out["classes"] = dict(classes)  # type: ignore[arg-type]
    sources: dict[JsonPath, Source] = {}
    # block -> the type it returns: written, or (compact blocks go first, each after those it uses) implied
    types = {name: str(body["nodes"][-1]["type"]) for name, body in blocks.items() if typed_output(body)}
    for where, body in sorted(bodies, key=lambda entry: order.get(entry[0], len(order))):
        graph = _Graph(body, where, frozenset(reserved), types)
        nodes = graph.body()
        if where and nodes and isinstance(nodes[-1], dict) and nodes[-1].get("op") == "output":
            types[str(where[1])] = str(nodes[-1].get("type", "torch.Tensor"))
        problems += graph.problems
        sources.update(at_modules(graph.sources, where, chains[where]) if where in chains else graph.sources)
        if where:
            out["classes"][where[1]] = {**body, "nodes": nodes}
        else:
            out["nodes"] = nodes
    if problems:
        raise CompactError(problems)
    return out, sources


def is_compact(item: Any) -> bool:
    """Is ``item`` (of a node list) a compact one: not a node, a conditional or a repeat?"""
    return not (isinstance(item, dict) and ("op" in item or "if" in item or "for" in item))


def _has_compact(nodes: Any) -> bool:
    if not isinstance(nodes, list):
        return False
    for item in nodes:
        if is_compact(item):
            return True
        if isinstance(item, dict) and "op" not in item:
            inner = [item.get(key) for key in ("then", "else", "nodes")]
            if any(_has_compact(items) for items in inner):
                return True
    return False


class _Graph:
    """One class's node list desugared: the nodes, their sources, and the problems found."""

    def __init__(self, body: dict[str, Any], where: JsonPath, reserved: frozenset[str], types: dict[str, str]) -> None:
        self.where = where
        self.modules = _keys(body.get("modules"))
        self.tensors = _keys(body.get("parameters")) | _keys(body.get("buffers"))
        self.sources: dict[JsonPath, Source] = {}
        self.problems: list[tuple[JsonPath, str]] = []
        self.taken = set(_written_names(body.get("nodes"))) | set(reserved) | {"self", "output", _INPUT["name"]}
        self.nodes: list[Any] = body["nodes"]
        self.inputs = body.get("inputs")
        self.implied_input = False
        self.here: JsonPath = (*where, "nodes")
        self.previous: str | None = None
        self.last: str | None = None
        self.last_source: JsonPath | None = None
        self.lists: set[str] = set()  # the names of lists a repeat collected: returned, a list[torch.Tensor]
        declared = body.get("modules")
        self.declared: dict[str, Any] = declared if isinstance(declared, dict) else {}
        self.types = types  # the output type of each block desugared before this body
        self.unnamed: dict[str, dict[str, Any]] = {}  # a step nobody named yet, by the name it gets when used

    # -- lists -----------------------------------------------------------------------------
    def body(self) -> list[Any]:
        items, at = self.nodes, (*self.where, "nodes")
        first_is_input = bool(items) and isinstance(items[0], dict) and items[0].get("op") == "placeholder"
        declared = None if self.where else self.declared_inputs()
        if declared is None:
            first = None if first_is_input else _IMPLIED
        else:  # the first input (none: one was refused)
            first = declared[0][0]["name"] if declared else _REFUSED
        out = self.items(items, at, at, first)
        last = out[-1] if out else None
        if not (isinstance(last, dict) and last.get("op") == "output"):
            self.here, self.previous = (self.last_source or at), self.last
            if self.last is None:
                self.refuse("the nodes end without an output node, and their last item has no one value to return; "
                            'end them with {op: output, args: ["%name"]}')  # fmt: skip
            elif self.last != _REFUSED:
                returned = self.value(PREVIOUS)
                kind = "list[torch.Tensor]" if self.last in self.lists else self.returns(out, returned)
                out.append({"op": "output", "args": [returned], "type": kind})
                self.sources[(*at, len(out) - 1)] = (self.here, False)
        if first == _IMPLIED and not self.implied_input and _reads_input(out, self.nodes):
            self.implied_input = True  # `%x` named, not taken as "%": the chain's input all the same
        if self.implied_input:
            declared = [(dict(_INPUT), at)]
        for k, (node, _) in enumerate(declared or ()):
            out.insert(k, node)
        self.shift(at, [where for _, where in declared or ()])
        return out

    def returns(self, out: list[Any], returned: Any) -> str:
        """The type the implied output has: a block's, when the value returned is a call of a
        module of this class that is an instance of a block (``Detect`` returns a list), else
        ``torch.Tensor``."""
        node = next((n for n in out if isinstance(n, dict) and n.get("name") == str(returned)[1:]), None)
        if node is None or node.get("op") != "call_module" or not isinstance(node.get("target"), str):
            return "torch.Tensor"
        return self.types.get(class_at(self.declared, node["target"]) or "", "torch.Tensor")

    def declared_inputs(self) -> list[tuple[dict[str, Any], JsonPath]] | None:
        """The placeholders the top level's ``inputs:`` implies, each located at its input's key:
        one ``NAME: torch.Tensor`` per input, in the order written, when the nodes write no
        placeholder (None when they do, or when there is no ``inputs:`` to say them: then a chain's
        input is ``x``). An input whose name cannot be a placeholder's is refused."""
        inputs = self.inputs
        written = any(isinstance(item, dict) and item.get("op") == "placeholder" for _, item in _spliced(self.nodes, ()))
        if not isinstance(inputs, dict) or not inputs or written:
            return None
        out: list[tuple[dict[str, Any], JsonPath]] = []
        names = set(_written_names(self.nodes))
        for name in inputs:
            self.here = ("inputs", name, KEY)
            if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
                self.refuse(f"input {name!r} is not an identifier, yet names a placeholder: the nodes write none, so "
                            "`inputs:` implies one per input; name it with letters, digits and _ (not starting with "
                            "a digit), or write the placeholders")  # fmt: skip
            elif name in names:
                self.refuse(f"input {name!r} is also the name of a value of the nodes: they write no placeholder, so "
                            "`inputs:` implies one per input, named as the input; rename the input or that value")  # fmt: skip
            else:
                out.append(({"op": "placeholder", "name": name, "type": "torch.Tensor"}, self.here))
                self.taken.add(name)
        return out if len(out) == len(inputs) else []

    def shift(self, at: JsonPath, firsts: list[JsonPath]) -> None:
        """The implied inputs went first (each located where ``firsts`` says): every item of the top
        list moves down as many."""
        size, n = len(at), len(firsts)
        if not n:
            return
        moved: dict[JsonPath, Source] = {}
        for path, source in self.sources.items():
            index = path[size] if path[:size] == at and len(path) > size else None
            if isinstance(index, int):
                path = (*at, index + n, *path[size + 1 :])
            moved[path] = source
        moved.update({(*at, k): (first, False) for k, first in enumerate(firsts)})
        self.sources = moved

    def items(self, items: list[Any], at: JsonPath, source: JsonPath, previous: str | None) -> list[Any]:
        """The canonical items of ``items`` (written at ``source``, going to ``at``); ``previous``:
        the value before the first (None: there is none to take)."""
        out: list[Any] = []
        cut = 0  # the open parentheses of a call YAML cut at a comma, still to be closed by later items
        for here, item in _spliced(items, source):
            start = len(out)
            if cut or (isinstance(item, str) and item.count("(") > item.count(")")):
                if not cut:  # one error for the call, not one per piece
                    self.here = here
                    self.refuse(f"{item!r} begins a call YAML cut at its commas; {_NOT_A_CALL}")
                    previous = _REFUSED
                text = item if isinstance(item, str) else ""  # a piece may be a number: `f(x, 1)`
                cut = max(cut + text.count("(") - text.count(")"), 0)
                continue
            if isinstance(item, dict) and "op" in item:
                out.append(item)
                self.sources[(*at, start)] = (here, True)
                op = item.get("op")
                previous = item.get("name") if op in ("placeholder", "get_attr", "alias") or str(op).startswith("call_") else None
                previous = previous if isinstance(previous, str) else None
                if "name" not in item and isinstance(item.get("target"), str) and op != "output":
                    self.name_for(str(op), item["target"])  # the name torch.fx gives it: no step may take it
            elif isinstance(item, dict) and "if" in item:
                out.append(self.conditional(item, (*at, start), here, previous))
                self.sources[(*at, start)] = (here, True)
                previous = self.last
            elif isinstance(item, dict) and "for" in item:
                out.append(self.repeat(item, (*at, start), here, previous))
                self.sources[(*at, start)] = (here, True)
                previous = self.last
            else:
                nodes = self.step(item, here, previous)
                for k, node in enumerate(nodes):
                    self.sources[(*at, start + k)] = (here, False)
                    out.append(node)
                if nodes and isinstance(item, dict) and "target" in item:  # written out: paths below are the same
                    self.sources[(*at, start)] = (here, True)
                elif nodes and isinstance(item, dict) and len(item) == 1:
                    key, call = next(iter(item.items()))
                    self.sources[(*at, start, "target")] = ((*here, key, 0) if isinstance(call, list) else (*here, key), True)
                    if isinstance(call, list):
                        for j in range(1, len(call)):
                            self.sources[(*at, start, "args", j - 1)] = ((*here, key, j), True)
                previous = self.name_of(nodes[-1]) if len(nodes) == 1 else _REFUSED if not nodes else None
            self.last_source = here
        self.last = previous
        return out

    def conditional(self, item: dict[str, Any], at: JsonPath, here: JsonPath, previous: str | None) -> dict[str, Any]:
        out = dict(item)
        ends: list[str | None] = []
        for branch in ("then", "else"):
            if isinstance(item.get(branch), list):
                out[branch] = self.items(item[branch], (*at, branch), (*here, branch), previous)
                ends.append(self.last)
        self.last = ends[0] if len(ends) == 2 and ends[0] == ends[1] else None
        return out

    def repeat(self, item: dict[str, Any], at: JsonPath, here: JsonPath, previous: str | None) -> dict[str, Any]:
        out = dict(item)
        if isinstance(item.get("nodes"), list):
            out["nodes"] = self.items(item["nodes"], (*at, "nodes"), (*here, "nodes"), previous)
        # the one value it leaves, if one: the carried value (`for block in h: x = block(x)`) or the list collected
        carry, collect = item.get("carry"), item.get("collect")
        made = [*(carry if isinstance(carry, dict) else ()), *([collect] if collect is not None else [])]
        self.last = made[0] if len(made) == 1 and isinstance(made[0], str) else None
        if self.last is not None and self.last == collect:
            self.lists.add(self.last)
        return out

    # -- one compact item --------------------------------------------------------------------
    def step(self, item: Any, here: JsonPath, previous: str | None) -> list[dict[str, Any]]:
        self.here, self.previous = here, previous
        if isinstance(item, str):
            if item.startswith("%"):
                return self.refuse(f"{item!r} names a value but does nothing with it; {_ALLOWED}")
            if "(" in item:
                return self.refuse(f"{item!r} is written as a call; {_NOT_A_CALL}")
            return self.call(None, item, None, None)
        if isinstance(item, list):  # a list _spliced keeps whole: an unnamed [TARGET, ARG, ...]
            written = json.dumps(item, default=str)
            return self.refuse(f"{written} is a call with arguments but without a name (a list among the nodes is "
                               f"several steps on one line); name its result: {{NAME: {written}}}")  # fmt: skip
        if not isinstance(item, dict) or not item:
            return self.refuse(_ALLOWED)
        if "target" in item:
            unknown = sorted(set(item) - {"name", "target", "args", "kwargs", "type"})
            if unknown:
                return self.refuse(f"a node without op has name, target, args, kwargs and type; {unknown[0]!r} is not one of "
                                   "them (write the op to use the others)")  # fmt: skip
            node = self.call(item.get("name"), item["target"], item.get("args", []), item.get("kwargs"))
            if node and "type" in item:
                node[0]["type"] = item["type"]
            return node
        if len(item) != 1 or set(item) & _NODE_KEYS:
            return self.refuse(f"{_ALLOWED}; this mapping is none of them (a node needs `op`, or `target` for its op to "
                               "be implied; a named step has one key, its name)")  # fmt: skip
        key, call = next(iter(item.items()))
        names = [name.strip(" ") for name in key.split(",")]
        bad = [name for name in names if not _IDENTIFIER.fullmatch(name)]
        if bad:
            return self.refuse(f"{key!r} is no name: a step's key is its name, an identifier, or several separated by "
                               'commas to unpack its result ("q, k, v")')  # fmt: skip
        if isinstance(call, str) and call.startswith("%") and len(names) > 1:
            return _unpacked(names, self.value(call))
        if isinstance(call, str) and call.startswith("%"):
            return [{"op": "alias", "name": names[0], "args": [self.value(call)]}]
        if isinstance(call, str):
            nodes = self.call(names[0] if len(names) == 1 else None, call, None, None)
        elif isinstance(call, list) and call and isinstance(call[0], str):
            nodes = self.call(names[0] if len(names) == 1 else None, call[0], call[1:], None)
        else:
            return self.refuse(f"the value of step {key!r} is a TARGET, [TARGET, ARG, ...] or \"%value\"; "
                               "for keyword arguments write {name: ..., target: ..., args: [...], kwargs: {...}}")  # fmt: skip
        if len(names) == 1 or not nodes:
            return nodes
        return nodes + _unpacked(names, f"%{self.name_of(nodes[0], used=True)}")

    def call(self, name: Any, target: Any, args: Any, kwargs: Any) -> list[dict[str, Any]]:
        if not isinstance(target, str) or target in ("", "."):
            return self.refuse(f"a target is a declared module's path, a function's qualified name or a .method; "
                               f"got {target!r}")  # fmt: skip
        op = self.op(target)
        if op == "get_attr" and args:
            return self.refuse(f"{target!r} is a declared parameter or buffer: it is read, not called; write it "
                               "without arguments")  # fmt: skip
        node: dict[str, Any] = {"op": op}
        if args is None:
            args = [] if op == "get_attr" else [PREVIOUS]
        if name is not None:
            node["name"] = name
        node["target"] = target[1:] if op == "call_method" else target
        if op != "get_attr" or args:
            node["args"] = self.value(args)
        if kwargs is not None:
            node["kwargs"] = self.value(kwargs)
        return [node]

    def op(self, target: str) -> str:
        return implied_op(target, self.modules, self.tensors)

    def value(self, value: Any) -> Any:
        """``value`` with each ``"%"`` the previous value's reference."""
        if value == PREVIOUS:
            if self.previous == _REFUSED:
                return value
            if self.previous is None:
                self.refuse('this step takes the previous value ("%"), but the item before it has none to give (an '
                            'unnamed node, an output, a repeat, or a conditional whose branches end with different '
                            'names); write its input as "%name"')  # fmt: skip
                return value
            if self.previous == _IMPLIED:
                self.implied_input = True
                return f"%{_INPUT['name']}"
            node = self.unnamed.pop(self.previous, None)
            if node is not None:  # used: the step takes the name torch.fx would give it
                named = {"op": node.pop("op"), "name": self.previous}
                named.update(node)
                node.clear()
                node.update(named)
            return f"%{self.previous}"
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value

    def name_of(self, node: dict[str, Any], *, used: bool = False) -> str:
        """``node``'s name; a step nobody named gets, when it is ``used``, the one torch.fx would
        give it (and keeps it reserved until then: an unused step stays unnamed, as written)."""
        if "name" in node:
            return str(node["name"])
        name = next((known for known, pending in self.unnamed.items() if pending is node), None)
        if name is None:
            name = self.name_for(node["op"], node["target"])
            self.unnamed[name] = node
        if used:
            self.previous = name
            self.value(PREVIOUS)
        return name

    def name_for(self, op: str, target: str) -> str:
        """The name torch.fx would give the node (``relu``, ``model_0``), made unique."""
        base = fx_name(op, target)
        candidate, n = base, 0
        while candidate in self.taken or _reserved(candidate):
            n += 1
            candidate = f"{base}_{n}"
        self.taken.add(candidate)
        return candidate

    def refuse(self, message: str) -> list[dict[str, Any]]:
        self.problems.append((self.here, message))
        return []


def implied_op(target: str, modules: Iterable[str], tensors: Iterable[str]) -> str:
    """The op of a compact item's ``target`` in a class declaring ``modules`` and ``tensors``
    (parameters and buffers): ``.name`` a method, a declared module or an item of one a module
    call, a declared tensor read, anything else a function."""
    if target.startswith("."):
        return "call_method"
    if any(target == path or target.startswith(path + ".") for path in modules):
        return "call_module"
    if target in tensors:
        return "get_attr"
    return "call_function"


def fx_name(op: str, target: str) -> str:
    """The name torch.fx gives a node of ``op`` calling ``target`` before it is made unique
    (``relu``, ``model_0``, ``layer1_0_conv1``)."""
    if op == "call_function":
        base = target.rsplit(".", 1)[-1]
    else:
        base = ".".join(part for part in target.lstrip(".").split(".") if not part.startswith("{"))
    base = _SNAKE.sub("_", base).lower()
    base = _ILLEGAL.sub("_", base).strip("_") or "_unnamed"
    return "_" + base if base[0].isdigit() else base


def _unpacked(names: list[str], value: Any) -> list[dict[str, Any]]:
    """``names`` given to the items of ``value``: one ``operator.getitem`` node each."""
    return [{"op": "call_function", "name": name, "target": "operator.getitem", "args": [value, k]}
            for k, name in enumerate(names)]  # fmt: skip


def _spliced(items: list[Any], source: JsonPath) -> Iterable[tuple[JsonPath, Any]]:
    """Each item with its path; a list among the items is its own items in its place (several
    steps written on one line)."""
    for i, item in enumerate(items):
        if isinstance(item, list) and not _unnamed_call(item):
            yield from _spliced(item, (*source, i))
        else:
            yield (*source, i), item


def _unnamed_call(items: list[Any]) -> bool:
    """Is ``items`` a call's ``[TARGET, ARG, ...]`` written without its name, not several steps? A
    step is never a number, a boolean, null or a ``"%value"``, and one of its arguments may be."""
    return bool(items) and isinstance(items[0], str) and any(
        item is None or isinstance(item, bool | int | float) or (isinstance(item, str) and item.startswith("%"))
        for item in items[1:])  # fmt: skip


def _reads_input(out: list[Any], written: list[Any]) -> bool:
    """Do the canonical nodes ``out`` read the chain's input ``%x`` by its name, while the nodes as
    ``written`` give no value that name and write no placeholder (so a first item that is an `if:`
    or a call of ``%x`` has the input a step taking "%" would have)?"""
    name = _INPUT["name"]
    if name in set(_written_names(written)) or any(
        isinstance(item, dict) and item.get("op") == "placeholder" for _, item in _spliced(written, ())
    ):
        return False
    return any(ref == name for _, ref in iter_refs(out))


def _reserved(name: str) -> bool:
    return keyword.iskeyword(name) or keyword.issoftkeyword(name) or hasattr(builtins, name)


def _keys(table: Any) -> set[str]:
    return {key for key in table if isinstance(key, str)} if isinstance(table, dict) else set()


def _written_names(items: Any) -> Iterable[str]:
    """Every name the items as written give a value (nodes, steps, loop indices, carries, collects)."""
    if not isinstance(items, list):
        return
    for item in items:
        if isinstance(item, list):
            yield from _written_names(item)
        elif isinstance(item, dict) and ("op" in item or "target" in item):
            if isinstance(item.get("name"), str):
                yield item["name"]
        elif isinstance(item, dict) and ("if" in item or "for" in item):
            for key in ("for", "collect"):
                if isinstance(item.get(key), str):
                    yield item[key]
            if isinstance(item.get("carry"), dict):
                yield from (k for k in item["carry"] if isinstance(k, str))
            for key in ("then", "else", "nodes"):
                yield from _written_names(item.get(key))
        elif isinstance(item, dict) and len(item) == 1:
            key = next(iter(item))
            if isinstance(key, str):
                yield from (name.strip(" ") for name in key.split(","))
