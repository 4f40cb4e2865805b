"""Leave the user's model as export found it.

Symbolic tracing runs ``forward`` with Proxies, and a forward may store what it computes on the
module: a cache filled on the first call (``self.cache[key] = ...``, as attention-bias caches
do), a counter, a lazily created submodule. Tracing then leaves Proxies in the model: its own
forward stops returning tensors, and a second trace reads nodes of the first. torch.fx also
puts the tensor constants it makes (``_tensor_constant0``) on the traced module.

:class:`Snapshot` records every module's attributes and the contents of the plain containers
they hold (dicts, lists, sets, nested a few levels), and puts them back after tracing: the same
objects, with the same contents. It also finds Proxies a trace outside fxgen already left
behind, so export can name where they are instead of tracing a graph that reads another graph.
torch's own namespaces are restored as well: a tracer that patches torch's functions while it
runs may leave them patched when it fails.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["Snapshot"]


_DEPTH = 4  # containers nested deeper than this are not recorded (a cache is one or two levels)


_SKIP = (torch.Tensor, nn.Module, str, bytes, int, float, bool, type(None))


class Snapshot:
    """The attributes of ``root`` and of every submodule, to :meth:`restore` after tracing."""

    def __init__(self, root: nn.Module) -> None:
        self._modules: list[tuple[nn.Module, dict[str, Any]]] = []
        self._containers: list[tuple[Any, Any]] = []  # (container, a shallow copy of its contents)
        # Most containers a module holds are nn.Module's own empty bookkeeping (hook tables, empty
        # parameter dicts): 7,664 of 8,325 on a 555-module network. They need no copy, only
        # emptying again if tracing filled them.
        self._empty: list[Any] = []
        self.proxies: list[str] = []  # where Proxies of an earlier trace are kept: "blocks.0.cache['k']"
        # A tracer may patch torch's functions while it runs (Hugging Face's HFTracer wraps
        # torch.ones, torch.tensor, ...) and, when tracing fails, not put them back: every later
        # export would then see the wrappers. torch's own namespaces are restored too.
        self._namespaces = [(vars(namespace), dict(vars(namespace))) for namespace in (torch, torch.nn.functional)]
        seen: set[int] = set()
        for path, module in root.named_modules(remove_duplicate=True):
            attributes = vars(module)
            self._modules.append((module, dict(attributes)))
            for name, value in attributes.items():
                self._record(value, f"{path}.{name}" if path else name, _DEPTH, seen)

    def _record(self, value: Any, where: str, depth: int, seen: set[int]) -> None:
        if isinstance(value, _SKIP):
            return
        if isinstance(value, torch.fx.Proxy):
            self.proxies.append(where)
            return
        kind = type(value)
        if not (issubclass(kind, (dict, list, set, tuple))) or id(value) in seen or depth == 0:
            return
        seen.add(id(value))
        if not value:
            if not issubclass(kind, tuple):
                self._empty.append(value)
            return
        if issubclass(kind, dict):
            self._containers.append((value, list(value.items())))
            for key, item in value.items():
                self._record(item, f"{where}[{key!r}]", depth - 1, seen)
        else:
            if not issubclass(kind, tuple):
                self._containers.append((value, list(value)))
            for i, item in enumerate(value):
                self._record(item, f"{where}[{i}]", depth - 1, seen)

    def restore(self) -> None:
        """Put every recorded attribute and container content back (the same objects)."""
        for namespace, saved in self._namespaces:
            for name in [name for name, value in saved.items() if namespace.get(name, _ABSENT) is not value]:
                namespace[name] = saved[name]
        for module, attributes in self._modules:
            current = vars(module)
            if current.keys() != attributes.keys() or any(current[k] is not v for k, v in attributes.items()):
                current.clear()
                current.update(attributes)
        for container in self._empty:
            if container:
                container.clear()
        for container, contents in self._containers:
            if isinstance(container, dict):
                if _changed(list(container.items()), contents, pairs=True):
                    container.clear()
                    container.update(contents)
            elif isinstance(container, list):
                if _changed(container, contents):
                    container[:] = contents
            elif _changed(list(container), contents):
                container.clear()
                container.update(contents)


_ABSENT: Any = object()


def _changed(now: list[Any], then: list[Any], *, pairs: bool = False) -> bool:
    """Whether a container's contents are no longer the same objects in the same order."""
    if len(now) != len(then):
        return True
    if pairs:
        return any(a[0] is not b[0] or a[1] is not b[1] for a, b in zip(now, then, strict=True))
    return any(a is not b for a, b in zip(now, then, strict=True))
