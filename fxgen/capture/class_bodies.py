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
from collections.abc import Callable
from typing import Any

from fxgen.describe.align import Differing, Unaligned, align, map_refs_node
from fxgen.describe.recover import resolve_qualname
from fxgen.spec.expr import ExprError, evaluate, names, parse
from fxgen.spec.model import Node, item_from_data
from fxgen.spec.resolve import declared, resolve_nodes, substitute, substitute_declaration

__all__ = [
    "bound",
    "declaration_leaves",
    "declaration_skeleton",
    "derived",
    "groups",
    "leaves",
    "list_places",
    "markers",
    "merge_bodies",
    "merged_with_args",
    "same_instance",
    "same_values",
    "skeleton",
    "value_at",
    "with_args",
    "with_defaults",
]


_MISSING = object()


def groups(keys: list[int], bodies: dict[int, dict[str, Any]]) -> list[list[int]]:
    """Instances whose bodies differ only in numbers and strings where an argument may stand
    (module arguments, shapes, node constants): one group per class to write, however many
    instances and values it has (the values become its arguments all at once). Instances with
    one graph share one list of nodes: its skeleton is worked out once."""
    if len(keys) == 1:  # (nothing to tell apart)
        return [list(keys)]
    groups: dict[tuple[str, str], list[int]] = {}
    nodes: dict[int, str] = {}
    for k in keys:
        body = bodies[k]
        listed = body.get("nodes")
        if id(listed) not in nodes:
            nodes[id(listed)] = json.dumps(skeleton({"nodes": listed}), sort_keys=True)
        rest = {key: value for key, value in body.items() if key != "nodes"}
        groups.setdefault((json.dumps(skeleton(rest), sort_keys=True), nodes[id(listed)]), []).append(k)
    return list(groups.values())


def skeleton(body: dict[str, Any]) -> Any:
    """The body with each leaf an argument may replace written as its type only."""
    return _typed(body, leaves(body))


def declaration_skeleton(declaration: dict[str, Any]) -> Any:
    """``skeleton`` of one module declaration: what a run of a container's items shares."""
    return _typed(declaration, declaration_leaves(declaration))


def _typed(value: Any, found: list[tuple[tuple[Any, ...], Any]]) -> Any:
    out = json.loads(json.dumps(value))
    for path, leaf in found:
        target = out
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = f"\0{type(leaf).__name__}"
    return out


def leaves(body: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """Where an argument may stand, with the value there: scalars in module arguments (nested
    module values included), in parameter and buffer shapes, and in the arguments of the nodes
    that compute (``stochastic_depth(x, 0.1, "row")``). (One list filled by plain recursion:
    every instance's body is walked, a generator per level cost more than the walk.)"""
    found: list[tuple[tuple[Any, ...], Any]] = []
    for table in ("modules", "parameters", "buffers"):
        for path, entry in body.get(table, {}).items():
            if table == "modules":
                _argument_leaves(entry, (table, path), found)
            else:
                for i, size in enumerate(entry.get("shape", [])):
                    if type(size) is int:
                        found.append(((table, path, "shape", i), size))
    _node_leaves(body.get("nodes", []), ("nodes",), found)
    return found


def _node_leaves(items: list[Any], at: tuple[Any, ...], found: list[tuple[tuple[Any, ...], Any]]) -> None:
    """The constants of the calls in a node list (nested ``if``/``for`` items' lists too)."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if item.get("op") in _CALLS:
            _argument_leaves(item, (*at, i), found)
        for key in ("then", "else", "nodes"):
            if isinstance(item.get(key), list) and "op" not in item:
                _node_leaves(item[key], (*at, i, key), found)


_CALLS = frozenset({"call_function", "call_method", "call_module"})


def declaration_leaves(entry: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """``leaves`` of one module declaration, paths from the declaration (``("args", 0)``)."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    _argument_leaves(entry, (), found)
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


def derived(columns: dict[str, list[Any]]) -> dict[str, tuple[str, Callable[[str], str]]]:
    """The columns that are a function of an earlier one, instance for instance: each one's
    source column and how to write it from the source's argument name (``4 * dim``,
    ``dim // 2``, ``dim + 1``, ``2 * dim + 1``). Integers only, and a small fixed set of forms,
    each holding on every instance, with three distinct values at least. The rest are
    arguments of their own."""
    out: dict[str, tuple[str, Callable[[str], str]]] = {}
    sources: list[tuple[str, list[int]]] = []
    for key, column in columns.items():
        if not all(type(v) is int for v in column):
            continue
        form = next(((source, f) for source, values in sources if (f := _form(values, column)) is not None), None)
        if form is not None:
            out[key] = form
        else:
            sources.append((key, column))
    return out


def _form(x: list[int], y: list[int]) -> Callable[[str], str] | None:
    """How ``y`` is written from ``x``'s name, where one of the forms gives it exactly on at
    least three distinct values of ``x`` (two fit too much by chance: channels 4 and 8 with
    strides 1 and 2 are no ``stride = channels // 4``)."""
    if len(set(x)) < 3:
        return None
    k = y[0] // x[0] if x[0] else 0
    if k >= 2 and all(b == k * a for a, b in zip(x, y, strict=True)):
        return lambda name: f"{k} * {name}"
    k = x[0] // y[0] if y[0] else 0
    if k >= 2 and all(a == k * b for a, b in zip(x, y, strict=True)):
        return lambda name: f"{name} // {k}"
    offset = y[0] - x[0]
    if offset and all(b - a == offset for a, b in zip(x, y, strict=True)):
        return lambda name: f"{name} + {offset}" if offset > 0 else f"{name} - {-offset}"
    points = dict(zip(x, y, strict=True))
    if len(set(x)) == len(points):
        (x0, y0), (x1, y1) = list(points.items())[:2]
        if (y1 - y0) % (x1 - x0) == 0:
            a = (y1 - y0) // (x1 - x0)
            b = y0 - a * x0
            if a >= 2 and all(v == a * u + b for u, v in zip(x, y, strict=True)):
                return lambda name: f"{a} * {name} + {b}" if b >= 0 else f"{a} * {name} - {-b}"
    return None


def with_args(first: dict[str, Any], at: dict[tuple[Any, ...], str]) -> dict[str, Any]:
    """``first`` with ``{arg: TEXT}`` at each place of ``at`` (an argument's name, or an
    expression of them)."""
    if not at:  # (no argument: the first body as it is, which nothing changes)
        return first
    body = json.loads(json.dumps(first))
    for path, text in at.items():
        target = body
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = {"arg": text}
    return body


def list_places(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Where a body holds a list of constants a node computes with or a module is built with
    (``torch.permute(x, [0, 2, 3, 1])``): a place an argument that is a list may stand."""
    places: dict[tuple[Any, ...], None] = {}
    for path, _ in leaves(body):
        parent = path[:-1]
        if isinstance(parent[-1], int) and parent[-2] not in ("shape", "tuple") and isinstance(value_at(body, parent), list):
            places[parent] = None
    return list(places)


def bound(body: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """A class body built with the arguments ``env``: what fxgen.load makes of it (its nodes
    with each ``{arg: NAME}`` of ``env`` replaced by its value; ``{arg: training}`` stays, the
    mode being no argument of the instance)."""
    out = dict(body)
    if "modules" in out:
        out["modules"] = {path: substitute_declaration(entry, env) for path, entry in out["modules"].items()}
    for table in ("parameters", "buffers"):
        if table in out:
            out[table] = {path: _shaped(entry, env) for path, entry in out[table].items()}
    if "nodes" in out:
        out["nodes"] = _named_values(out["nodes"], env)
    return out


def _named_values(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        name = value.get("arg")
        if len(value) == 1 and isinstance(name, str):
            if name in env:
                return env[name]
            tree = parse(name)
            if set(names(tree)) <= set(env):  # (a value derived from arguments: ``4 * dim``)
                return evaluate(tree, env)
            return value
        return {key: _named_values(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_named_values(item, env) for item in value]
    return value


_FLAG = "\0flag"  # the merged class's bool argument, until it is named
_CONSTANT = "\0["  # how a node constant that differs begins, until its argument is named


def merge_bodies(first: dict[str, Any], second: dict[str, Any], *,
                 branches: bool = False) -> tuple[dict[str, Any], list[str], bool] | None:  # fmt: skip
    """The body of one class for two bodies (two groups' first instances), or None where they
    differ other than thus: ``second`` declares modules ``first`` does not (``extras``, each
    declared ``if:`` the flag), and its nodes differ from ``first``'s only in runs where it calls
    them and ``first`` names a value it already has (an alias), and in node constants (each
    written as a marker ``{arg: "\0[first, second]"}``). Also whether the flag is needed.
    With ``branches`` (the instances store a bool that tells the groups apart, which their
    forward branches on: MobileNetV2's ``self.use_res_connect``) a run of ``second``'s may
    compute anything from what both have (the residual ``x + conv(x)``)."""
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
    if json.dumps(skeleton(rests[0]), sort_keys=True) != json.dumps(skeleton(rests[1]), sort_keys=True):
        return None
    nodes = [[item_from_data(data) for data in body["nodes"]] for body in (first, second)]
    if not all(type(item) is Node for item in (*nodes[0], *nodes[1])):
        return None
    try:
        aligned = align(nodes[0], nodes[1], mode=False, constant=_constant, aliases=True)
    except Unaligned:
        return None
    runs = [item for item in aligned.items if isinstance(item, Differing)]
    if any(any(node.op != "alias" for node in run.eval) or not (branches or _from_extras(run.train, extras))
           for run in runs):  # fmt: skip
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
    constructor's order. Declarations inside module values count too (the items of a
    Sequential: ResNet's ``downsample``), by their place. None where a default left out is not
    a plain value of the signature."""
    kwargs: dict[tuple[Any, ...], dict[str, None]] = {}
    for body in bodies.values():
        for site, entry in _declarations(body):
            kwargs.setdefault(site, {}).update(dict.fromkeys(entry.get("kwargs", {})))
    out: dict[int, dict[str, Any]] = {}
    for k, body in bodies.items():
        filled_body: dict[str, Any] | None = None
        for site, entry in _declarations(body):
            missing = [key for key in kwargs[site] if key not in entry.get("kwargs", {})]
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
            if filled_body is None:
                filled_body = json.loads(json.dumps(body))
            value_at(filled_body, site)["kwargs"] = {key: filled[key] for key in ordered}
        out[k] = body if filled_body is None else {**filled_body, "nodes": body.get("nodes")} if "nodes" in body else filled_body
    return out


def _declarations(body: dict[str, Any]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Every module declaration of a body with its place: its modules' and, inside their
    arguments, the module values' (``("modules", "downsample", "args", 0, "module")``)."""
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def walk(entry: dict[str, Any], at: tuple[Any, ...]) -> None:
        found.append((at, entry))
        for key in ("args", "kwargs"):
            values = entry.get(key)
            items = enumerate(values) if isinstance(values, list) else (values or {}).items()
            for position, value in items:
                if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("module"), dict):
                    walk(value["module"], (*at, key, position, "module"))

    for path, entry in body.get("modules", {}).items():
        walk(entry, ("modules", path))
    return found


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
