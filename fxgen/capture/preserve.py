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

import operator
from typing import Any

import torch
from torch import nn

__all__ = ["Snapshot"]


_DEPTH = 4  # containers nested deeper than this are not recorded (a cache is one or two levels)


_SKIP = (torch.Tensor, nn.Module, str, bytes, int, float, bool, type(None))
_CONTAINERS = (dict, list, set, tuple)

# What a value's type says (a module holds a few dozen attributes: the subclass tests are made
# once per type, not per value): nothing to record (a leaf, a tensor, a module), a mutable
# container (its contents recorded; an empty one only emptied again), or something else
# (``_record`` looks: a tuple, a Proxy of an earlier trace, an object it leaves alone).
_SKIPPED, _MUTABLE, _OTHER = 0, 1, 2
_KINDS: dict[type, int] = {}

Where = tuple[Any, ...]  # (path, name) of a module attribute, then (where, key) per container level


class Snapshot:
    """The attributes of ``root`` and of every submodule, to :meth:`restore` after tracing."""

    def __init__(self, root: nn.Module) -> None:
        self._modules: list[tuple[nn.Module, dict[str, Any]]] = []
        self._containers: list[tuple[Any, Any]] = []  # (container, a shallow copy of its contents)
        # Most containers a module holds are nn.Module's own empty bookkeeping (hook tables, empty
        # parameter dicts): 7,664 of 8,325 on a 555-module network. They need no copy, only
        # emptying again if tracing filled them.
        self._empty: list[Any] = []
        self._proxies: list[Where] = []  # where Proxies of an earlier trace are kept
        # A tracer may patch torch's functions while it runs (Hugging Face's HFTracer wraps
        # torch.ones, torch.tensor, ...) and, when tracing fails, not put them back: every later
        # export would then see the wrappers. torch's own namespaces are restored too.
        self._namespaces = [(vars(namespace), dict(vars(namespace))) for namespace in (torch, torch.nn.functional)]
        seen: set[int] = set()
        kinds = _KINDS
        for path, module in root.named_modules(remove_duplicate=True):
            attributes = vars(module)
            self._modules.append((module, dict(attributes)))
            for name, value in attributes.items():
                kind = kinds.get(type(value))
                if kind is None:
                    kind = _kind(type(value))
                if kind == _MUTABLE and not value:  # (most: nn.Module's own hook tables)
                    self._empty.append(value)
                elif kind != _SKIPPED:
                    self._record(value, (path, name), _DEPTH, seen)

    @property
    def proxies(self) -> list[str]:
        """Where Proxies of an earlier trace are kept: ``"blocks.0.cache['k']"``."""
        return [_location(where) for where in self._proxies]

    def _record(self, value: Any, where: Where, depth: int, seen: set[int]) -> None:
        if isinstance(value, torch.fx.Proxy):
            self._proxies.append(where)
            return
        kind = type(value)
        if not (issubclass(kind, _CONTAINERS)) or id(value) in seen or depth == 0:
            return
        seen.add(id(value))
        if not value:
            if not issubclass(kind, tuple):
                self._empty.append(value)
            return
        kinds = _KINDS
        items = value.items() if issubclass(kind, dict) else enumerate(value)
        if issubclass(kind, dict):
            self._containers.append((value, list(items)))
        elif not issubclass(kind, tuple):
            self._containers.append((value, list(value)))
        for key, item in items:
            found = kinds.get(type(item))
            if found is None:
                found = _kind(type(item))
            if found != _SKIPPED:
                self._record(item, (where, key), depth - 1, seen)

    def restore(self) -> None:
        """Put every recorded attribute and container content back (the same objects)."""
        for namespace, saved in self._namespaces:
            for name in [name for name, value in saved.items() if namespace.get(name, _ABSENT) is not value]:
                namespace[name] = saved[name]
        for module, attributes in self._modules:
            current = vars(module)
            if (len(current) != len(attributes) or not all(map(operator.is_, current.values(), attributes.values()))
                    or current.keys() != attributes.keys()):  # fmt: skip
                current.clear()
                current.update(attributes)
        for container in filter(None, self._empty):  # (the ones tracing filled)
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


def _kind(kind: type) -> int:
    """``_SKIPPED``, ``_MUTABLE`` or ``_OTHER`` for values of type ``kind``, memoised."""
    if len(_KINDS) > 4096:  # (types made at run time would otherwise be kept alive here)
        _KINDS.clear()
    if issubclass(kind, torch.fx.Proxy):
        found = _OTHER
    elif issubclass(kind, _SKIP):
        found = _SKIPPED
    else:
        found = _MUTABLE if issubclass(kind, (dict, list, set)) else _OTHER
    _KINDS[kind] = found
    return found


def _location(where: Where) -> str:
    """``blocks.0.cache['k']`` for ``((("blocks.0", "cache"), "k"))``: formatted only for a message."""
    keys: list[Any] = []
    while isinstance(where[0], tuple):
        where, key = where
        keys.append(key)
    path, name = where
    return (f"{path}.{name}" if path else name) + "".join(f"[{key!r}]" for key in reversed(keys))


def _changed(now: list[Any], then: list[Any], *, pairs: bool = False) -> bool:
    """Whether a container's contents are no longer the same objects in the same order."""
    if len(now) != len(then):
        return True
    if pairs:
        return any(a[0] is not b[0] or a[1] is not b[1] for a, b in zip(now, then, strict=True))
    return any(a is not b for a, b in zip(now, then, strict=True))
