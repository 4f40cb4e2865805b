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
from typing import Any, TypeGuard, TypeVar

from fxgen.describe.align import Aligned, Differing, Unaligned, align, map_refs_items
from fxgen.spec.expr import Expr, evaluate, names, parse, render
from fxgen.spec.model import ClassSpec, ForNodes, IfNodes, InputSpec, Item, Node, Spec, walk_nodes

__all__ = ["ModesDiffer", "merge_modes", "merge_presence", "refused_when", "renamed"]


class ModesDiffer(Exception):
    """The two modes' specs differ other than in their nodes: the message says where."""


def merge_modes(eval_spec: Spec, train_spec: Spec) -> Spec:
    """One spec computing ``eval_spec``'s graph in eval mode and ``train_spec``'s in train mode."""
    if eval_spec == train_spec:
        return eval_spec
    eval_spec, train_spec = _union_inputs(eval_spec, train_spec)
    for field in ("name", "shapes", "passes"):
        if getattr(eval_spec, field) != getattr(train_spec, field):
            raise ModesDiffer(f"the spec's {field} differs between the modes")
    inputs, checks = _inputs_of_both(eval_spec, train_spec)
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
        inputs=inputs,
        checks=checks,
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


def refused_when(spec: Spec, guards: dict[str, str]) -> Spec:
    """``spec`` whose forward raises an AssertionError with the message where each condition of
    ``guards`` holds (``mask is None``, ``training``): after the inputs, before anything is
    computed. It is how a spec says what it was not captured for, instead of computing something
    else there."""
    taken = {str(n.name) for n in walk_nodes(spec.nodes)}
    items: list[Item] = []
    for cond, message in guards.items():  # (named: an unnamed one is torch.fx's `_assert`, which a later node may be)
        name = _fresh_name("refused", taken)
        taken.add(name)
        items.append(IfNodes(cond, [Node("call_function", name, "torch._assert", [False, message])]))
    first = next(k for k, n in enumerate(spec.nodes) if not (isinstance(n, Node) and n.op == "placeholder"))
    return dataclasses.replace(spec, fxgen=2, nodes=[*spec.nodes[:first], *items, *spec.nodes[first:]])


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


def renamed(items: list[Item], old: str, new: str) -> list[Item]:
    """``items`` (plain nodes and conditionals) with the value ``old``, where it is defined and
    wherever it is read, named ``new``."""
    return map_refs_items(items, lambda name: new if name == old else name)


def _fresh_name(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def _inputs_of_both(eval_spec: Spec, train_spec: Spec) -> tuple[dict[str, InputSpec], list[str] | None]:
    """The ``inputs:`` and ``checks:`` of the merged spec: what both captures assumed. A dimension
    one mode's capture kept symbolic and the other's fixed is fixed (at the example's size, the
    same in both; a train-mode capture may need sizes eval's does not, kornia's KeyNet all of
    them); eval mode's checks are kept, those sizes put in, and one that then holds whatever the
    inputs is left out. Train mode's own checks are not: the spec has one list for both modes,
    and what train mode alone assumed (BatchNorm's more than one value per channel) would refuse
    inputs eval mode takes."""
    a, b = eval_spec.inputs, train_spec.inputs
    if a == b and eval_spec.checks == train_spec.checks:
        return a, eval_spec.checks
    if list(a) != list(b) or any(a[k].dtype != b[k].dtype or len(a[k].shape) != len(b[k].shape) for k in a):
        raise ModesDiffer("the spec's inputs differs between the modes")
    fixed: dict[str, int] = {}
    for name in a:
        for p, q in zip(a[name].shape, b[name].shape, strict=True):
            if p != q and isinstance(p, int) != isinstance(q, int):
                fixed[str(q if isinstance(p, int) else p)] = p if isinstance(p, int) else int(q)
            elif p != q:
                raise ModesDiffer(f"input {name!r} has other sizes in each mode ({p} and {q})")
    inputs = {name: dataclasses.replace(spec, shape=[fixed.get(d, d) if isinstance(d, str) else d for d in spec.shape])
              for name, spec in a.items()}  # fmt: skip
    checks: list[str] = []
    for text in eval_spec.checks or ():
        tree = _substituted(parse(text), fixed)
        if not names(tree) and evaluate(tree, {}):
            continue
        if render(tree) not in checks:
            checks.append(render(tree))
    return inputs, checks if eval_spec.checks is not None or train_spec.checks is not None else None


def _substituted(tree: Expr, values: dict[str, int]) -> Expr:
    """``tree`` with each name in ``values`` replaced by its number."""
    if tree[0] == "name":
        return ("num", values[tree[1]]) if tree[1] in values else tree
    if tree[0] in ("num", "bool"):
        return tree
    if tree[0] == "call":
        return ("call", tree[1], *(_substituted(arg, values) for arg in tree[2:]))
    return (tree[0], *(_substituted(arg, values) for arg in tree[1:]))


_Body = TypeVar("_Body", Spec, ClassSpec)


def _union_inputs(eval_spec: Spec, train_spec: Spec) -> tuple[Spec, Spec]:
    """Both specs with each class taking the inputs it takes in either mode, in one order: a
    Hugging Face decoder layer is given the causal mask in eval mode only (its sdpa attention
    leaves the mask out when training). In the mode that lacks one, the class has the input and
    does not read it; each call of the class passes there what the other mode's call passes if
    this mode has that value by then, else None. A class whose inputs the two modes order
    otherwise, or whose calls are not all positional, is left as it is (``ModesDiffer``)."""
    specs = [eval_spec, train_spec]
    for name in set(eval_spec.classes) & set(train_spec.classes):
        inputs = [_placeholders(spec.classes[name].nodes) for spec in specs]
        union = _in_both_orders(*inputs)
        if union is None or all(len(given) == len(union) for given in inputs):
            continue
        changed = [_with_inputs(specs[0], specs[1], name, union), _with_inputs(specs[1], specs[0], name, union)]
        if changed[0] is not None and changed[1] is not None:
            specs = [changed[0], changed[1]]
    return specs[0], specs[1]


def _placeholders(nodes: list[Item]) -> list[Node]:
    return [n for n in nodes if isinstance(n, Node) and n.op == "placeholder"]


def _in_both_orders(first: list[Node], second: list[Node]) -> list[Node] | None:
    """The inputs of both lists in an order each keeps (None: none is, or one name is two inputs)."""
    by_name = {n.name: n for n in first}
    if any(n.name in by_name and by_name[n.name] != n for n in second):
        return None
    names = [{n.name for n in first}, {n.name for n in second}]
    merged: list[Node] = []
    i = j = 0
    while i < len(first) or j < len(second):
        a = first[i] if i < len(first) else None
        b = second[j] if j < len(second) else None
        if a is not None and b is not None and a.name == b.name:
            merged.append(a)
            i, j = i + 1, j + 1
        elif a is not None and a.name not in names[1]:
            merged.append(a)
            i += 1
        elif b is not None and b.name not in names[0]:
            merged.append(b)
            j += 1
        else:
            return None
    return merged


def _bodies(spec: Spec) -> dict[str | None, tuple[list[Item], dict[str, Any]]]:
    """Each class's nodes and modules, the top class's under None."""
    return {None: (spec.nodes, spec.modules), **{n: (c.nodes, c.modules) for n, c in spec.classes.items()}}


def _with_inputs(spec: Spec, other: Spec, name: str, union: list[Node]) -> Spec | None:
    """``spec`` with class ``name`` taking the inputs ``union``, each call of it passing for an
    input it lacked what ``other``'s call of the same name passes, where ``spec`` has that value
    before the call, else None (None: a call is not one positional argument per input)."""
    have = [n.name for n in _placeholders(spec.classes[name].nodes)]
    theirs = [n.name for n in _placeholders(other.classes[name].nodes)]
    missing = [i for i, n in enumerate(union) if n.name not in have]
    if not missing:
        return spec
    their_calls = {(where, node.name): node.args for where, (nodes, modules) in _bodies(other).items()
                   for node in nodes if _calls(node, modules, name)}  # fmt: skip
    bodies: dict[str | None, list[Item]] = {}
    for where, (nodes, modules) in _bodies(spec).items():
        out: list[Item] = []
        defined: set[str | None] = set()
        for node in nodes:
            if _calls(node, modules, name):
                if node.kwargs or len(node.args) != len(have):
                    return None
                given = their_calls.get((where, node.name))
                args = list(node.args)
                for i in missing:
                    value = given[theirs.index(union[i].name)] if given and len(given) == len(theirs) else None
                    args.insert(i, value if isinstance(value, str) and value[1:] in defined else None)
                node = dataclasses.replace(node, args=args)
            if isinstance(node, Node):
                defined.add(node.name)
            out.append(node)
        if where == name:
            out = [*union, *(n for n in out if not (isinstance(n, Node) and n.op == "placeholder"))]
        bodies[where] = out
    classes = {n: dataclasses.replace(c, nodes=bodies[n]) for n, c in spec.classes.items()}
    return dataclasses.replace(spec, nodes=bodies[None], classes=classes)


def _calls(item: Item, modules: dict[str, Any], name: str) -> TypeGuard[Node]:
    """Is ``item`` a call of a module of class ``name``?"""
    return (isinstance(item, Node) and item.op == "call_module"
            and getattr(modules.get(str(item.target)), "cls", None) == name)  # fmt: skip


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
