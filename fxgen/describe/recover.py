"""Recover the constructor call of a leaf module, and prove it rebuilds the same module.

A spec declares every ``call_module`` target as ``{class, args, kwargs}``, so exporting a
traced model has to turn each leaf ``nn.Module`` *instance* back into the call that built
it. PyTorch does not record constructor arguments, but almost every ``torch.nn`` class
stores them as same-named attributes; :func:`recover_constructor` reads them through the
class's ``__init__`` signature, with a small rule table for the classes that store them
differently (``fxgen.describe.recover_rules``).

Reading attributes is a heuristic, so every recovery must be verified:
:func:`check_rebuild` (``fxgen.describe.rebuild``) builds a fresh module from the recovered call
and compares it with the original. Export calls :func:`recover_and_check`, which does both.

Classes fxgen cannot know (user code) are recovered by functions registered with
:func:`register_constructor`; they are verified the same way.

This module is the public face of recovery and its engine: the registry, the walk over a
constructor's signature, and the normalisation of what it reads into values a spec can
encode. It also owns :func:`class_name`, the one way fxgen names a module class in a spec.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from types import EllipsisType
from typing import Any

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from fxgen._errors import ExportError
from fxgen.describe.compare import qualified_name
from fxgen.describe.rebuild import (
    LazyWhere,
    RebuildCache,
    check_rebuild,
    describe_value,
    normalize_constructor,
    submodules,
)
from fxgen.describe.recover_rules import OMIT, Plan, Unrecoverable, is_builtin, plan_for
from fxgen.policy.lookup import import_named

__all__ = ["RECOVERIES", "class_name", "recover_and_check", "recover_constructor", "register_constructor", "resolve_qualname"]


Constructor = tuple[tuple[Any, ...], dict[str, Any]]
"""``(args, kwargs)`` such that ``cls(*args, **kwargs)`` rebuilds a module."""


Recover = Callable[[nn.Module], Constructor]


RECOVERIES: dict[type[nn.Module], Recover] = {}


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


def register_constructor(cls: type[nn.Module], recover: Callable[[nn.Module], Constructor]) -> None:
    """Teach export how to rebuild instances of ``cls`` (a hook instead of editing fxgen).

    ``recover(module)`` returns ``(args, kwargs)`` for ``cls(*args, **kwargs)``; the values
    must be encodable in a spec (see :func:`recover_constructor`). The result is verified
    by :func:`check_rebuild` like any built-in recovery. Registration is for exactly
    ``cls``: a subclass may take different arguments, so it needs its own registration.
    Registering a class again replaces the previous function (also for ``torch.nn``
    classes, to override the built-in recovery).
    """
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise TypeError(f"register_constructor: expected an nn.Module subclass, got {cls!r}")
    if not callable(recover):
        raise TypeError(f"register_constructor: recover must be callable, got {recover!r}")
    RECOVERIES[cls] = recover


def recover_constructor(module: nn.Module) -> Constructor:
    """Return ``(args, kwargs)`` such that ``type(module)(*args, **kwargs)`` rebuilds it.

    Values are restricted to what a spec can encode: ``None``, ``bool``, ``int``,
    ``float``, ``complex``, ``str``, tuples, lists, dicts with ``str`` keys,
    ``torch.dtype``, ``torch.device``, ``torch.Size``, ``torch.memory_format``,
    ``torch.layout``, slices and ``...``. Arguments equal to their default are omitted,
    required leading arguments are positional and the rest are keywords in signature
    order, so the spec reads like hand-written code. Raises :class:`ExportError` if the
    class is unsupported or an argument cannot be recovered or encoded. The result is a
    claim: verify it with :func:`check_rebuild` (or use :func:`recover_and_check`).
    """
    return _recover(module, qualified_name(type(module)))


def recover_and_check(
    path: str, module: nn.Module, *, cache: RebuildCache | None = None
) -> Constructor:
    """Recover the constructor of the module at ``path`` and verify it (export does this).

    ``cache`` (one per export) lets identical recovered calls share one rebuild; every
    module is still compared with it.
    """
    args, kwargs = _recover(module, LazyWhere(path, type(module)))
    check_rebuild(path, module, args, kwargs, cache=cache)
    return args, kwargs


def class_name(cls: type) -> str:
    """The name a spec uses for ``cls``: ``torch.nn.Conv2d`` rather than its defining module.

    A spec refers to the class by this name, so the name must import back to ``cls``;
    raises :class:`ExportError` if it does not (a class defined inside a function, or one
    redefined or reloaded after the model was built).
    """
    name = qualified_name(cls)
    if name == f"torch.nn.{cls.__name__}" and getattr(nn, cls.__name__, None) is cls:
        return name
    found = resolve_qualname(name)
    if found is cls:
        return name
    if "<locals>" in cls.__qualname__:
        why = "it is defined inside a function"
    elif found is None:
        why = "nothing is found under that name"
    else:
        why = f"that name imports another object, {found!r} (was the class redefined or reloaded?)"
    raise ExportError(
        f"module class {name!r} cannot be imported by that name, so a spec cannot refer to"
        f" it: {why}; define the class at the top level of an importable module"
    )


def resolve_qualname(qualname: str) -> Any:
    """The object a dotted name imports as (longest importable module prefix first), or None."""
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = import_named(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for part in parts[i:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


# --------------------------------------------------------------------------------------
# Recovery
# --------------------------------------------------------------------------------------

_MISSING: Any = object()  # the module has no attribute for this argument


_P = inspect.Parameter


def _recover(module: nn.Module, where: str | LazyWhere) -> Constructor:
    cls = type(module)
    registered = RECOVERIES.get(cls)
    if registered is not None:
        try:
            result = registered(module)
        except ExportError:
            raise
        except Exception as exc:
            raise ExportError(
                f"{where}: the registered constructor recovery {_callable_name(registered)}"
                f" raised {type(exc).__name__}: {exc}"
            ) from exc
        if not (isinstance(result, tuple | list) and len(result) == 2):
            raise ExportError(
                f"{where}: the registered constructor recovery {_callable_name(registered)}"
                f" must return (args, kwargs), got {result!r}"
            )
        args, kwargs = normalize_constructor(result[0], result[1], where)
        for name, value in [(f"args[{i}]", v) for i, v in enumerate(args)] + list(kwargs.items()):
            problem = _unencodable(value, name)
            if problem:
                raise ExportError(
                    f"{where}: the registered constructor recovery returned {problem}, which"
                    " a spec cannot encode"
                )
        return args, kwargs
    if isinstance(module, LazyModuleMixin):
        becomes = getattr(cls, "cls_to_become", None)
        raise ExportError(
            f"{where}: lazy modules cannot be exported before their shapes are known; run"
            " one forward pass so the parameters are materialised (it then becomes"
            f" {qualified_name(becomes) if becomes else 'a regular module'})"
        )
    if cls.__module__ == "torch.nn.utils.parametrize":
        raise ExportError(
            f"{where}: the module has parametrizations (weight_norm, spectral_norm,"
            " orthogonal, ...) that a constructor call cannot express; remove them"
            " (torch.nn.utils.parametrize.remove_parametrizations) before export"
        )
    if not is_builtin(cls):
        bases = [b for b in cls.__mro__[1:] if is_builtin(b) and b is not nn.Module]
        derived = (
            f" It derives from {qualified_name(bases[0])}, but a subclass may take different"
            " constructor arguments, so it is not recovered automatically."
            if bases
            else ""
        )
        raise ExportError(
            f"{where}: fxgen does not know how to recover the constructor arguments of"
            f" {qualified_name(cls)}.{derived} Trace through it (do not make it a leaf module) or"
            f" register a recovery with fxgen.register_constructor({cls.__name__}, fn)"
        )
    try:
        plan = plan_for(cls)
    except (TypeError, ValueError) as exc:  # inspect.signature gave up
        raise ExportError(f"{where}: cannot read the constructor signature: {exc}") from exc
    rule = plan.rule
    if rule.refuse:
        raise ExportError(f"{where} {rule.refuse}")
    if rule.container and (module._modules or module._parameters or module._buffers):
        raise ExportError(
            f"{where} was traced as a leaf module, but its children (or parameters, buffers)"
            " would have to be constructor arguments, and a spec cannot encode modules or"
            " tensors as arguments; trace through it (remove it from leaf_modules) or register"
            f" a constructor for {qualified_name(cls)} with register_constructor"
        )
    try:
        return _recover_builtin(module, plan)
    except Unrecoverable as exc:
        raise ExportError(f"{where}: {exc}") from None
    except Exception as exc:  # a module in a state the rules do not expect
        raise ExportError(
            f"{where}: cannot recover its constructor arguments: {type(exc).__name__}: {exc}"
        ) from exc


def _lookup(module: nn.Module, name: str) -> Any:
    """The stored value of a constructor argument: an instance attribute, never a method."""
    for table in (module.__dict__, module._parameters, module._buffers, module._modules):
        if name in table:
            return table[name]
    return _MISSING


def _recover_builtin(module: nn.Module, plan: Plan) -> Constructor:
    rule = plan.rule
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True  # still in the leading run of required positional arguments
    for name, kind, default in plan.param_fields:
        if kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            positional = False
            continue
        required = default is _P.empty
        if not required or kind is _P.KEYWORD_ONLY:
            positional = False
        if name == "device":
            continue  # the export is device-independent; weights are loaded where needed
        if name == "dtype":
            value = _module_dtype(module)
        elif name in rule.getters:
            try:
                value = rule.getters[name](module)
            except Unrecoverable:
                raise
            except Exception as exc:
                raise Unrecoverable(
                    f"cannot recover argument {name!r}: {type(exc).__name__}: {exc}"
                ) from exc
        elif name.startswith("_"):
            continue  # private arguments (_weight, _random_samples) only seed state
        else:
            value = _lookup(module, name)
            if name == "bias" and (value is None or isinstance(value, torch.Tensor)):
                value = value is not None
        if kind is _P.POSITIONAL_ONLY:
            # Never omitted: leaving one out would shift the positions of those after it.
            if (value is OMIT or value is _MISSING) and not required:
                value = default
            required = True
        if value is OMIT or value is _MISSING:
            if required:
                raise Unrecoverable(
                    f"cannot recover the required argument {name!r}: the module stores no"
                    " attribute of that name"
                )
            # Not stored: assume the default; the rebuild check catches any state it changed.
            continue
        if name in rule.none_is and default is None and _same(value, rule.none_is[name](module)):
            continue
        value = _plain(value)
        if name in rule.expands or name in rule.singleton:
            value = _collapse(value, uniform=name in rule.expands)
        if not required and (value is default or _same(value, default)):
            continue
        problem = _unencodable(value, repr(name))
        if problem:
            raise Unrecoverable(
                f"constructor argument {problem}, which a spec cannot encode; trace through"
                " the module or register a constructor with register_constructor"
            )
        if positional or kind is _P.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[name] = value
    return tuple(args), kwargs


def _module_dtype(module: nn.Module) -> Any:
    """``dtype=`` only when every floating tensor shares one dtype other than float32."""
    dtypes = set()
    for sub in submodules(module):  # one walk for parameters and buffers
        for table in (sub._parameters, sub._buffers):
            for t in table.values():
                if t is not None:
                    dtype = t.dtype  # what is_floating_point() and is_complex() read
                    if dtype.is_floating_point or dtype.is_complex:
                        dtypes.add(dtype)
    if len(dtypes) == 1:
        (dtype,) = dtypes
        if dtype != torch.float32:
            return dtype
    return OMIT  # float32, no floating state, or mixed (the check reports the mismatch)


def _same(a: Any, b: Any) -> bool:
    """Equality that also requires equal types (``1`` is not ``1.0`` or ``True``): an argument
    is only omitted or collapsed when the rebuild stores exactly the same value."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except Exception:
        return False


def _collapse(value: Any, uniform: bool) -> Any:
    """``(3, 3)`` -> ``3`` for arguments the constructor expands back the same way."""
    if isinstance(value, tuple) and value:
        first = value[0]
        if len(value) == 1 or (uniform and all(_same(v, first) for v in value[1:])):
            return first
    return value


def _plain(value: Any) -> Any:
    """Numpy scalars, enums and other subclasses of builtins become the builtins."""
    kind = type(value)
    if kind in (bool, int, float, complex, str) or value is None:
        return value
    if kind is tuple or kind is list:  # before the (slow) abstract number checks
        if all(type(v) in _PLAIN_LEAVES for v in value):
            return value if kind is tuple else list(value)  # a copy: the rebuild may mutate it
        return kind(_plain(v) for v in value)
    if kind is dict:
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, numbers.Complex):
        return complex(value)
    if isinstance(value, str):
        return str.__str__(value)
    return value


_PLAIN_LEAVES = frozenset({bool, int, float, complex, str, type(None)})


_ENCODABLE_LEAVES: tuple[type, ...] = (
    bool,
    int,
    float,
    complex,
    str,
    torch.dtype,
    torch.device,
    torch.memory_format,
    torch.layout,
    EllipsisType,
    type(None),
)


def _unencodable(value: Any, name: str) -> str | None:
    """Describe the first part of ``value`` a spec cannot encode, or None if all is fine (a
    module is a format-2 module value: fxgen.describe.to_spec declares it from its own call)."""
    if type(value) in _ENCODABLE_LEAVES or isinstance(value, nn.Module):
        return None
    if isinstance(value, torch.Size):
        return None
    if type(value) in (tuple, list):
        for i, item in enumerate(value):
            problem = _unencodable(item, f"{name}[{i}]")
            if problem:
                return problem
        return None
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{name} has the non-string key {key!r}"
            problem = _unencodable(item, f"{name}[{key!r}]")
            if problem:
                return problem
        return None
    if type(value) is slice:
        for part in ("start", "stop", "step"):
            problem = _unencodable(getattr(value, part), f"{name}.{part}")
            if problem:
                return problem
        return None
    return f"{name} is {describe_value(value)}"


def _callable_name(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
