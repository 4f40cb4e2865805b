"""Verify a recovered constructor call by rebuilding the module and comparing the two.

Export writes each leaf module as a constructor call, and that call is only ever a claim:
built-in recovery reads attributes (a heuristic), and registered or recorded recoveries are
user code. A wrong call would not fail at export -- it would silently generate a different
model. :func:`check_rebuild` is the proof: it builds ``cls(*args, **kwargs)`` on the meta
device (no memory, no initialisation cost) and compares it with the original -- repr,
parameters, buffers, plain attributes, hooks and submodules, recursively. Parameter
*values* are not compared: the exporter writes them to the weights file. This module builds
and decides where (meta device or CPU); what counts as a difference is ``fxgen.describe.compare``.

The check does not care how the call was found, so it lives apart from the recovery itself
(``fxgen.describe.recover``) and the torch.nn rule table (``fxgen.describe.recover_rules``). It is their
bottom layer and imports neither; it therefore also holds the few helpers all three use to
name classes, calls and values in messages (the class name comes from ``fxgen.describe.compare``).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

from fxgen._errors import ExportError
from fxgen.construct.modules import (
    NO_TENSORS,
    SMALL_MODULE,
    meta_device,
    same_random_state,
    tensors_in,
)
from fxgen.describe.compare import (
    INTERNAL_ATTRIBUTES,
    differences,
    qualified_name,
    repr_difference,
    short_text,
)

__all__ = ["LazyWhere", "RebuildCache", "check_rebuild", "describe_value", "normalize_constructor", "submodules"]


class RebuildCache:
    """Rebuilds shared by identical constructor calls within one export.

    Models repeat blocks, so many leaf modules recover to the same call. Only the
    *construction* is shared: every instance is still compared with the rebuild, so a module
    whose state differs from its siblings' (an attribute changed after construction, a hook)
    is caught. The key is everything that decides the rebuild: the class, the recovered
    arguments (with their types: ``1``, ``1.0`` and ``True`` are different keys) and whether
    it is built on the CPU to compare values. Calls whose arguments are not plain values are
    not cached.
    """

    def __init__(self) -> None:
        self._built: dict[Any, list[Any]] = {}  # key -> [rebuilt module, its repr or None]
        self.hits = 0
        self.misses = 0

    def get(
        self,
        cls: type[nn.Module],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        where: str | LazyWhere,
        on_meta: bool,
    ) -> list[Any]:
        try:
            key = (cls, on_meta, _freeze(args), _freeze(kwargs))
            hash(key)
        except _Unfrozen:
            return [_build(cls, args, kwargs, where, on_meta=on_meta), None]
        entry = self._built.get(key)
        if entry is None:
            self.misses += 1
            entry = self._built[key] = [_build(cls, args, kwargs, where, on_meta=on_meta), None]
        else:
            self.hits += 1
        return entry


class _Unfrozen(Exception):
    pass


_FROZEN_LEAVES: frozenset[type] = frozenset(
    {type(None), bool, int, str, torch.dtype, torch.device, torch.memory_format, torch.layout, type(...)}
)


def _freeze(value: Any) -> Any:
    """A hashable key equal only for values that build the same module (types included)."""
    kind = type(value)
    if kind in _FROZEN_LEAVES:
        return (kind, value)
    if kind is float or kind is complex:
        return (kind, repr(value))  # -0.0 != 0.0, and nan is one key
    if kind is tuple or kind is list or kind is torch.Size:
        kinds = tuple(map(type, value))
        if _FROZEN_LEAVES.issuperset(kinds):  # the common case, without a call per item
            return (kind, kinds, tuple(value))  # equal types, so == is equality of each item
        return (kind, tuple(_freeze(v) for v in value))
    if kind is dict:
        return (kind, tuple((_freeze(k), _freeze(v)) for k, v in value.items()))
    if kind is slice:
        return (kind, _freeze(value.start), _freeze(value.stop), _freeze(value.step))
    raise _Unfrozen


def check_rebuild(
    path: str, module: nn.Module, args: Any, kwargs: Any, *, cache: RebuildCache | None = None
) -> None:
    """Raise :class:`ExportError` unless ``type(module)(*args, **kwargs)`` matches ``module``.

    The rebuild happens on the meta device, so it is cheap even for huge layers (small ones,
    cheaper to initialise than to dispatch through the meta device, are rebuilt on the
    CPU). Compared:
    ``repr``; names, shapes, dtypes and ``requires_grad`` of parameters; names, shapes,
    dtypes and persistence of buffers; every plain attribute except ``training``; hooks;
    and all of that for every submodule. Parameter and persistent-buffer values are not
    compared: they come from the weights file. Values the weights file does not carry
    (non-persistent buffers, tensors kept as plain attributes) can only come from the
    constructor, so modules that have them are rebuilt on the CPU and those values compared.

    With a ``cache``, identical calls share one rebuild (each module is still compared).
    """
    cls = type(module)
    where = LazyWhere(path, cls)
    args, kwargs = normalize_constructor(args, kwargs, where)
    with_values, size, holders = _inspect_state(module)
    # The meta device costs per torch call (about one layer's worth of SMALL_MODULE elements
    # initialised on the CPU per layer holding tensors); the CPU costs per element.
    on_meta = not with_values and size > SMALL_MODULE * max(holders, 1)
    entry: list[Any]  # [the rebuilt module, its repr once computed]
    if cache is None:
        entry = [_build(cls, args, kwargs, where, on_meta=on_meta), None]
    else:
        entry = cache.get(cls, args, kwargs, where, on_meta=on_meta)
    rebuilt = entry[0]
    try:
        problems = list(differences(module, rebuilt, "", with_values))
        if not problems:
            original_repr = repr(module)
            if entry[1] is None:
                entry[1] = repr(rebuilt)
            rebuilt_repr = entry[1]
            if original_repr != rebuilt_repr:
                problems.append(repr_difference(original_repr, rebuilt_repr))
    except Exception as exc:  # e.g. a user class whose extra_repr fails on the meta device
        call = format_call(qualified_name(cls), args, kwargs)
        raise ExportError(
            f"{where}: comparing it with its rebuild from {call} failed:"
            f" {type(exc).__name__}: {exc}"
        ) from exc
    if problems:
        call = format_call(qualified_name(cls), args, kwargs)
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        hint = ""
        if any("requires_grad" in p for p in problems):
            hint = (
                ". A constructor call cannot express frozen parameters: call"
                " requires_grad_(True) on the model before export and freeze after loading"
            )
        raise ExportError(
            f"{where}: the recovered constructor call {call} does not rebuild an equivalent"
            f" module: {shown}{more}{hint}"
        )


def normalize_constructor(
    args: Any, kwargs: Any, where: str | LazyWhere
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` as a tuple and a dict: registered recoveries and callers of
    :func:`check_rebuild` may pass any sequence and mapping, or something else entirely."""
    if not isinstance(args, tuple | list):
        raise ExportError(f"{where}: constructor args must be a tuple or list, got {args!r}")
    if not (isinstance(kwargs, Mapping) and all(type(k) is str for k in kwargs)):
        raise ExportError(
            f"{where}: constructor kwargs must be a mapping with str keys, got {kwargs!r}"
        )
    return tuple(args), dict(kwargs)


class LazyWhere:
    """``_where(path, cls)``, formatted only if a message needs it (most checks pass)."""

    __slots__ = ("cls", "path")

    def __init__(self, path: str, cls: type) -> None:
        self.path = path
        self.cls = cls

    def __str__(self) -> str:  # f-strings call it through object.__format__
        return _where(self.path, self.cls)


# --------------------------------------------------------------------------------------
# Names in messages
# --------------------------------------------------------------------------------------


def format_call(qualname: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """Render a constructor call for messages: ``torch.nn.Conv2d(3, 8, 3, stride=2)``."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{qualname}({', '.join(parts)})"


def _where(path: str, cls: type) -> str:
    return f"module {path!r} ({qualified_name(cls)})" if path else qualified_name(cls)


def describe_value(value: Any) -> str:
    """``torch.tanh``, ``the module GELU(approximate='none')``, ``a tensor``: for messages."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, nn.Module):
        return f"the module {short_text(value)}"
    if callable(value):
        module = getattr(value, "__module__", None)
        name = getattr(value, "__name__", None) or type(value).__qualname__
        return f"the callable {module}.{name}" if module else f"the callable {name}"
    return f"a {type(value).__module__}.{type(value).__qualname__}"


# --------------------------------------------------------------------------------------
# Rebuild
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _float32_default() -> Iterator[None]:
    """Specs default to float32, whatever the exporting process's default dtype is."""
    previous = torch.get_default_dtype()
    if previous == torch.float32:
        yield
        return
    torch.set_default_dtype(torch.float32)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _build(
    cls: type[nn.Module],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str | LazyWhere,
    *,
    on_meta: bool,
) -> nn.Module:
    """``cls(*args, **kwargs)``, on the meta device when asked and possible (a few constructors
    compute with tensor values and fail there; those are retried on the CPU). A CPU rebuild
    leaves the global random number generator as it was."""
    with warnings.catch_warnings(), _float32_default():
        warnings.simplefilter("ignore")  # the original construction already warned
        if on_meta:
            try:
                with meta_device():  # skips random fills, as loading does
                    return cls(*args, **kwargs)
            except Exception:
                pass
        with same_random_state():
            try:
                return cls(*args, **kwargs)
            except Exception as exc:
                call = format_call(qualified_name(cls), args, kwargs)
                raise ExportError(
                    f"{where}: rebuilding it with the recovered constructor call {call} raised"
                    f" {type(exc).__name__}: {exc}"
                ) from exc


def _inspect_state(module: nn.Module) -> tuple[bool, int, int]:
    """``(unsaved, size, holders)``: whether values outside the weights file must be compared
    (non-persistent buffers and tensors kept as plain attributes can only come from the
    constructor), the number of parameter and buffer elements and the number of modules
    holding them (these two decide meta or CPU)."""
    unsaved = False
    size = 0
    holders = 0
    for sub in submodules(module):
        if sub._parameters or sub._buffers:
            holders += 1
        for param in sub._parameters.values():
            if param is not None:
                size += param.numel()
        for name, buffer in sub._buffers.items():
            if buffer is None:
                continue
            size += buffer.numel()
            if not unsaved and not buffer.is_meta and name in sub._non_persistent_buffers_set:
                unsaved = True
        if not unsaved:
            for name, value in sub.__dict__.items():
                kind = type(value)
                if kind in NO_TENSORS or name in INTERNAL_ATTRIBUTES:
                    continue
                if (kind is tuple or kind is list) and NO_TENSORS.issuperset(map(type, value)):
                    continue
                if any(not isinstance(t, nn.Parameter) and not t.is_meta for t in tensors_in(value)):
                    unsaved = True
                    break
    return unsaved, size, holders


def submodules(module: nn.Module) -> list[nn.Module] | tuple[nn.Module]:
    """``list(module.modules())`` in some order: each module once, without the dotted names
    ``named_modules`` builds (most leaf modules have no children at all)."""
    if not module._modules:
        return (module,)
    found = [module]
    seen = {id(module)}
    for parent in found:  # grows while it is walked: breadth first
        for child in parent._modules.values():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                found.append(child)
    return found
