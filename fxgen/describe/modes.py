"""Two specs of one model, one per mode, as one spec that says where the mode matters.

Export captures a model in eval mode and in train mode (``fxgen.capture.modes``); where the
two graphs differ, each is described as a spec of its own, and this module writes them as one:
the same classes, modules and tensors (a model's state does not depend on its mode), and in
each class the two node lists aligned (``fxgen.describe.align``): ``{arg: training}`` where a
boolean is the mode, ``if: training`` groups where the nodes differ, in the class whose
forward reads the mode. Loaded, each mode resolves to its own capture's graph, node for node
(``fxgen.assemble.modes``).

A class's constructor arguments may differ between the modes only in that one mode has none:
a stochastic-depth block reads its drop rate in train mode alone, so its instances are one
class with an argument in train mode and one class without in eval mode; the spec takes the
arguments, and every instance's declaration, from the mode that has them. Anything else that
differs (a class kept in one mode and inlined in the other, a module declared otherwise) is
``ModesDiffer``: export then writes one graph for each mode instead (``flat``).

An optional argument is the same construct for a call instead of a mode (``merge_presence``): a
model captured with the argument its example gives and again without it becomes one spec whose
top-level nodes say ``if: mask is None`` where the two differ; its classes must be the same in both
(a block does not see the caller's arguments), else ``ModesDiffer``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from fxgen.describe.align import Aligned, Differing, Unaligned, align
from fxgen.spec.model import ClassSpec, ForNodes, IfNodes, Item, Node, Spec, walk_nodes

__all__ = ["ModesDiffer", "merge_modes", "merge_presence", "renamed"]


class ModesDiffer(Exception):
    """The two modes' specs differ other than in their nodes: the message says where."""


def merge_modes(eval_spec: Spec, train_spec: Spec) -> Spec:
    """One spec computing ``eval_spec``'s graph in eval mode and ``train_spec``'s in train mode."""
    if eval_spec == train_spec:
        return eval_spec
    for field in ("name", "inputs", "shapes", "passes"):
        if getattr(eval_spec, field) != getattr(train_spec, field):
            raise ModesDiffer(f"the spec's {field} differs between the modes")
    taken: dict[str, str] = {}  # class -> the mode its arguments come from ("eval", "train")
    classes: dict[str, ClassSpec] = {}
    for name in _union(eval_spec.classes, train_spec.classes):
        a, b = eval_spec.classes.get(name), train_spec.classes.get(name)
        if a is None or b is None:
            raise ModesDiffer(f"class {name!r} is kept in {'train' if a is None else 'eval'} mode only")
        if (a.args, a.values) != (b.args, b.values):
            if a.args and b.args:
                raise ModesDiffer(f"class {name!r} takes other arguments in each mode")
            taken[name] = "train" if b.args else "eval"
    for name in _union(eval_spec.classes, train_spec.classes):
        a, b = eval_spec.classes[name], train_spec.classes[name]
        arguments = b if taken.get(name) == "train" else a
        classes[name] = dataclasses.replace(
            arguments, doc=a.doc, nodes=_nodes(a.nodes, b.nodes, name), **_declarations(a, b, taken, name)
        )
    where = f"class {eval_spec.name!r}"
    if (eval_spec.args, eval_spec.values) != (train_spec.args, train_spec.values):
        raise ModesDiffer(f"{where} takes other arguments in each mode")
    merged = dataclasses.replace(
        eval_spec,
        fxgen=2,
        classes=classes,
        nodes=_nodes(eval_spec.nodes, train_spec.nodes, eval_spec.name),
        **_declarations(eval_spec, train_spec, taken, eval_spec.name),
    )
    return merged


def merge_presence(given: Spec, absent: Spec, argument: str) -> Spec:
    """One spec computing ``given``'s graph when a call gives ``argument`` and ``absent``'s when it
    leaves it out (None): the two top-level node lists aligned, ``if: argument is None`` where they
    differ. Everything else must be the same (``ModesDiffer`` says what is not)."""
    if given == absent:
        return given
    for field in ("name", "inputs", "shapes", "passes", "args", "values"):
        if getattr(given, field) != getattr(absent, field):
            raise ModesDiffer(f"the spec's {field} differs when {argument} is left out")
    for name in _union(given.classes, absent.classes):
        if given.classes.get(name) != absent.classes.get(name):
            raise ModesDiffer(f"class {name!r} runs another graph when {argument} is left out")
    nodes = [given.nodes, absent.nodes]  # (conditionals on other optional inputs: common when the same)
    if any(isinstance(n, ForNodes) for n in (*nodes[0], *nodes[1])):
        raise ModesDiffer(f"class {given.name!r} has repeats of its own with and without {argument}")
    if _inputs(nodes[0]) != _inputs(nodes[1]):
        raise ModesDiffer(f"class {given.name!r} takes other inputs when {argument} is left out")
    given_nodes, value = _read_through_alias(nodes[0], argument, {str(n.name) for n in walk_nodes([*nodes[0], *nodes[1]])})
    try:  # the shorter differing runs of the two ways to align them
        aligned = min((align(n, nodes[1], mode=False) for n in (nodes[0], given_nodes)), key=_differing)
    except Unaligned as exc:
        raise ModesDiffer(f"class {given.name!r}: {exc} with and without {argument}") from None
    items = _alias_unless_paired(aligned.spec_items(f"{argument} is None", f"{argument} is not None"), value, argument)
    return dataclasses.replace(given, fxgen=2, nodes=items, **_declarations(given, absent, {}, given.name))


def _differing(aligned: Aligned) -> int:
    return sum(len(i.eval) + len(i.train) for i in aligned.items if isinstance(i, Differing))


def _inputs(items: list[Item]) -> list[Node]:
    return [n for n in items if isinstance(n, Node) and n.op == "placeholder"]


def _read_through_alias(nodes: list[Item], argument: str, taken: set[str]) -> tuple[list[Item], str]:
    """``nodes`` reading ``argument`` through an alias after the inputs: where a call leaves it
    out, the model computes a value in its place (Hugging Face's mask of ones), which the
    alignment then pairs with the alias (both branches define it)."""
    value = _fresh_name(f"{argument}_value", taken)
    first = next(k for k, n in enumerate(nodes) if not (isinstance(n, Node) and n.op == "placeholder"))
    return [*nodes[:first], Node("alias", value, args=[f"%{argument}"]), *renamed(nodes[first:], argument, value)], value


def _alias_unless_paired(items: list[Item], value: str, argument: str) -> list[Item]:
    """The alias of ``_read_through_alias`` left out where nothing stands for it in the other
    branch (a group holding it alone, under ``argument is not None``): its uses read the input."""
    for k, item in enumerate(items):
        if isinstance(item, IfNodes) and item.cond == f"{argument} is not None" and not item.orelse \
                and [(n.op, n.name) for n in item.then if isinstance(n, Node)] == [("alias", value)]:  # fmt: skip
            return [*items[:k], *renamed(items[k + 1 :], value, argument)]
    return items


def _renamed_ref(node: Node, old: str, new: str) -> Node:
    def rename(value: Any) -> Any:
        if value == f"%{old}":
            return f"%{new}"
        if isinstance(value, list):
            return [rename(v) for v in value]
        if isinstance(value, dict):
            return {k: rename(v) for k, v in value.items()}
        return value

    return dataclasses.replace(node, name=new if node.name == old else node.name, args=rename(node.args),
                               kwargs=rename(node.kwargs))  # fmt: skip


def renamed(items: list[Item], old: str, new: str) -> list[Item]:
    """``items`` (plain nodes and conditionals) with the value ``old``, where it is defined and
    wherever it is read, named ``new``."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, Node):
            out.append(_renamed_ref(item, old, new))
        elif isinstance(item, IfNodes):
            out.append(dataclasses.replace(item, then=renamed(item.then, old, new), orelse=renamed(item.orelse, old, new)))
        else:
            out.append(item)
    return out


def _fresh_name(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


_Body = TypeVar("_Body", Spec, ClassSpec)


def _declarations(a: _Body, b: _Body, taken: dict[str, str], where: str) -> dict[str, Any]:
    """The modules, parameters and buffers of a class in both modes (they are the model's state:
    the same, or declared in one mode only where only that mode reads a tensor)."""
    out: dict[str, Any] = {}
    for table in ("modules", "parameters", "buffers"):
        first, second = getattr(a, table), getattr(b, table)
        merged = {}
        for path in _union(first, second):
            x, y = first.get(path), second.get(path)
            if x is None or y is None or x == y:
                merged[path] = x if y is None else y if x is None else x
                continue
            side = taken.get(getattr(x, "cls", None) or "") if table == "modules" and x.cls == y.cls else None
            if side is None:
                raise ModesDiffer(f"{table[:-1]} {path!r} of class {where!r} is declared otherwise in each mode")
            merged[path] = y if side == "train" else x
        out[table] = merged
    # a tensor one mode declares on its own because that mode never calls its module (state the
    # forward never reads) is the other mode's module's
    modules = out["modules"]
    for table in ("parameters", "buffers"):
        out[table] = {path: t for path, t in out[table].items() if not _inside(path, modules)}
    return out


def _inside(path: str, modules: dict[str, Any]) -> bool:
    parts = path.split(".")
    return any(".".join(parts[:k]) in modules for k in range(1, len(parts)))


def _nodes(eval_nodes: list[Item], train_nodes: list[Item], where: str) -> list[Item]:
    if eval_nodes == train_nodes:
        return list(eval_nodes)
    plain_eval = [n for n in eval_nodes if isinstance(n, Node)]
    plain_train = [n for n in train_nodes if isinstance(n, Node)]
    if any(isinstance(n, ForNodes) for n in (*eval_nodes, *train_nodes)):
        raise ModesDiffer(f"class {where!r} has repeats of its own in a mode")
    if [n for n in plain_eval if n.op == "placeholder"] != [n for n in plain_train if n.op == "placeholder"]:
        raise ModesDiffer(f"class {where!r} takes other inputs in each mode")  # (inputs are no group's)
    try:  # (conditionals: an optional input's, ``merge_presence``'s in each mode)
        return align(eval_nodes, train_nodes).spec_items()
    except Unaligned as exc:
        raise ModesDiffer(f"class {where!r}: {exc} in each mode") from None


def _union(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))
