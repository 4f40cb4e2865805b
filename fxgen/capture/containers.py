"""A container's items written as a person writes them: a run of items of one class as one
``repeat`` or ``for`` (docs/spec-format.md, "{for: NAMES, in: ROWS, module: DECL}").

Export declares an ``nn.Sequential`` or ``nn.ModuleList`` item by item. Here each run of two or
more consecutive items whose declarations agree up to their numbers (``leaves``: the places a
constructor argument may stand) becomes one item:

* the same declaration N times: ``{repeat: N, module: D}``;
* values that follow the item's index ``i``: ``{for: i, in: N, module: D}`` with each such value
  an expression of ``i``: ``c + k * i`` for integers; ``v0 if i == 0 else v`` where the first
  item differs from the others (a stage's first block); ``p * (o + i) / d`` for a linear float
  schedule (a drop-path rate), found by its step and checked bit for bit;
* anything else, from four items on, or three that share a value: a table, ``{for: [NAMES],
  in: [[...], ...], module: D}`` (three ``Linear``s with nothing in common stay three items).

Nothing is guessed: the new item, expanded as ``fxgen.load`` expands it
(``fxgen.spec.resolve.module_loop``, with fxgen's own evaluator), must give back the items it
replaces, value for value and type for type, or they stay as they were. Plain data in, plain
data out.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import json
import keyword
import math
from collections.abc import Callable
from typing import Any

from fxgen.capture.class_bodies import (
    declaration_leaves,
    declaration_skeleton,
    same_values,
    value_at,
    with_args,
)
from fxgen.check.checker import RESERVED_NAMES
from fxgen.describe.recover import resolve_qualname
from fxgen.spec.expr import ExprError, evaluate, names, parse
from fxgen.spec.model import ClassSpec, ModuleSpec, Spec

__all__ = ["compact_containers"]

_SEQUENTIAL = "torch.nn.Sequential"
_MODULE_LIST = "torch.nn.ModuleList"
_MAX_DENOMINATOR = 4096  # the largest ``d`` a float schedule ``p * (o + i) / d`` is looked for with


def compact_containers(spec: Spec) -> Spec:
    """``spec`` with every Sequential's and ModuleList's runs of items written as one item."""
    taken = set(spec.classes) | set(dir(builtins)) | set(RESERVED_NAMES) | {"torch", "nn", "self", "training"}
    params = _Params(spec)
    classes = {name: dataclasses.replace(body, modules=_modules(body.modules, taken | set(body.args) | set(body.values),
                                                                params))
               for name, body in spec.classes.items()}  # fmt: skip
    modules = _modules(spec.modules, taken | set(spec.args) | set(spec.values), params)
    return dataclasses.replace(spec, classes=classes, modules=modules)


def _modules(modules: dict[str, ModuleSpec], taken: set[str], params: _Params) -> dict[str, ModuleSpec]:
    out = {}
    for path, module in modules.items():
        data = _declaration(module.to_dict(), taken, params)
        out[path] = dataclasses.replace(module, args=data.get("args", [])) if data != module.to_dict() else module
    return out


def _declaration(data: dict[str, Any], taken: set[str], params: _Params) -> dict[str, Any]:
    """A declaration with its containers' items (and theirs, innermost first) compacted."""
    cls = data.get("class")
    if cls not in (_SEQUENTIAL, _MODULE_LIST) or not data.get("args"):
        return data
    args = data["args"]
    if cls == _MODULE_LIST:
        if len(args) != 1 or not isinstance(args[0], list):
            return data
        return {**data, "args": [_items(args[0], taken, params)]}
    return {**data, "args": _items(args, taken, params)}


def _items(items: list[Any], taken: set[str], params: _Params) -> list[Any]:
    inner = [{"module": _declaration(item["module"], taken, params)} if _plain(item) else item for item in items]
    out: list[Any] = []
    start = 0
    while start < len(inner):
        end = start + 1
        if _plain(inner[start]):
            shape = _shape(inner[start])
            while end < len(inner) and _plain(inner[end]) and _shape(inner[end]) == shape:
                end += 1
        run = inner[start:end]
        written = _run(run, taken, params) if len(run) >= 2 else None
        out.extend(run if written is None else [written])
        start = end
    return out


def _plain(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {"module"} and isinstance(item["module"], dict)


def _shape(item: dict[str, Any]) -> str:
    return json.dumps(declaration_skeleton(item["module"]), sort_keys=True)


def _run(run: list[dict[str, Any]], taken: set[str], params: _Params) -> dict[str, Any] | None:
    """One item for a run of items of one shape, or None where none gives them back."""
    declarations = [item["module"] for item in run]
    first = declarations[0]
    differing = []
    for path, _ in declaration_leaves(first):
        column = [value_at(d, path) for d in declarations]
        if not same_values(column, [column[0]] * len(column)):
            differing.append((path, column))
    if not differing:
        return {"repeat": len(run), "module": first}
    taken = taken | _bound_inside(first)  # (a loop inside the item: its names are not to be shadowed)
    index = next(name for name in ("i", "j", "k", "idx", "index") if name not in taken)
    by_index = {path: _of_index(column, index) for path, column in differing}
    if all(text is not None for text in by_index.values()):
        template = with_args(first, {path: text for path, text in by_index.items() if text is not None})
        written: dict[str, Any] = {"for": index, "in": len(run), "module": template}
    elif len(run) >= 4 or (len(run) == 3 and len(differing) < len(declaration_leaves(first))):
        names = params.names(first, [path for path, _ in differing], taken)
        template = with_args(first, dict(zip([path for path, _ in differing], names, strict=True)))
        rows = [[column[k] for _, column in differing] for k in range(len(run))]
        written = {"for": names if len(names) > 1 else names[0], "in": rows if len(names) > 1 else [r[0] for r in rows],
                   "module": template}  # fmt: skip
    else:
        return None
    return written if _gives_back(written, declarations) else None


def _bound_inside(value: Any) -> set[str]:
    """The names the ``for`` items inside a declaration bind."""
    if isinstance(value, list):
        return {name for item in value for name in _bound_inside(item)}
    if not isinstance(value, dict):
        return set()
    found = {name for item in value.values() for name in _bound_inside(item)}
    if "for" in value and "module" in value:
        found |= {value["for"]} if isinstance(value["for"], str) else set(value["for"])
    return found


def _of_index(column: list[Any], i: str) -> str | None:
    """An expression of the index ``i`` whose value at each ``k`` is ``column[k]``, exactly,
    from three items on (two items fit any line and any first-differs: they stay written out)."""
    kind = type(column[0])
    if len(column) < 3 or any(type(v) is not kind for v in column) or kind not in (int, float, bool):
        return None
    first, rest = column[0], column[1:]
    if same_values(rest, [rest[0]] * len(rest)):  # (only the first differs: a stage's first block)
        if kind is bool:
            return f"{i} == 0" if first else f"{i} != 0"
        return f"{_literal(first)} if {i} == 0 else {_literal(rest[0])}"
    if kind is int:
        step = column[1] - column[0]
        if all(v == first + step * k for k, v in enumerate(column)):
            return _affine(first, step, i)
        return None
    if kind is float:
        return _schedule(column, i)
    return None


def _affine(start: int, step: int, i: str) -> str:
    term = i if abs(step) == 1 else f"{abs(step)} * {i}"
    if start == 0:
        return term if step > 0 else f"-{term}"
    return f"{start} {'+' if step > 0 else '-'} {term}"


def _schedule(column: list[float], i: str) -> str | None:
    """``p * (o + i) / d``, as a linear schedule over a model's blocks is computed
    (``rate * block_index / (blocks - 1)``), where that gives every value bit for bit; of those
    that do, the one whose rate is written shortest (``0.2 * (5 + i) / 16.0``, not
    ``0.0125 * (5 + i) / 1.0``), then the smallest ``d``."""
    step = column[1] - column[0]
    if not all(math.isfinite(v) for v in column) or step <= 0:
        return None
    best: tuple[int, int, str] | None = None
    for d in range(1, _MAX_DENOMINATOR + 1):
        p = float(f"{step * d:.4g}")
        if p == 0 or abs(p - step * d) > 1e-9 * abs(p) or (best is not None and len(repr(p)) >= best[0]):
            continue
        o = round(column[0] * d / p)
        if o < 0 or not all(p * (o + k) / float(d) == v for k, v in enumerate(column)):
            continue
        index = i if o == 0 else f"({o} + {i})"
        best = (len(repr(p)), d, f"{p!r} * {index}" if d == 1 else f"{p!r} * {index} / {float(d)!r}")
    return None if best is None else best[2]


def _literal(value: int | float) -> str:
    return repr(value)


def _gives_back(item: dict[str, Any], declarations: list[dict[str, Any]]) -> bool:
    """Does ``item``, expanded with fxgen's own evaluator, give exactly ``declarations``? Only
    the names the item binds are evaluated: the class's own arguments stay as written."""
    if "repeat" in item:
        return all(d == item["module"] for d in declarations)
    names = [item["for"]] if isinstance(item["for"], str) else list(item["for"])
    rows = list(range(item["in"])) if isinstance(item["in"], int) else item["in"]
    if len(rows) != len(declarations):
        return False
    for row, own in zip(rows, declarations, strict=True):
        env = dict(zip(names, row if len(names) > 1 else [row], strict=True))
        try:
            made = _bound(item["module"], env)
        except ExprError:
            return False
        if json.dumps(made) != json.dumps(own) or not _same_types(made, own):
            return False
    return True


def _bound(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        text = value.get("arg")
        if len(value) == 1 and isinstance(text, str):
            tree = parse(text)
            return evaluate(tree, env) if set(names(tree)) <= set(env) else value
        return {key: _bound(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_bound(item, env) for item in value]
    return value


def _same_types(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b)


class _Params:
    """Names for a table's columns: the constructor parameter each value is given as."""

    def __init__(self, spec: Spec) -> None:
        self.classes: dict[str, ClassSpec] = spec.classes

    def names(self, declaration: dict[str, Any], paths: list[tuple[Any, ...]], taken: set[str]) -> list[str]:
        used = set(taken)
        out = []
        for path in paths:
            base = self._name(declaration, path)
            name, n = base, 2
            while name in used or keyword.iskeyword(name) or not name.isidentifier():
                name = f"{base}_{n}"
                n += 1
            used.add(name)
            out.append(name)
        return out

    def _name(self, declaration: dict[str, Any], path: tuple[Any, ...]) -> str:
        """The parameter the value at ``path`` is given as: ``("args", 2)`` of a ``CNBlock`` is
        its third argument's name; a module value's own arguments are looked up in its class."""
        owner, name, k = declaration, "value", 0
        while k + 1 < len(path) and path[k] in ("args", "kwargs"):
            key, position = path[k], path[k + 1]
            name = str(position) if key == "kwargs" else self._param(str(owner.get("class")), position)
            value = owner[key][position]
            if k + 2 < len(path) and path[k + 2] == "module" and isinstance(value, dict):
                owner, k = value["module"], k + 3
            else:
                break
        return name

    def _param(self, cls: str, position: Any) -> str:
        if not isinstance(position, int):
            return str(position)
        names = list(self.classes[cls].args) if cls in self.classes else _init_params(cls)
        return names[position] if position < len(names) else "value"


def _init_params(qualname: str) -> list[str]:
    try:
        init: Callable[..., Any] = resolve_qualname(qualname).__init__
        params = inspect.signature(init).parameters.values()
    except Exception:
        return []
    return [p.name for p in params if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
