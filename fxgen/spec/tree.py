"""The model tree: where a spec's submodules, parameters and buffers live, and which containers
``forward`` should look up once.

Dotted spec paths become a tree of containers (``nn.Module()``, ``nn.ModuleList``,
``nn.ModuleDict``) so that generated code reads ``self.layer1[0].conv1`` the way people write
it. Reaching a submodule costs one Python call per step (``nn.Module.__getattr__``,
``ModuleList.__getitem__``), so a forward that reaches twenty convolutions five containers deep
pays for a hundred lookups the original module never made; :func:`shared_containers` picks the
containers worth binding to a local variable once per call.

The same tree fixes the order in which the generated ``__init__`` constructs modules and creates
parameters and buffers; :func:`construction_order` gives that order, so that ``fxgen.load``
draws from the random generator in it too and, after ``torch.manual_seed``, a loaded spec and
its generated class hold the same values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fxgen.spec.model import ModuleSpec, Spec

__all__ = [
    "Container",
    "ModelTree",
    "construction_order",
    "construction_plan",
    "declaration_order",
    "shared_containers",
]


@dataclass
class Container:
    """A node of the tree that the spec does not declare: it only holds other things."""

    children: dict[str, Any] = field(default_factory=dict)
    kind: str = "attr"  # ``list``, ``dict`` or ``attr``: set by ModelTree once the tree is complete

    def settle(self) -> None:
        """Work out ``kind`` once the children are all known. It is read thousands of times per
        render: as a property it made rendering quadratic, and as a cached_property it was the
        renderer's largest cost after that."""
        holds_modules = all(isinstance(c, (ModuleSpec, Container)) for c in self.children.values())
        self.kind = _container_kind(list(self.children), holds_modules)


def _container_kind(keys: list[str], holds_modules: bool) -> str:
    """``nn.ModuleList`` for modules at 0..n-1, ``nn.ModuleDict`` for other digit keys, else a
    plain ``nn.Module`` (which also holds parameters and buffers)."""
    if keys and holds_modules and all(map(_index, keys)):
        return "list" if [int(k) for k in keys] == list(range(len(keys))) else "dict"
    return "attr"


def _index(key: str) -> bool:
    """Is ``key`` how torch names an index (``"0"``, ``"12"``)? Not ``"01"`` or ``"²"``, which
    ``str.isdigit`` accepts: a ModuleList would register those under other names."""
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0")


def _in_tree_order(declared: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``(path, item)`` grouped by top-level attribute, in order of each attribute's first
    declaration (stable within a group)."""
    first: dict[str, int] = {}  # top-level attribute -> index of its first declaration
    keys = [first.setdefault(path.partition(".")[0], i) for i, (path, _) in enumerate(declared)]
    if keys == sorted(keys):
        return declared  # already grouped (the common case)
    return [declared[i] for i in sorted(range(len(declared)), key=keys.__getitem__)]


class ModelTree:
    """The spec's dotted paths as a tree, in declaration order of their top-level attributes."""

    def __init__(self, spec: Spec) -> None:
        self.root = Container()
        declared: list[tuple[str, Any]] = [*spec.modules.items(), *spec.parameters.items(), *spec.buffers.items()]
        for path, item in _in_tree_order(declared):
            node = self.root
            *parents, leaf = path.split(".")
            for part in parents:
                child = node.children.get(part)
                if child is None:
                    child = node.children[part] = Container()
                node = child
            node.children[leaf] = item
        self._paths = self._settle_and_index()

    def _settle_and_index(self) -> dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]]:
        """Settle every container's kind, and return ``path -> (steps, container prefixes)`` for
        every path in the tree, in one walk: a render asks about each path it writes, and
        walking per question was a fifth of it."""
        out: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {}
        stack: list[tuple[Container, str, tuple[tuple[str, str], ...], tuple[str, ...]]] = [(self.root, "", (), ())]
        while stack:
            node, path, steps, prefixes = stack.pop()
            if node is self.root:
                kind = "attr"  # the model itself is never a list
            else:
                node.settle()  # its children are all known: the tree is complete
                kind = node.kind
            for key, child in node.children.items():
                child_path = f"{path}.{key}" if path else key
                child_steps = (*steps, (key, kind))
                out[child_path] = (child_steps, prefixes)
                if isinstance(child, Container):
                    stack.append((child, child_path, child_steps, (*prefixes, child_path)))
        return out

    def steps(self, path: str, start: int = 0) -> tuple[tuple[str, str], ...]:
        """``(segment, kind of its parent)`` for each segment of ``path`` from index ``start``;
        the kind is ``opaque`` inside a declared module (its own attributes)."""
        known = self._paths.get(path)
        steps = known[0] if known is not None else self._walk(path)
        return steps[start:] if start else steps

    def _walk(self, path: str) -> tuple[tuple[str, str], ...]:
        node: Any = self.root
        out: list[tuple[str, str]] = []
        for part in path.split("."):
            if node is self.root:
                kind = "attr"  # the model itself is a plain nn.Module, never a list
            else:
                kind = node.kind if isinstance(node, Container) else "opaque"
            out.append((part, kind))
            node = node.children.get(part) if isinstance(node, Container) else None
        return tuple(out)

    def item(self, path: str) -> Any:
        """What the tree holds at ``path``: a declaration or a Container."""
        node: Any = self.root
        for part in path.split("."):
            node = node.children[part]
        return node

    def container_prefixes(self, path: str) -> tuple[str, ...]:
        """The proper prefixes of ``path`` that are containers (not the model, not declared),
        outermost first."""
        known = self._paths.get(path)
        if known is not None:
            return known[1]
        parts = path.split(".")
        node: Any = self.root
        out: list[str] = []
        for i, part in enumerate(parts[:-1]):
            node = node.children.get(part) if isinstance(node, Container) else None
            if not isinstance(node, Container):
                break
            out.append(".".join(parts[: i + 1]))
        return tuple(out)


def shared_containers(tree: ModelTree, paths: list[str]) -> list[str]:
    """Containers that two or more of ``paths`` go through, outermost first, leaving out those
    whose every use goes through one bound child anyway (binding them would save nothing)."""
    uses: dict[str, int] = {}
    for path in paths:
        for prefix in tree.container_prefixes(path):
            uses[prefix] = uses.get(prefix, 0) + 1
    bound: set[str] = set()
    covered: set[str] = set()  # prefixes all of whose uses go through one bound child
    for prefix in sorted(uses, key=lambda p: (-p.count("."), p)):  # innermost first
        if uses[prefix] >= 2 and prefix not in covered:
            bound.add(prefix)
            parent = prefix.rpartition(".")[0]
            if parent and uses.get(parent) == uses[prefix]:
                covered.add(parent)
    return sorted(bound, key=lambda p: (p.count("."), p))


# -- construction order ----------------------------------------------------------------------
_Branch = dict[str, Any]  # segment -> a deeper _Branch, or a declaration's (table, path)


def construction_order(
    modules: Iterable[str], parameters: Iterable[str], buffers: Iterable[str]
) -> list[tuple[str, str]] | None:
    """``(table, path)`` of every declaration, in the order the generated ``__init__`` creates
    them (``fxgen.codegen.constructor.init_lines``): a top-level attribute at a time; a ``ModuleList`` or
    ``ModuleDict`` constructs its modules inside its own creation expression, before anything
    its plain-module children hold. ``table`` is ``modules``, ``parameters`` or ``buffers``.

    None when the paths do not form a tree (a path inside another declaration, or declared
    twice): validation reports those. Paths only, so it serves raw spec data and Specs alike.
    """
    declared = [(item[1], item) for item in declaration_order(modules, parameters, buffers)]
    root: _Branch = {}
    for path, leaf in _in_tree_order(declared):
        node = root
        *parents, last = path.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if type(child) is not dict:
                return None
            node = child
        if last in node:
            return None
        node[last] = leaf
    out: list[tuple[str, str]] = []
    _children_order(root, out, {})
    return out


def declaration_order(
    modules: Iterable[str], parameters: Iterable[str], buffers: Iterable[str]
) -> list[tuple[str, str]]:
    """``(table, path)`` as a spec declares them: modules, then parameters, then buffers."""
    return [(table, path) for table, paths in
            (("modules", modules), ("parameters", parameters), ("buffers", buffers)) for path in paths]  # fmt: skip


def _kind(branch: _Branch, kinds: dict[int, str]) -> str:
    """The container kind of ``branch`` (as ``Container.settle`` finds it), worked out once."""
    kind = kinds.get(id(branch))
    if kind is None:
        holds_modules = all(type(c) is dict or c[0] == "modules" for c in branch.values())
        kind = kinds[id(branch)] = _container_kind(list(branch), holds_modules)
    return kind


def _children_order(branch: _Branch, out: list[tuple[str, str]], kinds: dict[int, str]) -> None:
    """``_render._emit_children``: each child in turn; a container's creation, then its contents."""
    for item in branch.values():
        if type(item) is dict:
            _creation_order(item, out, kinds)
            _nested_order(item, out, kinds)
        else:
            out.append(item)


def _creation_order(branch: _Branch, out: list[tuple[str, str]], kinds: dict[int, str]) -> None:
    """``_render._container_expr``: a list or dict container constructs its modules, and its
    list or dict children theirs, inside one expression; a plain container is ``nn.Module()``."""
    if _kind(branch, kinds) == "attr":
        return
    for item in branch.values():
        if type(item) is dict:
            _creation_order(item, out, kinds)
        else:
            out.append(item)


def _nested_order(branch: _Branch, out: list[tuple[str, str]], kinds: dict[int, str]) -> None:
    """``_render._emit_nested``: what a container's creation did not hold."""
    if _kind(branch, kinds) == "attr":
        _children_order(branch, out, kinds)
        return
    for item in branch.values():
        if type(item) is dict:
            _nested_order(item, out, kinds)


def construction_plan(
    modules: Iterable[str], parameters: Iterable[str], buffers: Iterable[str]
) -> list[tuple[str, str]]:
    """``(table, path)`` in the order the generated class's ``__init__`` creates them
    (``_tree.construction_order``); a spec without dotted paths keeps its declaration order,
    which is that order too."""
    modules, parameters, buffers = list(modules), list(parameters), list(buffers)
    if any("." in path for paths in (modules, parameters, buffers) for path in paths):
        order = construction_order(modules, parameters, buffers)
        if order is not None:
            return order
    return declaration_order(modules, parameters, buffers)
