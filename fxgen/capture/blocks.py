"""A traced hierarchy -> a format-2 Spec: the model's own classes kept as blocks.

Each block instance is first written as a spec body of its own (its nodes; its modules,
parameters and buffers, recovered and verified as in a flat export). Instances of one Python
class whose graphs and declarations agree up to some numbers share one generated class: the
numbers that differ become its constructor arguments, one argument per distinct column of
values, named after the ``__init__`` parameter the instances store under that name
(``self.stride = stride``) or else after what the value feeds (``conv1_out_channels``).
Instances whose graphs differ only where an optional submodule is present (ResNet's
``downsample``), or in a node constant, share one class too: a bool argument declares the
submodule (``if: downsample``) and chooses the branch of the nodes that calls it, a constant is
an argument (``_make_merged``). Instances that differ otherwise get a class each (``Block``,
``Block2``). Nothing is guessed: substituting each instance's own values back into its class
gives exactly its body (its nodes resolved with them: its graph node for node), which is
checked before the spec is handed on.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import json
import keyword
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from fxgen._errors import ExportError
from fxgen.capture.class_bodies import (
    bound,
    derived,
    groups,
    leaves,
    list_places,
    markers,
    merge_bodies,
    merged_with_args,
    same_instance,
    same_values,
    value_at,
    with_args,
    with_defaults,
)
from fxgen.capture.hierarchy import (
    Hierarchy,
    NotTheSame,
    block_classes,
    rewrites_state,
)
from fxgen.capture.keywords import torch_keywords
from fxgen.capture.options import CaptureOptions
from fxgen.check.checker import RESERVED_NAMES
from fxgen.describe.rebuild import RebuildCache
from fxgen.describe.recover import resolve_qualname
from fxgen.describe.to_spec import (
    Submodules,
    avoid_reserved_names,
    graph_module_to_spec,
    recover_declaration,
    tensor_dtype,
    valued_buffer,
)
from fxgen.spec.model import (
    ArgSpec,
    BufferSpec,
    ClassSpec,
    ModuleSpec,
    ParameterSpec,
    Spec,
)

__all__ = ["equal_classes", "hierarchical_spec", "keep_blocks"]


_PENDING = "\0block:"  # the class of a block instance not yet given one, while bodies are written


def keep_blocks(module: torch.nn.Module, flat: torch.fx.GraphModule, options: CaptureOptions, name: str, *,
                doc: str | None = None) -> tuple[Spec | None, list[str]]:  # fmt: skip
    """The format-2 spec keeping every user class that can be a block, and a note for each
    class inlined (why); None when no class can be kept (export then writes the flat graph).

    The graph is split by the module calls each node ran inside (``partition.partition_blocks``:
    symbolic tracing, with any tracer, and TorchDynamo both record them). All classes are tried
    together; the class a difference points at (the block whose graph holds the first node that
    differs, or which cannot be split off) is inlined and the rest tried again. A difference
    that points at no class falls back to trying them one by one."""
    attempt = _Attempt(module, flat, options, name, doc)
    classes = block_classes(module, options)
    if classes and not any("nn_module_stack" in node.meta for node in flat.graph.nodes):
        return None, ["export: the model's classes are not kept as blocks: no node of the captured graph records "
                      "the module calls it ran inside (nn_module_stack; a tracer whose create_node drops it), "
                      "which is what the graph is split by"]  # fmt: skip
    reasons: dict[type, str] = {}
    spec: Spec | None = None
    while classes:
        try:
            spec = attempt(classes)
            break
        except NotTheSame as exc:
            if exc.culprit not in classes:
                spec, classes = _one_by_one(attempt, classes, reasons)
                break
            for cls, why in {exc.culprit: str(exc), **exc.more}.items():
                reasons.setdefault(cls, why)
                if cls in classes:
                    classes.remove(cls)
        except ExportError as exc:  # what a flat export may still write: it decides (and says why)
            return None, [f"export: the model's classes are not kept as blocks: {exc.message}"]
    notes = [f"export: {_qualname(cls)} is inlined into its parent, not kept as a block: {why}"
             for cls, why in reasons.items()]  # fmt: skip
    return spec, notes


class _Attempt:
    """The spec keeping some classes as blocks, or NotTheSame / ExportError saying why not."""

    def __init__(self, module: torch.nn.Module, flat: torch.fx.GraphModule, options: CaptureOptions, name: str,
                 doc: str | None) -> None:  # fmt: skip
        self.module, self.flat, self.options, self.name, self.doc = module, flat, options, name, doc

    def __call__(self, classes: list[type]) -> Spec:
        from fxgen.capture.partition import partition_blocks

        hierarchy = partition_blocks(self.module, self.flat, classes, self.options)
        return hierarchical_spec(hierarchy, self.module, self.name, doc=self.doc)


def _one_by_one(attempt: _Attempt, classes: list[type], reasons: dict[type, str]) -> tuple[Spec | None, list[type]]:
    """When a difference points at no class (the parent fails on a leaf's result): each class
    on its own, then those that agreed alone, added one at a time while they still agree."""
    alone = [cls for cls in classes if _try(attempt, [cls], reasons) is not None]
    kept: list[type] = []
    best: Spec | None = None
    for cls in alone:
        spec = _try(attempt, [*kept, cls], {})
        if spec is not None:
            kept.append(cls)
            best = spec
        else:
            reasons[cls] = "it does not trace the same alongside the other blocks"
    return best, kept


def _try(attempt: _Attempt, classes: list[type], reasons: dict[type, str]) -> Spec | None:
    try:
        return attempt(classes)
    except (NotTheSame, ExportError) as exc:
        if len(classes) == 1:
            reasons[classes[0]] = str(exc)
        return None


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def hierarchical_spec(hierarchy: Hierarchy, module: torch.nn.Module, name: str, doc: str | None = None) -> Spec:
    """The format-2 spec of a traced hierarchy (``module`` is the model it was traced from)."""
    return _Writer(hierarchy, module).spec(name, doc)


class _Writer:
    def __init__(self, hierarchy: Hierarchy, module: torch.nn.Module) -> None:
        self.hierarchy = hierarchy
        self.module = module
        self.cache = RebuildCache()
        self.names: dict[type, str] = {}
        self.instances: dict[int, torch.nn.Module] = {id(m): m for m in module.modules() if id(m) in hierarchy.blocks}
        self.raw: dict[int, dict[str, Any]] = {}  # instance -> its body, nested blocks pending
        self.inside: dict[int, set[int]] = {}  # instance -> the block instances its body declares
        self.declared: dict[int, dict[str, Any]] = {}  # instance -> its declaration ({class, args})
        self.classes: dict[str, ClassSpec] = {}
        self.arg_names: dict[str, list[str]] = {}  # block class -> its arguments, in order
        self.order = _ModelOrder(module, hierarchy.paths)
        self.submodules: dict[int, Submodules] = {}  # owner -> its paths' modules, looked up once

    def spec(self, name: str, doc: str | None) -> Spec:
        for key, gm in self.hierarchy.blocks.items():
            block, first = self.instances[key], self.hierarchy.shared.get(key)
            if first is None:
                self.raw[key], self.inside[key] = self._body(gm, type(block).__name__, block)
            else:
                self.raw[key], self.inside[key] = self._shared_body(gm, self.raw[first], block)
        top, _ = self._body(self.hierarchy.root, name, self.module)
        self._name_classes(taken={name})
        body = self._resolved_body(top)
        return Spec(fxgen=2, name=name, doc=doc, classes=self.classes, **_fields(body))

    # -- one graph's body, nested blocks pending -------------------------------------------
    def _body(self, gm: torch.fx.GraphModule, name: str, original: torch.nn.Module) -> tuple[dict[str, Any], set[int]]:
        given, inside = self._given(gm, gm)
        avoid_reserved_names(gm.graph)
        torch_keywords(gm.graph)
        spec = graph_module_to_spec(gm, name=name, given=given, cache=self.cache)
        body = {key: value for key, value in spec.to_dict().items() if key not in ("fxgen", "name", "doc")}
        return self.order.sorted(body, original), inside

    def _shared_body(self, gm: torch.fx.GraphModule, first: dict[str, Any],
                     block: torch.nn.Module) -> tuple[dict[str, Any], set[int]]:  # fmt: skip
        """The body of an instance whose graph module is an earlier instance's (equal graphs):
        that body's nodes, and the instance's own modules (recovered and verified as any
        module is) and tensors at the same paths, declared as ``graph_module_to_spec`` does."""
        given, inside = self._given(gm, block)
        body = dict(first)
        try:
            if "modules" in first:
                body["modules"] = {path: (given.get(path) or recover_declaration(path, self._submodule(block, path), self.cache,
                                                                                 self.names)).to_dict()
                                   for path in first["modules"]}  # fmt: skip
            for table in ("parameters", "buffers"):
                if table in first:
                    body[table] = {path: _tensor_entry(block, path, table) for path in first[table]}
        except (AttributeError, TypeError) as exc:
            raise NotTheSame(f"two instances of {type(block).__name__} with one graph hold different tensors "
                             f"or modules ({exc})", type(block)) from None  # fmt: skip
        return self.order.sorted(body, block), inside

    def _given(self, gm: torch.fx.GraphModule, owner: torch.nn.Module) -> tuple[dict[str, ModuleSpec], set[int]]:
        """The declarations of the blocks and kept Sequentials ``gm`` calls, ``owner``'s (the
        instance whose body is written), and the block instances among them."""
        given: dict[str, ModuleSpec] = {}
        inside: set[int] = set()
        for node in gm.graph.nodes:
            if node.op != "call_module":
                continue
            path = str(node.target)
            kept = self._kept_owner(owner, path)
            if kept is not None and kept not in given:
                given[kept] = self._sequential(self._submodule(owner, kept), kept, inside)
            elif kept is None and id(self._submodule(owner, path)) in self.hierarchy.blocks:
                given[path] = self._pending(self._submodule(owner, path), inside)
        return given, inside

    def _submodule(self, owner: torch.nn.Module, path: str) -> torch.nn.Module:
        """``owner.get_submodule(path)``, each owner's paths looked up once (``Submodules``)."""
        found = self.submodules.get(id(owner))
        if found is None:
            found = self.submodules[id(owner)] = Submodules(owner)
        return found.get(path)

    def _kept_owner(self, owner: torch.nn.Module, path: str) -> str | None:
        """The shortest prefix of ``path`` (itself included) that is a kept Sequential."""
        parts = path.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if id(self._submodule(owner, prefix)) in self.hierarchy.kept:
                return prefix
        return None

    def _pending(self, block: torch.nn.Module, inside: set[int]) -> ModuleSpec:
        inside.add(id(block))
        return ModuleSpec(f"{_PENDING}{id(block)}")

    def _sequential(self, seq: torch.nn.Module, path: str, inside: set[int]) -> ModuleSpec:
        items = []
        for name, child in seq.named_children():
            if id(child) in self.hierarchy.blocks:
                item = self._pending(child, inside)
            elif id(child) in self.hierarchy.kept:
                item = self._sequential(child, f"{path}.{name}", inside)
            else:
                item = recover_declaration(f"{path}.{name}", child, self.cache, self.names)
            items.append({"module": item.to_dict()})
        return ModuleSpec("torch.nn.Sequential", items)

    # -- classes from instances --------------------------------------------------------------
    def _name_classes(self, taken: set[str]) -> None:
        """Give every instance its class, nested blocks first, and all instances of a class at
        once: a class waits until every instance of it is ready (an instance that never calls
        its drop-path is ready a round before those that do, and would be a class of its own)."""
        left = set(self.raw)
        order = {key: i for i, key in enumerate(self.raw)}
        while left:
            ready = {k for k in left if not (self.inside[k] & left)}
            if not ready:
                raise NotTheSame("a block class contains itself")
            waiting = {type(self.instances[k]) for k in left - ready}
            whole = {k for k in ready if type(self.instances[k]) not in waiting}
            ready = whole or ready  # (else a class holds itself through its instances: as they come)
            by_class: dict[type, list[int]] = {}
            for key in sorted(ready, key=order.__getitem__):  # the model's order: stable names
                by_class.setdefault(type(self.instances[key]), []).append(key)
            for cls, keys in by_class.items():
                bodies = {k: self._resolved_body(self.raw[k]) for k in keys}
                bodies = with_defaults(bodies) or bodies  # (a keyword some give and others leave at its default)
                pending = groups(keys, bodies)
                while pending:
                    group = pending.pop(0)
                    other = next((g for g in pending if self._make_merged(cls, group, g, bodies, taken, order)), None)
                    if other is not None:
                        pending.remove(other)
                    else:
                        self._make_class(cls, group, bodies, taken)
            left -= ready

    def _make_class(self, cls: type, group: list[int], bodies: dict[int, dict[str, Any]], taken: set[str]) -> None:
        first = bodies[group[0]]
        stored = _Stored(cls, [self.instances[k] for k in group])
        columns: dict[str, list[Any]] = {}  # json of a column of values -> the column
        where: dict[str, tuple[Any, ...]] = {}
        at: dict[tuple[Any, ...], str] = {}  # a place in the body -> its column's json
        lists = [path for path in list_places(first) if stored.holds([value_at(bodies[k], path) for k in group])]
        for path, _ in leaves(first):
            whole = next((p for p in lists if path[: len(p)] == p), None)  # (a list an __init__ parameter is)
            place = path if whole is None else whole
            column = [value_at(bodies[k], place) for k in group]
            if not same_values(column, [column[0]] * len(column)):
                key = json.dumps(column)
                columns.setdefault(key, column)
                where.setdefault(key, place)
                at[place] = key
        args, arg_of = self._arguments(stored, columns, where, taken, first)
        body = with_args(first, {place: arg_of[key] for place, key in at.items()})
        for i, k in enumerate(group):
            env = {arg_of[key]: column[i] for key, column in columns.items() if arg_of[key] in args}
            if bound(body, env) != bodies[k]:  # each instance's own values give back its own body
                raise NotTheSame(f"the instances of {cls.__name__} cannot share a class", cls)
            declaration: dict[str, Any] = {"class": ""}
            if args:
                declaration["args"] = [env[a] for a in args]
            self.declared[k] = declaration
        name = self._register(cls, ClassSpec(args=args, doc=_doc(cls), **_fields(body)), taken)
        for k in group:
            self.declared[k]["class"] = name

    def _register(self, cls: type, body: ClassSpec, taken: set[str]) -> str:
        """The name of the class ``body`` is: an equal class's already written (no two classes
        of a spec are equal), else a new one after ``cls``."""
        same = next((name for name, other in self.classes.items() if _same_body(other, body)), None)
        if same is not None:
            return same
        name = _fresh(_class_base(cls.__name__), taken)
        self.classes[name] = body
        self.arg_names[name] = list(body.args)
        return name

    def _make_merged(self, cls: type, a: list[int], b: list[int], bodies: dict[int, dict[str, Any]], taken: set[str],
                     order: dict[int, int]) -> bool:  # fmt: skip
        """Two groups of one class as one class, where one group's instances have submodules the
        other's lack (``downsample``) and call them where the others read a value they already
        have, or where node constants differ: a bool argument (True where the submodules are)
        on those declarations and an ``if:`` group in the nodes, an argument for each constant.
        False (nothing written) where the groups differ otherwise."""
        stored = _Stored(cls, [self.instances[k] for k in sorted([*a, *b], key=order.__getitem__)])
        column = [k in b for k in sorted([*a, *b], key=order.__getitem__)]
        branches = any(stored.attribute(c, set()) is not None for c in (column, [not v for v in column]))
        merged = merge_bodies(bodies[a[0]], bodies[b[0]], branches=branches)
        if merged is None:
            a, b = b, a
            merged = merge_bodies(bodies[a[0]], bodies[b[0]], branches=branches)
        if merged is None:
            return False
        template, extras, flagged = merged
        group = sorted([*a, *b], key=order.__getitem__)
        with_extras = set(b)
        columns: dict[str, list[Any]] = {}  # json of a column -> the column (over ``group``)
        where: dict[str, tuple[Any, ...]] = {}
        at: dict[tuple[Any, ...], str] = {}  # a leaf's path in the template -> its column's json
        partial: dict[tuple[Any, ...], list[Any]] = {}  # leaves of the extra declarations: b's values
        for path, _ in leaves(template):
            if path[0] == "nodes":  # (the two groups' node constants that differ are its markers)
                continue
            if path[0] == "modules" and path[1] in extras:
                partial[path] = [value_at(bodies[k], path) for k in group if k in with_extras]
                continue
            column = [value_at(bodies[k], path) for k in group]
            if any(v != column[0] or type(v) is not type(column[0]) for v in column):
                key = json.dumps(column)
                columns.setdefault(key, column)
                where.setdefault(key, path)
                at[path] = key
        for path, values in partial.items():  # an argument of the others', as those instances have it
            found = next((key for key, column in columns.items()
                          if same_values([v for k, v in zip(group, column, strict=True) if k in with_extras], values)), None)  # fmt: skip
            if found is not None:
                at[path] = found
            elif not same_values(values, [values[0]] * len(values)):  # (else the one value, as written)
                filled = self._unused_values(group, with_extras, path, values)
                if filled is None:
                    return False
                key = json.dumps(filled)
                columns.setdefault(key, filled)
                where.setdefault(key, path)
                at[path] = key
        constants: dict[str, str] = {}  # a node constant's marker -> its column's json
        for marker in markers(template["nodes"]):
            first, second = json.loads(marker[1:])
            column = [second if k in with_extras else first for k in group]
            key = json.dumps(column)
            columns.setdefault(key, column)
            where.setdefault(key, ("nodes",))
            constants[marker] = key
        flag_column = [k in with_extras for k in group]
        flag_key = json.dumps(flag_column) if flagged else None
        if flag_key is not None and flag_key not in columns:
            columns[flag_key] = flag_column
            where[flag_key] = ("flag", *(extras or ["variant"]))
        args, arg_of = self._arguments(stored, columns, where, taken, template)
        flag = arg_of[flag_key] if flag_key is not None else None
        body = merged_with_args(template, {path: arg_of[key] for path, key in at.items()},
                                 {marker: arg_of[key] for marker, key in constants.items()}, flag)  # fmt: skip
        declared: dict[int, dict[str, Any]] = {}
        for i, k in enumerate(group):
            env = {arg_of[key]: column[i] for key, column in columns.items() if arg_of[key] in args}
            if not same_instance(body, env, bodies[k]):  # each instance's own values give back its own body
                return False
            declared[k] = {"class": "", "args": [env[arg] for arg in args]}
        name = self._register(cls, ClassSpec(args=args, doc=_doc(cls), **_fields(body)), taken)
        for k, declaration in declared.items():
            self.declared[k] = {**declaration, "class": name}
        return True

    def _unused_values(self, group: list[int], with_extras: set[int], path: tuple[Any, ...],
                       values: list[Any]) -> list[Any] | None:  # fmt: skip
        """A column for a value of an extra submodule's declaration that no other argument gives:
        the instances that have it, their values; the others, the value their own submodule at
        that path holds though their forward never calls it (EfficientNet's ``MBConv`` builds
        its ``StochasticDepth(p)`` and runs it only with the residual), so that the argument
        keeps its meaning (a drop-path schedule stays one rule). None where one of them has no
        such submodule, or one that holds no such value."""
        given = iter(values)
        declared = value_at(self._resolved_body(self.raw[next(k for k in group if k in with_extras)]), path[:2])
        column = []
        for k in group:
            if k in with_extras:
                column.append(next(given))
                continue
            try:
                value = self._held(self.instances[k], path, declared)
            except (AttributeError, KeyError, IndexError, TypeError, ExportError):
                return None
            if type(value) is not type(values[0]):
                return None
            column.append(value)
        return column

    def _held(self, instance: torch.nn.Module, path: tuple[Any, ...], declared: dict[str, Any]) -> Any:
        """The value at ``path`` (``("modules", NAME, "args", 0, ...)``) of the submodule NAME
        ``instance`` holds: recovered as any module is, or, for one of the model's own classes
        (declared as a block), the attribute its argument was named after (``self.p``)."""
        owned = self._submodule(instance, str(path[1]))
        cls = declared.get("class")
        if cls in self.arg_names and len(path) == 4 and path[2] == "args" and isinstance(path[3], int):
            return getattr(owned, self.arg_names[cls][path[3]])
        return value_at(recover_declaration(str(path[1]), owned, self.cache, self.names).to_dict(), path[2:])

    def _arguments(self, stored: _Stored, columns: dict[str, list[Any]], where: dict[str, tuple[Any, ...]],
                   taken: set[str], body: dict[str, Any]) -> tuple[dict[str, ArgSpec], dict[str, str]]:  # fmt: skip
        """A class's arguments for its columns of values (json of a column -> the column, found
        first at ``where``), and what stands for each column in the body: its argument's name,
        or an expression of an earlier one's (``class_bodies.derived``)."""
        args: dict[str, ArgSpec] = {}
        arg_of: dict[str, str] = {}
        argument_names = set(RESERVED_NAMES) | set(dir(builtins)) | taken | {"self"}
        functions = derived({key: column for key, column in columns.items() if where[key][0] != "flag"})
        for key, column in columns.items():
            if key in functions:
                continue
            arg = self._column_name(stored, column, where[key], argument_names, body)
            argument_names.add(arg)
            args[arg] = ArgSpec(type(column[0]).__name__)
            arg_of[key] = arg
        for key, (source, written) in functions.items():
            arg_of[key] = written(arg_of[source])
        return args, arg_of

    def _column_name(self, stored: _Stored, column: list[Any], path: tuple[Any, ...], taken: set[str],
                     body: dict[str, Any]) -> str:  # fmt: skip
        """The argument's name for a column of values found at ``path`` of ``body``. A flag's is
        a bool the instances store, else the name of the first extra module. A node constant's
        is a parameter the instances store, else an attribute holding it: the forward reads it
        as ``self.NAME``, never the name of the class's own module or tensor."""
        if path[0] == "flag":
            held = stored.attribute(column, taken)  # (self.use_res_connect, which the forward branches on)
            words = [held or (re.sub(r"\W", "_", path[1]) if path[1].isascii() and path[1][:1].isalpha() else "variant")]
            return self._arg_name(stored, column, path, taken, body, words=words)
        if path[0] != "nodes":
            return self._arg_name(stored, column, path, taken, body)
        free = taken | {str(p).split(".")[0] for table in ("modules", "parameters", "buffers") for p in body.get(table, {})}
        name = self._arg_name(stored, column, path, free, body, words=[stored.attribute(column, free) or "value"])
        taken.add(name)
        return name

    def _arg_name(self, stored: _Stored, column: list[Any], path: tuple[Any, ...], taken: set[str],
                  body: dict[str, Any], words: list[str] | None = None) -> str:  # fmt: skip
        """The ``__init__`` parameter each instance stores under its own name with these values,
        else a name for what the value feeds (``words``, when given)."""
        for param in stored.params:
            if param in taken:
                continue
            for values in stored.values(param):
                if all(type(s) is type(v) and s == v for s, v in zip(values, column, strict=True)):
                    taken.add(param)
                    return param
        if words is not None:
            return _fresh("_".join(words), taken, start=2, joiner="_")
        words = self._feeds(path, body)
        for n in range(2 if path[0] != "modules" else 1, len(words)):  # the shortest name still free
            candidate = "_".join(words[-n:])
            if candidate.isidentifier() and not keyword.iskeyword(candidate) and candidate not in taken:
                taken.add(candidate)
                return candidate
        return _fresh("_".join(words), taken, start=2, joiner="_")

    def _feeds(self, path: tuple[Any, ...], body: dict[str, Any]) -> list[str]:
        """``[conv1, out_channels]`` for ``("modules", "conv1", "args", 1)``; nested module
        values add their index (``downsample, 0, out_channels``); a shape gives ``gamma, size0``."""
        words: list[str] = []
        i = 0
        while i < len(path):
            step = path[i]
            if step in ("modules", "parameters", "buffers") and i == 0:
                words.append(str(path[1]))
                i += 2
                continue
            if step == "shape":
                words.append(f"size{path[i + 1]}")
                break
            if step == "class":
                break
            if step in ("module", "tuple"):
                i += 1
                continue
            if step in ("args", "kwargs") and i + 1 < len(path):
                cls_name = value_at(body, path[:i]).get("class")
                position = path[i + 1]
                if step == "kwargs":
                    words.append(str(position))
                elif i + 2 < len(path) and path[i + 2] == "module":
                    words.append(str(position))  # an item of a Sequential
                else:
                    words.append(self._param_name(cls_name, position))
                i += 2
                continue
            words.append(str(step))
            i += 1
        words = [re.sub(r"[^A-Za-z0-9_]", "_", w) for w in words if w]
        if not words or not words[0].isidentifier():
            words.insert(0, "arg")
        return words

    def _param_name(self, cls_name: str | None, position: Any) -> str:
        if not isinstance(position, int) or cls_name is None:
            return str(position)
        names = self.arg_names.get(cls_name)
        if names is None:
            try:
                names = _init_params(resolve_qualname(cls_name))
            except Exception:
                names = []
        return names[position] if position < len(names) else f"arg{position}"

    def _resolved_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """A body with its blocks declared: pending declarations are only in its modules (its
        nodes, shared by the instances with one graph, are kept as they are)."""
        return {**body, "modules": self._resolved(body["modules"])} if "modules" in body else dict(body)

    def _resolved(self, body: Any) -> Any:
        """``body`` with every pending block declaration replaced by the instance's own."""
        if isinstance(body, dict):
            cls = body.get("class")
            if isinstance(cls, str) and cls.startswith(_PENDING):
                declared = self.declared[int(cls.removeprefix(_PENDING))]
                return {**declared, **{k: v for k, v in body.items() if k != "class"}}
            return {k: self._resolved(v) for k, v in body.items()}
        if isinstance(body, list):
            return [self._resolved(v) for v in body]
        return body


def _same_body(a: ClassSpec, b: ClassSpec) -> bool:
    """Equal classes but for their docstrings: one class of the spec."""
    return dataclasses.replace(a, doc=None) == dataclasses.replace(b, doc=None)


def equal_classes(spec: Spec) -> list[tuple[str, str]]:
    """The pairs of a spec's classes that are equal but for their docstrings (export writes
    none: ``fxgen.capture.export`` checks it before anything is written)."""
    names = list(spec.classes)
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if _same_body(spec.classes[a], spec.classes[b])]


def _init_params(cls: Any) -> list[str]:
    try:
        params = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


_MISSING = object()
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # what a spec's names may be


class _ModelOrder:
    """Puts a body's declarations in the order the model registers them (graphs call them in
    another), so the state dict's keys come in the original's order.

    The order is a module's ``named_modules(remove_duplicate=False)`` and ``state_dict()``. Both
    walk the tree depth first, so a block's own walk is the model's, restricted to the block's
    path: one walk of the model serves every instance, where a walk per instance cost a
    ``state_dict()`` of every block inside it again (depth x nodes). A model whose state dict
    anything rewrites (state-dict hooks, a class's own ``_save_to_state_dict`` or extra state)
    is walked per instance, as before, since an ancestor's hook may change its blocks' keys.
    """

    def __init__(self, model: torch.nn.Module, paths: dict[int, str]) -> None:
        self.model = model
        self.paths = paths
        self._plain = not any(rewrites_state(m) for m in model.modules())

    def sorted(self, body: dict[str, Any], original: torch.nn.Module) -> dict[str, Any]:
        path = "" if original is self.model else self.paths.get(id(original))
        rank = self._in_model(path) if self._plain and path is not None else _own_order(original)
        out = dict(body)
        for table in ("modules", "parameters", "buffers"):
            if table in out:
                out[table] = dict(sorted(out[table].items(), key=lambda item: rank(item[0])))
        return out

    @functools.cached_property
    def _walk(self) -> tuple[dict[str, int], dict[str, int]]:
        """The model's module paths and state-dict keys, each by its place in the walk."""
        modules = {p: i for i, (p, _) in enumerate(self.model.named_modules(remove_duplicate=False))}
        return modules, {key: i for i, key in enumerate(self.model.state_dict(keep_vars=True))}

    def _in_model(self, path: str) -> Callable[[str], float]:
        (modules, state), prefix = self._walk, f"{path}." if path else ""

        def rank(key: str) -> float:
            full = prefix + key
            return state.get(full, modules.get(full, math.inf))

        return rank


def _own_order(original: torch.nn.Module) -> Callable[[str], float]:
    """``original``'s own walk: its module paths, then its state-dict keys (these win)."""
    order: dict[str, float] = {path: i for i, (path, _) in enumerate(original.named_modules(remove_duplicate=False))}
    order.update((key, i) for i, key in enumerate(original.state_dict(keep_vars=True)))
    return lambda key: order.get(key, math.inf)


def _tensor_entry(block: torch.nn.Module, path: str, table: str) -> dict[str, Any]:
    """The declaration of ``block``'s tensor at ``path`` (in ``table``), as a graph module of the
    block declares it: a parameter; a buffer the checkpoint carries; else its values."""
    owner_path, _, name = path.rpartition(".")
    owner = block.get_submodule(owner_path)
    tensor = getattr(owner, name)
    if table == "parameters":
        if not isinstance(tensor, torch.nn.Parameter):
            raise TypeError(f"{path} is not a parameter")
        return ParameterSpec(list(tensor.shape), tensor_dtype(path, tensor), requires_grad=tensor.requires_grad).to_dict()
    if not isinstance(tensor, torch.Tensor) or isinstance(tensor, torch.nn.Parameter):
        raise TypeError(f"{path} is not a buffer")
    if name in owner._buffers and name not in owner._non_persistent_buffers_set:
        return BufferSpec(shape=list(tensor.shape), dtype=tensor_dtype(path, tensor)).to_dict()
    return valued_buffer(path, tensor).to_dict()


def _class_base(name: str) -> str:
    """A block name the checker takes: ASCII, no leading underscore, no builtin's name."""
    base = name.lstrip("_")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", base):  # spec names are ASCII identifiers
        base = re.sub(r"[^A-Za-z0-9_]", "", base).lstrip("_0123456789") or "Block"
    return base + "Block" if hasattr(builtins, base) or base in RESERVED_NAMES else base


class _Stored:
    """What a group's instances keep under each ``__init__`` parameter's name: the attribute and
    the recorded argument, each worked out once per group and only when asked (a class has one
    column per argument, and each column asks the parameters in order)."""

    def __init__(self, cls: type, instances: list[torch.nn.Module]) -> None:
        self.cls = cls
        self.instances = instances
        self._attributes: dict[str, list[Any]] = {}

    @functools.cached_property
    def params(self) -> list[str]:
        return [p for p in _init_params(self.cls) if _ASCII_NAME.fullmatch(p) and not keyword.issoftkeyword(p)]

    @functools.cached_property
    def _recorded(self) -> list[dict[str, Any]]:
        return [_recorded_arguments(m) for m in self.instances]

    def attribute(self, column: list[Any], taken: set[str]) -> str | None:
        """The first plain attribute (a spec name) each instance holds with its value of ``column``
        (``self.scale = head_dim ** -0.5``): what a node constant was read from, most likely."""
        first = vars(self.instances[0])
        for name, value in first.items():
            if type(value) is type(column[0]) and _ASCII_NAME.fullmatch(name) and not name.startswith("_") \
                    and name not in taken and not keyword.iskeyword(name) and name != "training" \
                    and same_values([getattr(m, name, _MISSING) for m in self.instances], column):  # fmt: skip
                return name
        return None

    def holds(self, column: list[Any]) -> bool:
        """Does each instance store its value of ``column`` under an ``__init__`` parameter's
        name (``self.dims = dims``)? A list that is one is one argument, not one per item."""
        return not same_values(column, [column[0]] * len(column)) and any(
            same_values(values, column) for param in self.params for values in self.values(param))

    def values(self, param: str) -> Iterator[list[Any]]:
        """Each instance's attribute ``param``, then (only if asked) its recorded argument."""
        attributes = self._attributes.get(param)
        if attributes is None:
            attributes = self._attributes[param] = [getattr(m, param, _MISSING) for m in self.instances]
        yield attributes
        yield [r.get(param, _MISSING) for r in self._recorded]


def _recorded_arguments(module: torch.nn.Module) -> dict[str, Any]:
    """The ``__init__`` arguments ``fxgen.record_constructors`` saw build ``module``, by name."""
    from fxgen.describe.record import RECORDED_CALLS

    call = RECORDED_CALLS.get(module)
    if call is None:
        return {}
    try:
        bound = inspect.signature(type(module).__init__).bind(module, *call[0], **call[1])
    except TypeError:
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


def _fresh(base: str, taken: set[str], *, start: int = 2, joiner: str = "") -> str:
    if keyword.iskeyword(base) or keyword.issoftkeyword(base):
        base += "_"
    name, i = base, start
    while name in taken:
        name = f"{base}{joiner}{i}"
        i += 1
    taken.add(name)
    return name


@functools.lru_cache(maxsize=1024)
def _doc(cls: type) -> str | None:
    """The class's own summary: its docstring's first paragraph, up to its last full sentence
    (a paragraph that introduces a list, ``Supported modes are:``, is cut before it). Once per
    class (``inspect.getdoc`` cleans the whole docstring, nn.Module's long one for every class
    that has none)."""
    doc = inspect.getdoc(cls)
    if not doc or doc == _module_doc():
        return None
    summary = doc.split("\n\n", 1)[0].strip()
    if summary.endswith(":"):
        ends = [m.end() for m in re.finditer(r"\.(?=\s)", summary)]
        summary = summary[: ends[-1]] if ends else ""
    return summary or None


@functools.cache
def _module_doc() -> str | None:
    return inspect.getdoc(torch.nn.Module)


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"fxgen": 2, "name": "X", "nodes": body["nodes"]}
    data.update((k, body[k]) for k in ("modules", "parameters", "buffers") if k in body)
    spec = Spec.from_dict(data)
    return {"nodes": spec.nodes, "modules": spec.modules, "parameters": spec.parameters, "buffers": spec.buffers}
