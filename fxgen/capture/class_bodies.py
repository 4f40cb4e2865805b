"""Block instances' spec bodies compared and merged, for ``fxgen.capture.blocks``.

A body is one instance written as a class body (its declarations and nodes, as data). Here:
where a constructor argument may stand in it (``leaves``: scalars of module arguments and
tensor shapes), which instances share a skeleton and so a class (``groups``), the body of two
groups where one has an optional submodule the other lacks or a node constant differs
(``merge_bodies``), and the proofs that a class built with one instance's values gives back
that instance's own body (``bound``, ``same_instance``). Plain values in, plain values out: the
naming of arguments and classes stays in ``blocks``.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any

from fxgen.describe.align import Differing, Unaligned, align, map_refs_node
from fxgen.describe.recover import resolve_qualname
from fxgen.spec.expr import ExprError
from fxgen.spec.model import Node, item_from_data
from fxgen.spec.resolve import declared, resolve_nodes, substitute, substitute_declaration

__all__ = [
    "bound",
    "groups",
    "leaves",
    "markers",
    "merge_bodies",
    "merged_with_args",
    "same_instance",
    "same_values",
    "value_at",
    "with_args",
    "with_defaults",
]


_MISSING = object()


def groups(keys: list[int], bodies: dict[int, dict[str, Any]]) -> list[list[int]]:
    """Instances whose bodies differ only in numbers and strings where an argument may stand
    (module arguments, shapes): one group per class to write. Nodes hold no such place: each
    list of them is written once (instances with one graph share it)."""
    if len(keys) == 1:  # (nothing to tell apart)
        return [list(keys)]
    groups: dict[tuple[str, str], list[int]] = {}
    nodes: dict[int, str] = {}
    if len({id(bodies[k].get("nodes")) for k in keys}) == 1:  # one list (one graph module): equal nodes
        nodes[id(bodies[keys[0]].get("nodes"))] = ""
    for k in keys:
        body = bodies[k]
        listed = body.get("nodes")
        if id(listed) not in nodes:
            nodes[id(listed)] = json.dumps(listed, sort_keys=True)
        rest = {key: value for key, value in body.items() if key != "nodes"}
        groups.setdefault((json.dumps(_skeleton(rest), sort_keys=True), nodes[id(listed)]), []).append(k)
    return list(groups.values())


def _skeleton(body: dict[str, Any]) -> Any:
    """The body with each leaf an argument may replace written as its type only."""
    out = json.loads(json.dumps(body))
    for path, value in leaves(body):
        target = out
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = f"\0{type(value).__name__}"
    return out


def leaves(body: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """Where an argument may stand, with the value there: scalars in module arguments (nested
    module values included) and in parameter and buffer shapes. (One list filled by plain
    recursion: every instance's body is walked, a generator per level cost more than the walk.)"""
    found: list[tuple[tuple[Any, ...], Any]] = []
    for table in ("modules", "parameters", "buffers"):
        for path, entry in body.get(table, {}).items():
            if table == "modules":
                _argument_leaves(entry, (table, path), found)
            else:
                for i, size in enumerate(entry.get("shape", [])):
                    if type(size) is int:
                        found.append(((table, path, "shape", i), size))
    return found


def _argument_leaves(entry: dict[str, Any], at: tuple[Any, ...], found: list[tuple[tuple[Any, ...], Any]]) -> None:
    for key in ("args", "kwargs"):
        values = entry.get(key)
        items = enumerate(values) if isinstance(values, list) else (values or {}).items()
        for position, value in items:
            _value_leaves(value, (*at, key, position), found)


def _value_leaves(value: Any, at: tuple[Any, ...], found: list[tuple[tuple[Any, ...], Any]]) -> None:
    """Scalars of an encoded value, inside tuples and lists too (``kernel_size: (3, 3)``); a
    module value's own arguments."""
    kind = type(value)
    if kind is int or kind is float or kind is bool or (isinstance(value, str) and not value.startswith("%")):
        found.append((at, value))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _value_leaves(item, (*at, i), found)
    elif isinstance(value, dict) and len(value) == 1:
        if "module" in value:
            _argument_leaves(value["module"], (*at, "module"), found)
        elif "tuple" in value and isinstance(value["tuple"], list):
            for i, item in enumerate(value["tuple"]):
                _value_leaves(item, (*at, "tuple", i), found)


def value_at(body: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        body = body[step]
    return body


def with_args(first: dict[str, Any], group: list[int], bodies: dict[int, dict[str, Any]],
               arg_of: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    if not arg_of:  # (no argument: the first body as it is, which nothing changes)
        return first
    body = json.loads(json.dumps(first))
    for path, _ in leaves(first):
        column = json.dumps([value_at(bodies[k], path) for k in group])
        if column in arg_of:
            target = body
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = {"arg": arg_of[column]}
    return body


def bound(body: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """A class body built with the arguments ``env``: what fxgen.load makes of it."""
    out = dict(body)
    if "modules" in out:
        out["modules"] = {path: substitute_declaration(entry, env) for path, entry in out["modules"].items()}
    for table in ("parameters", "buffers"):
        if table in out:
            out[table] = {path: _shaped(entry, env) for path, entry in out[table].items()}
    return out


_FLAG = "\0flag"  # the merged class's bool argument, until it is named
_CONSTANT = "\0["  # how a node constant that differs begins, until its argument is named


def merge_bodies(first: dict[str, Any], second: dict[str, Any]) -> tuple[dict[str, Any], list[str], bool] | None:
    """The body of one class for two bodies (two groups' first instances), or None where they
    differ other than thus: ``second`` declares modules ``first`` does not (``extras``, each
    declared ``if:`` the flag), and its nodes differ from ``first``'s only in runs where it calls
    them and ``first`` names a value it already has (an alias), and in node constants (each
    written as a marker ``{arg: "\0[first, second]"}``). Also whether the flag is needed."""
    modules = [first.get("modules", {}), second.get("modules", {})]
    extras = [path for path in modules[1] if path not in modules[0]]
    if [path for path in modules[1] if path in modules[0]] != list(modules[0]):
        return None
    if any("." in path for path in extras):  # (an item of a container is no submodule a condition declares)
        return None
    rests = [{key: value for key, value in body.items() if key != "nodes"} for body in (first, second)]
    if extras:
        rests[1]["modules"] = {path: entry for path, entry in modules[1].items() if path in modules[0]}
        if not rests[1]["modules"] and "modules" not in rests[0]:
            del rests[1]["modules"]
    if json.dumps(_skeleton(rests[0]), sort_keys=True) != json.dumps(_skeleton(rests[1]), sort_keys=True):
        return None
    nodes = [[item_from_data(data) for data in body["nodes"]] for body in (first, second)]
    if not all(type(item) is Node for item in (*nodes[0], *nodes[1])):
        return None
    try:
        aligned = align(nodes[0], nodes[1], mode=False, constant=_constant, aliases=True)
    except Unaligned:
        return None
    runs = [item for item in aligned.items if isinstance(item, Differing)]
    if any(any(node.op != "alias" for node in run.eval) or not _from_extras(run.train, extras) for run in runs):
        return None
    declarations = {path: {**entry, "if": _FLAG} if path in extras else entry for path, entry in modules[1].items()}
    template = {**second, "modules": declarations,
                "nodes": [item.to_dict() for item in aligned.spec_items(_FLAG, f"not {_FLAG}")]}  # fmt: skip
    if not template["modules"]:
        del template["modules"]
    return template, extras, bool(extras or runs)


def with_defaults(bodies: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]] | None:
    """The bodies with each module declaration that some instance gives a keyword another
    leaves out given that keyword's default too (``stride: 1`` where a declaration recovered
    with its default omits it), so that their declarations line up; the keywords in the
    constructor's order. None where a default left out is not a plain value of the signature."""
    kwargs: dict[str, dict[str, None]] = {}
    for body in bodies.values():
        for path, entry in body.get("modules", {}).items():
            kwargs.setdefault(path, {}).update(dict.fromkeys(entry.get("kwargs", {})))
    out: dict[int, dict[str, Any]] = {}
    for k, body in bodies.items():
        modules = dict(body.get("modules", {}))
        for path, entry in modules.items():
            missing = [key for key in kwargs[path] if key not in entry.get("kwargs", {})]
            if not missing:
                continue
            signature = _signature(entry["class"])
            if signature is None:
                return None
            filled = dict(entry.get("kwargs", {}))
            for key in missing:
                default = signature.get(key, _MISSING)
                if type(default) not in (int, float, bool, str, type(None)):
                    return None
                filled[key] = default
            names = list(signature)
            ordered = sorted(filled, key=lambda key: names.index(key) if key in names else len(names))
            modules[path] = {**entry, "kwargs": {key: filled[key] for key in ordered}}
        out[k] = {**body, "modules": modules} if "modules" in body else body
    return out


@functools.lru_cache(maxsize=256)
def _signature(qualname: str) -> dict[str, Any] | None:
    """A module class's ``__init__`` parameters and their defaults (None: no such class)."""
    cls = resolve_qualname(qualname)
    try:
        params = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return None
    return {p.name: p.default for p in params if p.name != "self"}


def _constant(first: Any, second: Any) -> dict[str, str]:
    return {"arg": _CONSTANT[0] + json.dumps([first, second])}


def _from_extras(nodes: list[Node], extras: list[str]) -> bool:
    """Is every node a call of (or a read from) an extra module, or computed from one of those?"""
    made: set[str] = set()
    for node in nodes:
        target = str(node.target)
        if not (node.op in ("call_module", "get_attr") and any(target == p or target.startswith(f"{p}.") for p in extras)) \
                and not _reads(node) & made:  # fmt: skip
            return False
        made.add(str(node.name))
    return bool(nodes)


def _reads(node: Node) -> set[str]:
    """The names ``node`` reads."""
    read: set[str] = set()

    def note(name: str) -> str:
        read.add(name)
        return name

    map_refs_node(node, note)
    read.discard(str(node.name))  # (map_refs_node passes the node's own name too)
    return read


def markers(value: Any) -> list[str]:
    """The node constants' markers in ``value``, in order, once each."""
    found: dict[str, None] = {}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            marker = item.get("arg")
            if len(item) == 1 and isinstance(marker, str) and marker.startswith(_CONSTANT):
                found[marker] = None
            else:
                stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return list(found)


def same_values(a: list[Any], b: list[Any]) -> bool:
    return all(type(x) is type(y) and x == y for x, y in zip(a, b, strict=True))


def merged_with_args(template: dict[str, Any], at: dict[tuple[Any, ...], str], constants: dict[str, str],
                      flag: str | None) -> dict[str, Any]:  # fmt: skip
    """The merged class's body: its arguments where the columns are, the flag named."""
    body = json.loads(json.dumps(template))
    for path, arg in at.items():
        target = body
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = {"arg": arg}

    def named(value: Any) -> Any:
        if isinstance(value, dict):
            marker = value.get("arg")
            if len(value) == 1 and isinstance(marker, str) and marker in constants:
                return {"arg": constants[marker]}
            return {key: named(item) if key != "if" else str(item).replace(_FLAG, str(flag)) for key, item in value.items()}
        if isinstance(value, list):
            return [named(item) for item in value]
        return value

    return named(body)


def same_instance(body: dict[str, Any], env: dict[str, Any], own: dict[str, Any]) -> bool:
    """Does the merged class's ``body``, built with one instance's arguments ``env``, give that
    instance's own body: its declarations in its order, and its nodes node for node (the names
    aside: a branch's nodes may be renamed)?"""
    for key in {*body, *own} - {"nodes", "modules", "parameters", "buffers"}:
        if body.get(key) != own.get(key):
            return False
    modules = {path: substitute_declaration(entry, env) for path, entry in body.get("modules", {}).items()
               if declared(entry, env)}  # fmt: skip
    theirs = own.get("modules", {})
    if list(modules) != list(theirs) or modules != theirs:
        return False
    for table in ("parameters", "buffers"):
        if {path: _shaped(entry, env) for path, entry in body.get(table, {}).items()} != own.get(table, {}):
            return False
    try:
        nodes = resolve_nodes([item_from_data(data) for data in body["nodes"]], env)
    except ExprError:
        return False
    return _canonical(nodes) == _canonical([Node(**data) for data in own["nodes"]])


def _canonical(nodes: list[Node]) -> list[Node]:
    """``nodes`` with the names they define numbered in order (references follow)."""
    names = {str(node.name): f"v{k}" for k, node in enumerate(nodes) if node.name is not None}
    return [map_refs_node(node, lambda name: names.get(name, name)) for node in nodes]


def _shaped(entry: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "shape": substitute(entry["shape"], env)} if "shape" in entry else entry
