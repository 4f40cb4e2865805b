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

from dataclasses import dataclass, field
from typing import Any

from fxgen._spec import ModuleSpec, Spec

__all__ = ["Container", "ModelTree", "shared_containers"]


@dataclass
class Container:
    """A node of the tree that the spec does not declare: it only holds other things."""

    children: dict[str, Any] = field(default_factory=dict)
    kind: str = "attr"  # ``list``, ``dict`` or ``attr``: set by ModelTree once the tree is complete

    def settle(self) -> None:
        """Work out ``kind`` once the children are all known. It is read thousands of times per
        render: as a property it made rendering quadratic, and as a cached_property it was the
        renderer's largest cost after that."""
        keys = list(self.children)
        values = self.children.values()
        if keys and all(map(str.isdigit, keys)) and all(isinstance(c, (ModuleSpec, Container)) for c in values):
            self.kind = "list" if [int(k) for k in keys] == list(range(len(keys))) else "dict"


class ModelTree:
    """The spec's dotted paths as a tree, in declaration order of their top-level attributes."""

    def __init__(self, spec: Spec) -> None:
        self.root = Container()
        declared: list[tuple[str, Any]] = [*spec.modules.items(), *spec.parameters.items(), *spec.buffers.items()]
        first: dict[str, int] = {}  # top-level attribute -> index of its first declaration
        for i, (path, _) in enumerate(declared):
            first.setdefault(path.partition(".")[0], i)
        for path, item in sorted(declared, key=lambda kv: first[kv[0].partition(".")[0]]):
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
