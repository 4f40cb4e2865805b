"""Two captures of one class, one per mode, aligned node by node: common runs and differing runs.

A model's forward may read ``self.training``; captured in eval mode and in train mode, its two
graphs then differ where it does, and agree elsewhere. ``align`` walks both node lists (a spec's
nodes, values encoded: ``"%x"`` is a reference) and gives the runs of nodes they share and the
runs where they differ, each a pair ``(eval nodes, train nodes)``: what ``describe.modes`` writes
as ``if: training`` groups. A node that differs only in booleans equal to the mode (``False`` in
eval, ``True`` in train: ``F.dropout(x, 0.5, training=self.training)``) is common, the boolean
written ``{arg: training}``.

Names: the runs are one graph's nodes (SSA, as torch.fx's), so each name is defined once, except
that the two branches of a differing run may define the same name; a name used after a
differing run is defined by both its branches. The common nodes and the eval branch keep the
eval capture's names; a train-branch node whose value is used after its run takes the name of
the eval node it stands for, and the others a name of their own where the eval capture uses
theirs. A node of one branch used by a later differing run's branch (no common node in between
stands for it) joins the runs up to it into one, with the common nodes between them in both
branches: a value is never defined in one branch and read in another.

A node list may also hold conditionals already (the two modes' specs of a model whose graph
depends on an optional input: ``if: mask is None`` groups, or the two calls' specs of a model
whose graph depends on the mode: ``if: training``): a group is common when both lists hold the
same one and the names it reads stand for themselves; else it is part of a differing run, so the
conditionals nest (``if: mask is None`` around the call's own ``if: training``). The names a
group defines count as its run's (a name read after a group is defined by both its branches).

Any alignment is exact: each mode's nodes, in order, are its run's branch and the common runs.
The one chosen makes the differing runs short: at a difference, the walk resumes at the nearest
pair of nodes that agree once the references into the differing runs are paired.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from fxgen.spec.model import IfNodes, Item, Node, walk_nodes
from fxgen.spec.resolve import TRAINING

__all__ = ["MODE_ARGUMENT", "Aligned", "Differing", "Unaligned", "align", "map_refs_items", "map_refs_node"]


MODE_ARGUMENT = {"arg": TRAINING}  # a boolean that is the mode, as a node argument


class Unaligned(ValueError):
    """The lists differ inside or around a conditional they hold: the message says where."""


@dataclass
class Differing:
    """A run where the two captures differ: the eval capture's nodes and the train capture's."""

    eval: list[Any]  # Node or IfNodes (a conditional the list held)
    train: list[Any]


@dataclass
class Aligned:
    """The two node lists as one sequence of common nodes and differing runs."""

    items: list[Any] = field(default_factory=list)  # Node, IfNodes (common conditionals), Differing

    def spec_items(self, condition: str = TRAINING, negated: str = f"not {TRAINING}") -> list[Item]:
        """As a spec's node list: each differing run an ``if: training`` group (the train nodes
        ``then``, the eval nodes ``else``; ``if: not training`` where only eval mode has nodes),
        or an ``if:`` on ``condition``, whose negation is ``negated``, where the second node list
        is what holds when the condition does (``mask is None``: the capture without it)."""
        out: list[Item] = []
        items, output = _output_after(self.items)
        for item in items:
            if not isinstance(item, Differing):
                out.append(item)
            elif item.train:
                out.append(IfNodes(condition, list(item.train), list(item.eval)))
            elif item.eval:
                out.append(IfNodes(negated, list(item.eval)))
        return out if output is None else [*out, output]

    @property
    def differs(self) -> bool:
        return any(isinstance(item, Differing) for item in self.items) or any(
            _uses_mode(item.args) or _uses_mode(item.kwargs) for item in self.items if isinstance(item, Node)
        )


def _output_after(items: list[Node | Differing]) -> tuple[list[Node | Differing], Node | None]:
    """Where the modes return different values, each branch names its value (``alias``) and the
    one output node comes after the run: a graph ends with its output, outside any group."""
    last = items[-1] if items else None
    if not isinstance(last, Differing) or not (last.eval and last.train):
        return items, None
    ends = last.eval[-1], last.train[-1]
    if any(not isinstance(node, Node) or node.op != "output" for node in ends):
        return items, None
    taken = {str(n.name) for item in items
             for n in walk_nodes([item] if not isinstance(item, Differing) else [*item.eval, *item.train])}  # fmt: skip
    name = "out" if "out" not in taken else _fresh("out", taken)
    branches = [[*nodes[:-1], Node("alias", name, args=[nodes[-1].args[0]])] for nodes in (last.eval, last.train)]
    output = Node("output", args=[f"%{name}"], type=ends[0].type if ends[0].type == ends[1].type else None)
    return [*items[:-1], Differing(branches[0], branches[1])], output


_REF = re.compile(r"^%([A-Za-z_][A-Za-z0-9_]*)$")


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        match = _REF.match(value)
        if match:
            yield match.group(1)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _refs(item)


def _node_refs(node: Node) -> list[str]:
    return [*_refs(node.args), *_refs(node.kwargs), *_refs(node.default)]


def _map_refs(value: Any, rename: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        match = _REF.match(value)
        return f"%{rename(match.group(1))}" if match else value
    if isinstance(value, list):
        return [_map_refs(item, rename) for item in value]
    if isinstance(value, dict):
        return {key: _map_refs(item, rename) for key, item in value.items()}
    return value


def _uses_mode(value: Any) -> bool:
    if isinstance(value, list):
        return any(_uses_mode(item) for item in value)
    if isinstance(value, dict):
        return value == MODE_ARGUMENT or any(_uses_mode(item) for item in value.values())
    return False


class _Mismatch(Exception):
    pass


def _merge_values(e: Any, t: Any, pair: Callable[[str, str], str | None], mode: bool = True,
                  constant: Callable[[Any, Any], Any] | None = None) -> Any:  # fmt: skip
    """``e`` (eval) and ``t`` (train) as one value: equal, booleans that are the mode (when the
    lists are the two modes'), references ``pair`` accepts (it may name the value both lists
    read, an alias), or scalars of one type that ``constant`` writes as one value (raising
    _Mismatch otherwise)."""
    if type(e) is bool and type(t) is bool:
        if e == t:
            return e
        if not e and t and mode:
            return dict(MODE_ARGUMENT)
        if constant is not None:
            return constant(e, t)
        raise _Mismatch
    if isinstance(e, str) and isinstance(t, str):
        me, mt = _REF.match(e), _REF.match(t)
        if me and mt:
            name = pair(me.group(1), mt.group(1))
            return e if name is None else f"%{name}"
        if me or mt:
            raise _Mismatch
        if e != t:
            if constant is None:
                raise _Mismatch
            return constant(e, t)
        return e
    if isinstance(e, list) and isinstance(t, list):
        if len(e) != len(t):
            raise _Mismatch
        return [_merge_values(a, b, pair, mode, constant) for a, b in zip(e, t, strict=True)]
    if isinstance(e, dict) and isinstance(t, dict):
        if list(e) != list(t):
            raise _Mismatch
        return {key: _merge_values(e[key], t[key], pair, mode, constant) for key in e}
    if type(e) is not type(t) or e != t:
        if constant is not None and type(e) is type(t) and type(e) in (int, float):
            return constant(e, t)
        raise _Mismatch
    return e


@dataclass(frozen=True)
class _Alias:
    """A name one branch of a run gives a value defined before the run, standing for a node of
    the other branch: ``downsample = x`` where the other list computes ``downsample(x)``."""

    side: str  # "eval" or "train": the branch it joins
    run: int  # the run's index (-1: the run ``_resume`` tries)
    name: str
    source: str  # the value it names, that side's name
    pair: tuple[str, str]  # the (eval name, train name) it stands for
    read: str | None  # what the common node reads (None: the eval name, as it is)


class _Walk:
    """The state of the alignment: which train name stands for which eval name."""

    def __init__(self, eval_nodes: list[Any], train_nodes: list[Any], mode: bool = True,
                 constant: Callable[[Any, Any], Any] | None = None, aliases: bool = False) -> None:  # fmt: skip
        self.eval_nodes, self.train_nodes = eval_nodes, train_nodes
        self.mode = mode  # the two lists are the modes' (a boolean that differs may be the mode)
        self.constant = constant  # how two differing scalars are written as one (None: they differ)
        self.aliases = aliases  # a value defined before a run may stand for a node of the run
        self.same: dict[str, str] = {}  # train name -> the eval name it stands for (common or paired)
        self.eval_run: dict[str, int] = {}  # names defined in differing runs -> run index
        self.train_run: dict[str, int] = {}
        self.paired_eval: dict[str, str] = {}  # eval name in a run -> the train name paired with it
        self.starts: list[tuple[int, int]] = []  # each run's first eval and train position
        self.trial = (0, 0)  # the start of the run ``_resume`` tries
        self.position = [{str(n.name): k for k, n in enumerate(nodes) if isinstance(n, Node)}
                         for nodes in (eval_nodes, train_nodes)]  # fmt: skip
        self.alias_of: dict[tuple[str, str], _Alias] = {}
        self.eval_names = {str(n.name) for n in walk_nodes(eval_nodes)}
        self.taken = self.eval_names | {str(n.name) for n in walk_nodes(train_nodes)}

    def merged(self, e: Node, t: Node) -> tuple[Node, list[tuple[str, str]], list[_Alias]] | None:
        """``e`` and ``t`` as one common node, the run nodes it pairs and the aliases it needs
        (None: they differ)."""
        if not isinstance(e, Node) or not isinstance(t, Node):
            return None  # (a conditional: common only when both hold the same one, ``_common_group``)
        if (e.op, e.target, e.type) != (t.op, t.target, t.type) or (e.op == "placeholder" and e.name != t.name):
            return None
        pairs: list[tuple[str, str]] = []
        aliases: list[_Alias] = []

        def pair(a: str, b: str) -> str | None:
            alias = self.alias_of.get((a, b)) or next((x for x in aliases if x.pair == (a, b)), None)
            if alias is not None:
                return alias.read
            known = self.same.get(b)
            if known == a:
                return None
            if known is None and a in self.eval_run and b in self.train_run and a not in self.paired_eval:
                for x, y in pairs:
                    if (x == a) != (y == b):
                        raise _Mismatch
                pairs.append((a, b))
                return None
            alias = self._alias(a, b, aliases)
            aliases.append(alias)
            return alias.read

        try:
            args = _merge_values(e.args, t.args, pair, self.mode, self.constant)
            kwargs = _merge_values(e.kwargs, t.kwargs, pair, self.mode, self.constant)
            default = _merge_values(e.default, t.default, pair, self.mode, self.constant)
        except _Mismatch:
            return None
        return replace(e, args=args, kwargs=kwargs, default=default), pairs, aliases

    def _alias(self, a: str, b: str, pending: list[_Alias]) -> _Alias:
        """Where the eval list reads ``a`` and the train list ``b``, one defined in a run and the
        other before the run began: an alias of the other in that run's other branch (raising
        _Mismatch where there is none to make)."""
        if not self.aliases:
            raise _Mismatch
        if a not in self.eval_run and b in self.train_run and b not in self.same:  # eval reads a value from before
            run, side, source, other = self.train_run[b], "eval", a, 0
        elif a in self.eval_run and a not in self.paired_eval and b not in self.train_run:  # train does
            run, side, source, other = self.eval_run[a], "train", b, 1
        else:
            raise _Mismatch
        start = self.starts[run] if run >= 0 else self.trial
        if self.position[other].get(source, start[other]) >= start[other]:
            raise _Mismatch  # (defined after the run began: no alias in it can name it)
        taken = self.taken | {x.name for x in pending}
        if side == "eval":  # (named as the train node it stands for, where the eval list has no such name)
            name = b if b not in self.eval_names and b not in {x.name for x in pending} else _fresh(b, taken)
        else:
            name = _fresh(a, taken)
        return _Alias(side, run, name, source, (a, b), name if side == "eval" else None)

    def add(self, alias: _Alias, runs: list[Differing]) -> None:
        """``alias`` in its run, and the names it pairs."""
        a, b = alias.pair
        node = Node("alias", alias.name, args=[f"%{alias.source}"])
        self.taken.add(alias.name)
        self.alias_of[alias.pair] = alias
        if alias.side == "eval":
            runs[alias.run].eval.append(node)
            self.eval_run[alias.name] = alias.run
            self.same[b], self.paired_eval[alias.name] = alias.name, b
        else:
            runs[alias.run].train.append(node)
            self.train_run[alias.name] = alias.run
            self.same[alias.name], self.paired_eval[a] = a, alias.name


def align(eval_nodes: list[Any], train_nodes: list[Any], *, mode: bool = True,
          constant: Callable[[Any, Any], Any] | None = None, aliases: bool = False) -> Aligned:  # fmt: skip
    """The two captures' nodes (each a plain node list, SSA) as common nodes and differing runs;
    ``mode``: they are the two modes' (else two calls', with an optional input and without it,
    where no boolean stands for the mode). ``constant`` writes two scalars that differ as one
    value (two instances' constants: an argument), else they differ. ``aliases``: a node reading
    a value one list defines in a differing run, where the other list reads a value defined
    before the run, is common: the other branch names its value as the run's (``else:
    downsample = x`` against ``then: downsample = self.downsample(x)``)."""
    walk = _Walk(eval_nodes, train_nodes, mode, constant, aliases)
    by_key: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for b, node in enumerate(train_nodes):
        by_key[(node.op, node.target) if isinstance(node, Node) else ("if", None)].append(b)
    items: list[Any] = []
    runs: list[Differing] = []
    i = j = 0
    while i < len(eval_nodes) or j < len(train_nodes):
        if i < len(eval_nodes) and j < len(train_nodes) and _common_group(walk, eval_nodes[i], train_nodes[j]):
            items.append(eval_nodes[i])
            i, j = i + 1, j + 1
            continue
        done = walk.merged(eval_nodes[i], train_nodes[j]) if i < len(eval_nodes) and j < len(train_nodes) else None
        if done is None:
            a, b = _resume(walk, by_key, i, j)
            run = Differing(eval_nodes[i:a], train_nodes[j:b])
            for node in walk_nodes(run.eval):
                walk.eval_run[str(node.name)] = len(runs)
            for node in walk_nodes(run.train):
                walk.train_run[str(node.name)] = len(runs)
            walk.starts.append((i, j))
            runs.append(run)
            items.append(run)
            i, j = a, b
            if i == len(eval_nodes) or j == len(train_nodes) or _common_group(walk, eval_nodes[i], train_nodes[j]):
                continue
            done = walk.merged(eval_nodes[i], train_nodes[j])
            assert done is not None
        node, pairs, made = done
        for x, y in pairs:
            walk.same[y] = x
            walk.paired_eval[x] = y
        for alias in made:
            walk.add(alias, runs)
        if train_nodes[j].name is not None and node.name is not None:
            walk.same[str(train_nodes[j].name)] = node.name
        items.append(node)
        i, j = i + 1, j + 1
    return _named(_joined(items, walk), walk)


def _common_group(walk: _Walk, e: Any, t: Any) -> bool:
    """Are ``e`` and ``t`` the same conditional, node for node, once the names ``t`` reads are
    those they stand for (torch.fx's names shift with the nodes before them)? Then the names it
    defines stand for ``e``'s."""
    if not isinstance(e, IfNodes) or not isinstance(t, IfNodes):
        return False
    inside: dict[str, str] = {}  # a name t's group defines -> e's
    if not _same_items(walk, e.then, t.then, inside) or not _same_items(walk, e.orelse, t.orelse, inside):
        return False
    if e.cond != t.cond:
        return False
    walk.same.update(inside)
    return True


def _same_items(walk: _Walk, a: list[Item], b: list[Item], inside: dict[str, str]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, IfNodes) and isinstance(y, IfNodes):
            if x.cond != y.cond or not _same_items(walk, x.then, y.then, inside) \
                    or not _same_items(walk, x.orelse, y.orelse, inside):  # fmt: skip
                return False
            continue
        if not isinstance(x, Node) or not isinstance(y, Node):
            return False

        def seen(name: str) -> str:
            return inside.get(name) or walk.same.get(name) or "\0"  # (a name standing for nothing matches none)

        mapped = map_refs_node(replace(y, name=None), seen)
        if replace(x, name=None) != mapped:
            return False
        if y.name is not None and x.name is not None:
            if inside.get(str(y.name), x.name) != x.name:
                return False
            inside[str(y.name)] = str(x.name)
    return True


def _resume(walk: _Walk, by_key: dict[tuple[Any, ...], list[int]], i: int, j: int) -> tuple[int, int]:
    """The nearest ``(a, b)``, ``a >= i`` and ``b >= j``, where the nodes agree once references into
    the differing runs (``[i, a)`` and ``[j, b)`` among them) are paired; the ends when none do."""
    eval_nodes, train_nodes = walk.eval_nodes, walk.train_nodes
    best = (len(eval_nodes), len(train_nodes))
    best_cost = best[0] - i + best[1] - j
    for a in range(i, len(eval_nodes)):
        if a - i >= best_cost:
            break
        node = eval_nodes[a]
        for b in by_key.get((node.op, node.target) if isinstance(node, Node) else ("if", None), ()):
            if b < j:
                continue
            if a - i + b - j >= best_cost:
                break
            if not isinstance(node, Node):
                if node == train_nodes[b]:
                    best, best_cost = (a, b), a - i + b - j
                    break
                continue
            # as if [i, a) and [j, b) were the run: their names may be paired
            eval_names = {str(n.name): -1 for n in walk_nodes(eval_nodes[i:a])}
            train_names = {str(n.name): -1 for n in walk_nodes(train_nodes[j:b])}
            walk.eval_run.update(eval_names)
            walk.train_run.update(train_names)
            walk.trial = (i, j)
            try:
                done = walk.merged(node, train_nodes[b])
            finally:
                for name in eval_names:
                    walk.eval_run.pop(name)
                for name in train_names:
                    walk.train_run.pop(name)
            if done is not None:
                best, best_cost = (a, b), a - i + b - j
                break
    return best


def _joined(items: list[Node | Differing], walk: _Walk) -> list[Node | Differing]:
    """The runs with every value a branch defines read only in its own run or by common nodes
    (a node of one branch read by a later run's branch joins the runs up to that one, the common
    nodes between them going into both branches)."""
    while True:
        run_of: dict[int, int] = {}  # item index of a run -> run position
        defined: dict[tuple[str, str], int] = {}  # (side, name) -> item index of its run
        for k, item in enumerate(items):
            if isinstance(item, Differing):
                run_of[k] = len(run_of)
                for side, nodes in (("eval", item.eval), ("train", item.train)):
                    for node in walk_nodes(nodes):
                        defined[(side, str(node.name))] = k
        join: tuple[int, int] | None = None
        for eval_name, train_name in walk.paired_eval.items():  # paired across two runs
            k, m = defined[("eval", eval_name)], defined[("train", train_name)]
            if k != m:
                join = (min(k, m), max(k, m)) if join is None else (min(join[0], k, m), max(join[1], k, m))
        for k, item in enumerate(items):
            if not isinstance(item, Differing):
                continue
            for side, nodes in (("eval", item.eval), ("train", item.train)):
                for node in walk_nodes(nodes):
                    for name in _node_refs(node):
                        start = defined.get((side, name))
                        if start is not None and start < k:
                            join = (start, k) if join is None else (min(join[0], start), max(join[1], k))
        if join is None:
            return items
        start, end = join
        merged = Differing([], [])
        for item in items[start : end + 1]:
            if isinstance(item, Differing):
                merged.eval += item.eval
                merged.train += item.train
            else:
                merged.eval.append(item)
                merged.train += map_refs_items([item], _inverse(walk))
        items = [*items[:start], merged, *items[end + 1 :]]


def _inverse(walk: _Walk) -> Callable[[str], str]:
    back = {eval_name: train_name for train_name, eval_name in walk.same.items()}
    return lambda name: back.get(name, name)


def map_refs_node(node: Node, rename: Callable[[str], str]) -> Node:
    """``node`` with its name and every ``%name`` it reads passed through ``rename``."""
    return replace(node, name=rename(str(node.name)) if node.name is not None else None,
                   args=_map_refs(node.args, rename), kwargs=_map_refs(node.kwargs, rename),
                   default=_map_refs(node.default, rename))  # fmt: skip


def map_refs_items(items: list[Any], rename: Callable[[str], str]) -> list[Any]:
    """``items`` (nodes, and conditionals with everything in them) with their names and
    references passed through ``rename``; other items as they are."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, Node):
            out.append(map_refs_node(item, rename))
        elif isinstance(item, IfNodes):
            out.append(replace(item, then=map_refs_items(item.then, rename), orelse=map_refs_items(item.orelse, rename)))
        else:
            out.append(item)
    return out


def _named(items: list[Node | Differing], walk: _Walk) -> Aligned:
    """The train branches' nodes renamed: a node standing for an eval node takes its name, one
    whose name the eval capture (or a renamed node) uses takes a fresh one; references follow."""
    taken = {str(n.name) for n in walk_nodes(walk.eval_nodes)} | {str(n.name) for n in walk_nodes(walk.train_nodes)}
    used = {str(n.name) for n in walk_nodes(walk.eval_nodes)}
    names: dict[str, str] = dict(walk.same)
    for item in items:
        if not isinstance(item, Differing):
            continue
        for node in walk_nodes(item.train):
            name = str(node.name)
            if name in names:
                continue
            if name in used:
                fresh = _fresh(name, taken)
                taken.add(fresh)
                names[name] = fresh
            else:
                names[name] = name
            used.add(names[name])

    def rename(name: str) -> str:
        return names.get(name, name)

    out: list[Node | Differing] = []
    for item in items:
        if isinstance(item, Differing):
            out.append(Differing(item.eval, map_refs_items(item.train, rename)))
        else:
            out.append(item)
    return Aligned(out)


def _fresh(name: str, taken: set[str]) -> str:
    base = re.sub(r"_\d+$", "", name)
    k = 1
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"
