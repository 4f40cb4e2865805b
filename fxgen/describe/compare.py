"""Compare a module with its rebuild: every difference a constructor call can make.

:func:`fxgen.describe.rebuild.check_rebuild` builds a module again from its recovered constructor
call; this module says how the two differ. It stands apart from building because what
counts as a difference is a set of rules of its own: parameters and buffers by name, shape,
dtype, ``requires_grad`` and persistence, their values only where the weights file does not
carry them; the plain attributes the class's ``__init__`` sets (those of the rebuild) by an
equality that ignores the identities a rebuild cannot reproduce, never those a framework
attached after construction; hooks by name; submodules recursively; and ``repr``
(docs/export.md states the rule). It also names classes and
values for the messages, so it imports nothing else from fxgen.
"""

from __future__ import annotations

import functools
import math
import numbers
import types
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["INTERNAL_ATTRIBUTES", "differences", "qualified_name", "repr_difference", "short_text"]


# --------------------------------------------------------------------------------------
# Names in messages
# --------------------------------------------------------------------------------------


def qualified_name(cls: type) -> str:
    """``torch.nn.Conv2d`` rather than its defining module, else ``module.qualname``.

    Not checked to import back (``fxgen.describe.recover.class_name`` does that): messages must be
    able to name any class, including one defined inside a function.
    """
    name = cls.__name__
    if cls.__module__.startswith("torch.nn.") and getattr(nn, name, None) is cls:
        return f"torch.nn.{name}"
    return f"{cls.__module__}.{cls.__qualname__}"


def short_text(value: Any) -> str:
    """A value in at most 80 characters; a tensor as its shape and dtype."""
    if isinstance(value, torch.Tensor):
        return f"tensor {_tensor_text(value)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _tensor_text(t: torch.Tensor) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"


# --------------------------------------------------------------------------------------
# Compare
# --------------------------------------------------------------------------------------

# nn.Module's own bookkeeping, never compared as plain attributes: parameters, buffers, hooks
# and submodules are compared on their own terms, ``training`` not at all.
INTERNAL_ATTRIBUTES: frozenset[str] = frozenset(
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


_HOOKS: tuple[str, ...] = (
    "_forward_pre_hooks",
    "_forward_hooks",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


def differences(
    original: nn.Module, rebuilt: nn.Module, prefix: str, values: bool
) -> Iterator[str]:
    """Describe every difference between two modules, recursively (prefix: the dotted path
    of ``original`` followed by a dot, ``""`` at the top)."""
    if type(original) is not type(rebuilt):
        yield (
            f"submodule {prefix.rstrip('.')!r} is {qualified_name(type(original))} but"
            f" {qualified_name(type(rebuilt))} in the rebuild"
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
    # The attributes the class's own __init__ sets are the rebuild's: those are compared. One only
    # the model has was attached after construction (Hugging Face's `_is_hf_initialized`, a
    # framework's bookkeeping) and is no part of what the constructor call must reproduce.
    if not b_dict.keys() <= a_dict.keys():  # rare: only then are the differences worked out
        for name in b_dict.keys() - a_dict.keys() - INTERNAL_ATTRIBUTES:
            yield f"the rebuild has an extra attribute {prefix + name!r} = {short_text(b_dict[name])}"
    for name, a in a_dict.items():
        if name in INTERNAL_ATTRIBUTES:
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
            f"attribute {prefix + name!r} is {short_text(a)} in the model but"
            f" {short_text(b)} in the rebuild"
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
        yield from differences(child, other, f"{prefix}{name}.", values)


_ABSENT: Any = object()  # a key missing from a __dict__ (no attribute value is this object)


# Types whose values are equivalent exactly when they are equal (the fast path of differences).
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


def _equivalent(a: Any, b: Any, values: bool, seen: frozenset[tuple[int, int]] = frozenset()) -> bool:
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
        return _equivalent(a(), b(), values, seen)
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
            and all(_equivalent(x, y, values, seen) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equivalent(a[k], b[k], values, seen) for k in a)
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return (
            a.func is b.func
            and _equivalent(a.args, b.args, values, seen)
            and _equivalent(a.keywords, b.keywords, values, seen)
        )
    if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType):
        # A lambda or closure made in __init__ is a new object per instance: the same code with
        # equivalent defaults and captured values computes the same (a captured `self` is the
        # model in one and the rebuild in the other: modules compare by class here).
        if (id(a), id(b)) in seen:
            return True  # a closure that captures itself (a recursive local function)
        seen = seen | {(id(a), id(b))}
        return (
            a.__code__ is b.__code__
            and _equivalent(a.__defaults__, b.__defaults__, values, seen)
            and _equivalent(a.__kwdefaults__, b.__kwdefaults__, values, seen)
            and _equivalent(_cells(a), _cells(b), values, seen)
        )
    if isinstance(a, types.MethodType) and isinstance(b, types.MethodType):
        return a.__func__ is b.__func__ and _equivalent(a.__self__, b.__self__, values, seen)
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _cells(fn: types.FunctionType) -> tuple[Any, ...]:
    """The values a closure captured (an empty cell as a marker of its own)."""
    out = []
    for cell in fn.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:
            out.append(_ABSENT)
    return tuple(out)


def _hook_name(hook: Any) -> str:
    inner = getattr(hook, "hook", hook)  # torch wraps some hooks in a _WrappedHook
    inner = getattr(inner, "func", inner)  # functools.partial
    inner = getattr(inner, "__func__", inner)  # bound methods
    return getattr(inner, "__qualname__", type(inner).__qualname__)


def repr_difference(original: str, rebuilt: str) -> str:
    """The first line where two reprs differ, for a message."""
    for a, b in zip(original.splitlines(), rebuilt.splitlines(), strict=False):
        if a != b:
            return f"repr differs: {a.strip()!r} in the model, {b.strip()!r} in the rebuild"
    return (
        f"repr differs: {short_text(original)} in the model, {short_text(rebuilt)} in the rebuild"
    )
