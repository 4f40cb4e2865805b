"""Verify a recovered constructor call by rebuilding the module and comparing the two.

Export writes each leaf module as a constructor call, and that call is only ever a claim:
built-in recovery reads attributes (a heuristic), and registered or recorded recoveries are
user code. A wrong call would not fail at export -- it would silently generate a different
model. :func:`check_rebuild` is the proof: it builds ``cls(*args, **kwargs)`` on the meta
device (no memory, no initialisation cost) and compares it with the original -- repr,
parameters, buffers, plain attributes, hooks and submodules, recursively. Parameter
*values* are not compared: the exporter writes them to the weights file.

The check does not care how the call was found, so it lives apart from the recovery itself
(``fxgen._recover``) and the torch.nn rule table (``fxgen._recover_rules``). It is their
bottom layer and imports neither; it therefore also holds the few helpers all three use to
name classes, calls and values in messages.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import warnings
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

from fxgen._build import NO_TENSORS, SMALL_MODULE, meta_device, tensors_in
from fxgen._errors import ExportError

__all__ = ["RebuildCache", "check_rebuild", "format_call"]


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
        where: str | _Where,
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
    where = _Where(path, cls)
    args, kwargs = _normalize_constructor(args, kwargs, where)
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
        problems = list(_diff(module, rebuilt, "", with_values))
        if not problems:
            original_repr = repr(module)
            if entry[1] is None:
                entry[1] = repr(rebuilt)
            rebuilt_repr = entry[1]
            if original_repr != rebuilt_repr:
                problems.append(_repr_difference(original_repr, rebuilt_repr))
    except Exception as exc:  # e.g. a user class whose extra_repr fails on the meta device
        call = format_call(_qualified_name(cls), args, kwargs)
        raise ExportError(
            f"{where}: comparing it with its rebuild from {call} failed:"
            f" {type(exc).__name__}: {exc}"
        ) from exc
    if problems:
        call = format_call(_qualified_name(cls), args, kwargs)
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


def _normalize_constructor(
    args: Any, kwargs: Any, where: str | _Where
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


class _Where:
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


def _qualified_name(cls: type) -> str:
    """``torch.nn.Conv2d`` rather than its defining module, else ``module.qualname``.

    Not checked to import back (``fxgen._recover.class_name`` does that): messages must be
    able to name any class, including one defined inside a function.
    """
    name = cls.__name__
    if cls.__module__.startswith("torch.nn.") and getattr(nn, name, None) is cls:
        return f"torch.nn.{name}"
    return f"{cls.__module__}.{cls.__qualname__}"


def format_call(qualname: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """Render a constructor call for messages: ``torch.nn.Conv2d(3, 8, 3, stride=2)``."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{qualname}({', '.join(parts)})"


def _where(path: str, cls: type) -> str:
    return f"module {path!r} ({_qualified_name(cls)})" if path else _qualified_name(cls)


def _describe(value: Any) -> str:
    """``torch.tanh``, ``the module GELU(approximate='none')``, ``a tensor``: for messages."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, nn.Module):
        return f"the module {_short(value)}"
    if callable(value):
        module = getattr(value, "__module__", None)
        name = getattr(value, "__name__", None) or type(value).__qualname__
        return f"the callable {module}.{name}" if module else f"the callable {name}"
    return f"a {type(value).__module__}.{type(value).__qualname__}"


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor {_tensor_text(value)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _tensor_text(t: torch.Tensor) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"


# --------------------------------------------------------------------------------------
# Rebuild and compare
# --------------------------------------------------------------------------------------

_INTERNAL = frozenset(
    {
        "training",
        "_parameters",
        "_buffers",
        "_non_persistent_buffers_set",
        "_modules",
        "_backward_pre_hooks",
        "_backward_hooks",
        "_is_full_backward_hook",
        "_forward_hooks",
        "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called",
        "_forward_pre_hooks",
        "_forward_pre_hooks_with_kwargs",
        "_state_dict_hooks",
        "_state_dict_pre_hooks",
        "_load_state_dict_pre_hooks",
        "_load_state_dict_post_hooks",
        "_compiled_call_impl",
    }
)
_HOOKS = (
    "_forward_pre_hooks",
    "_forward_hooks",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


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
    where: str | _Where,
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
        rng = torch.random.get_rng_state()
        try:
            return cls(*args, **kwargs)
        except Exception as exc:
            call = format_call(_qualified_name(cls), args, kwargs)
            raise ExportError(
                f"{where}: rebuilding it with the recovered constructor call {call} raised"
                f" {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            torch.random.set_rng_state(rng)


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
                if kind in NO_TENSORS or name in _INTERNAL:
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


def _diff(original: nn.Module, rebuilt: nn.Module, prefix: str, values: bool) -> Iterator[str]:
    """Describe every difference between two modules, recursively (prefix: dotted path)."""
    if type(original) is not type(rebuilt):
        yield (
            f"submodule {prefix.rstrip('.')!r} is {_qualified_name(type(original))} but"
            f" {_qualified_name(type(rebuilt))} in the rebuild"
        )
        return
    if original._parameters or rebuilt._parameters:
        yield from _diff_tensors("parameter", original._parameters, rebuilt._parameters, prefix)
    if original._buffers or rebuilt._buffers:
        yield from _diff_tensors("buffer", original._buffers, rebuilt._buffers, prefix)
        for name in original._buffers.keys() & rebuilt._buffers.keys():
            persistent = name not in original._non_persistent_buffers_set
            if persistent != (name not in rebuilt._non_persistent_buffers_set):
                state = "persistent" if persistent else "non-persistent"
                yield f"buffer {prefix + name!r} is {state} in the model but not in the rebuild"
            elif not persistent and values:
                a, b = original._buffers[name], rebuilt._buffers[name]
                if (
                    a is not None
                    and b is not None
                    and a.shape == b.shape
                    and not torch.equal(a.detach().cpu(), b.detach().cpu().to(a.dtype))
                ):
                    yield f"non-persistent buffer {prefix + name!r} has different values"
    a_dict, b_dict = original.__dict__, rebuilt.__dict__
    if a_dict.keys() != b_dict.keys():  # rare: only then are the differences worked out
        a_names, b_names = a_dict.keys() - _INTERNAL, b_dict.keys() - _INTERNAL
        for name in a_names - b_names:
            yield f"attribute {prefix + name!r} = {_short(a_dict[name])} is missing from the rebuild"
        for name in b_names - a_names:
            yield f"the rebuild has an extra attribute {prefix + name!r} = {_short(b_dict[name])}"
    for name, a in a_dict.items():
        if name in _INTERNAL:
            continue
        b = b_dict.get(name, _ABSENT)
        if a is b or b is _ABSENT:
            continue
        kind = type(a)
        if kind is type(b) and (kind in _EXACT or ((kind is tuple or kind is list) and _exact_items(a, b))):
            if a == b:  # what _equivalent decides for these, without its type tests
                continue
        elif _equivalent(a, b, values):
            continue
        yield (
            f"attribute {prefix + name!r} is {_short(a)} in the model but"
            f" {_short(b)} in the rebuild"
        )
    for hooks in _HOOKS:
        a_table = a_dict.get(hooks, _ABSENT)
        b_table = b_dict.get(hooks, _ABSENT)
        if not a_table and not b_table:
            continue
        if a_table is _ABSENT:
            a_table = getattr(original, hooks, {})
        if b_table is _ABSENT:
            b_table = getattr(rebuilt, hooks, {})
        if not a_table and not b_table:
            continue
        a_hooks = [_hook_name(h) for h in a_table.values()]
        b_hooks = [_hook_name(h) for h in b_table.values()]
        if a_hooks != b_hooks:
            where = f" of {prefix.rstrip('.')!r}" if prefix else ""
            yield f"{hooks.strip('_').replace('_', ' ')}{where} are {a_hooks} but {b_hooks} in the rebuild"
    a_children, b_children = original._modules, rebuilt._modules
    if not a_children and not b_children:
        return
    for name in a_children.keys() - b_children.keys():
        yield f"submodule {prefix + name!r} is missing from the rebuild"
    for name in b_children.keys() - a_children.keys():
        yield f"the rebuild has an extra submodule {prefix + name!r}"
    for name, child in a_children.items():
        if name not in b_children:
            continue
        other = b_children[name]
        if child is None or other is None:
            if (child is None) != (other is None):
                yield f"submodule {prefix + name!r} is {child!r} in the model but {other!r} in the rebuild"
            continue
        yield from _diff(child, other, f"{prefix}{name}.", values)


_ABSENT: Any = object()  # a key missing from a __dict__ (no attribute value is this object)

# Types whose values are equivalent exactly when they are equal (the fast path of _diff).
_EXACT: frozenset[type] = frozenset({int, str, bool, type(None), torch.dtype, torch.device})


def _exact_items(a: tuple[Any, ...] | list[Any], b: tuple[Any, ...] | list[Any]) -> bool:
    """Whether two sequences hold items of the same _EXACT types, position by position (then
    ``a == b`` is what :func:`_equivalent` would decide)."""
    kinds = tuple(map(type, a))
    return kinds == tuple(map(type, b)) and _EXACT.issuperset(kinds)


def _diff_tensors(
    kind: str,
    original: Mapping[str, torch.Tensor | None],
    rebuilt: Mapping[str, torch.Tensor | None],
    prefix: str,
) -> Iterator[str]:
    for name in original.keys() - rebuilt.keys():
        yield f"{kind} {prefix + name!r} is missing from the rebuild"
    for name in rebuilt.keys() - original.keys():
        yield f"the rebuild has an extra {kind} {prefix + name!r}"
    for name, a in original.items():
        if name not in rebuilt:
            continue
        b = rebuilt[name]
        if a is None or b is None:
            if (a is None) != (b is None):
                shown_a = "None" if a is None else _tensor_text(a)
                shown_b = "None" if b is None else _tensor_text(b)
                yield f"{kind} {prefix + name!r} is {shown_a} in the model but {shown_b} in the rebuild"
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            yield (
                f"{kind} {prefix + name!r} is {_tensor_text(a)} in the model but"
                f" {_tensor_text(b)} in the rebuild"
            )
        if kind == "parameter" and a.requires_grad != b.requires_grad:
            yield (
                f"parameter {prefix + name!r} has requires_grad={a.requires_grad} in the model"
                f" but {b.requires_grad} in the rebuild"
            )


def _equivalent(a: Any, b: Any, values: bool) -> bool:
    """Equality for attribute values that ignores object identity where it cannot match
    (rebuilt submodules, weak references to rebuilt parameters) and compares tensors by
    shape and dtype -- plus contents when ``values`` (both on a real device) and the tensor
    is not a parameter (parameters come from the weights file)."""
    if a is b:
        return True
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
        ):
            return False
        if not values or isinstance(a, nn.Parameter) or a.is_meta or b.is_meta:
            return True
        return torch.equal(a.detach().cpu(), b.detach().cpu())
    if isinstance(a, nn.Module) or isinstance(b, nn.Module):
        return type(a) is type(b)
    if isinstance(a, weakref.ref) and isinstance(b, weakref.ref):
        return _equivalent(a(), b(), values)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return bool(a == b)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(_equivalent(x, y, values) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equivalent(a[k], b[k], values) for k in a)
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return (
            a.func is b.func
            and _equivalent(a.args, b.args, values)
            and _equivalent(a.keywords, b.keywords, values)
        )
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _hook_name(hook: Any) -> str:
    inner = getattr(hook, "hook", hook)  # torch wraps some hooks in a _WrappedHook
    inner = getattr(inner, "func", inner)  # functools.partial
    inner = getattr(inner, "__func__", inner)  # bound methods
    return getattr(inner, "__qualname__", type(inner).__qualname__)


def _repr_difference(original: str, rebuilt: str) -> str:
    for a, b in zip(original.splitlines(), rebuilt.splitlines(), strict=False):
        if a != b:
            return f"repr differs: {a.strip()!r} in the model, {b.strip()!r} in the rebuild"
    return f"repr differs: {_short(original)} in the model, {_short(rebuilt)} in the rebuild"
