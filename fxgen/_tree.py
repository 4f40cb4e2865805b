"""The model tree: where a spec's submodules, parameters and buffers live, and which containers
``forward`` should look up once.

Dotted spec paths become a tree of containers (``nn.Module()``, ``nn.ModuleList``,
``nn.ModuleDict``) so that generated code reads ``self.layer1[0].conv1`` the way people write
it. Reaching a submodule costs one Python call per step (``nn.Module.__getattr__``,
``ModuleList.__getitem__``), so a forward that reaches twenty convolutions five containers deep
pays for a hundred lookups the original module never made; :func:`shared_containers` picks the
containers worth binding to a local variable once per call.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from fxgen._spec import ModuleSpec, Spec

__all__ = ["Container", "ModelTree", "shared_containers"]


@dataclass
class Container:
    """A node of the tree that the spec does not declare: it only holds other things."""

    children: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def kind(self) -> str:
        """``list``, ``dict`` or ``attr``: computed once, after the tree is complete (as a
        property it made rendering quadratic)."""
        keys = list(self.children)
        numeric = all(k.isdigit() for k in keys)
        only_modules = all(isinstance(c, (ModuleSpec, Container)) for c in self.children.values())
        if keys and numeric and only_modules:
            return "list" if [int(k) for k in keys] == list(range(len(keys))) else "dict"
        return "attr"


class ModelTree:
    """The spec's dotted paths as a tree, in declaration order of their top-level attributes."""

    def __init__(self, spec: Spec) -> None:
        self.root = Container()
        declared: list[tuple[str, Any]] = [*spec.modules.items(), *spec.parameters.items(), *spec.buffers.items()]
        first: dict[str, int] = {}  # top-level attribute -> index of its first declaration
        for i, (path, _) in enumerate(declared):
            first.setdefault(path.split(".", 1)[0], i)
        for path, item in sorted(declared, key=lambda kv: first[kv[0].split(".", 1)[0]]):
            node = self.root
            *parents, leaf = path.split(".")
            for part in parents:
                node = node.children.setdefault(part, Container())
            node.children[leaf] = item

    def steps(self, path: str, start: int = 0) -> list[tuple[str, str]]:
        """``(segment, kind of its parent)`` for each segment of ``path`` from index ``start``;
        the kind is ``opaque`` inside a declared module (its own attributes)."""
        parts = path.split(".")
        node: Any = self.root
        out: list[tuple[str, str]] = []
        for i, part in enumerate(parts):
            if node is self.root:
                kind = "attr"  # the model itself is a plain nn.Module, never a list
            else:
                kind = node.kind if isinstance(node, Container) else "opaque"
            if i >= start:
                out.append((part, kind))
            node = node.children.get(part) if isinstance(node, Container) else None
        return out

    def container_prefixes(self, path: str) -> list[str]:
        """The proper prefixes of ``path`` that are containers (not the model, not declared)."""
        parts = path.split(".")
        node: Any = self.root
        out: list[str] = []
        for i, part in enumerate(parts[:-1]):
            node = node.children.get(part) if isinstance(node, Container) else None
            if not isinstance(node, Container):
                break
            out.append(".".join(parts[: i + 1]))
        return out


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
