"""Recover the constructor call of a leaf module, and prove it rebuilds the same module.

A spec declares every ``call_module`` target as ``{class, args, kwargs}``, so exporting a
traced model has to turn each leaf ``nn.Module`` *instance* back into the call that built
it. PyTorch does not record constructor arguments, but almost every ``torch.nn`` class
stores them as same-named attributes; :func:`recover_constructor` reads them through the
class's ``__init__`` signature, with a small rule table for the classes that store them
differently (``bias`` as a parameter that may be ``None``, ``kdim=None`` stored as
``embed_dim``, kernel sizes stored as tuples, ...).

Reading attributes is a heuristic, so every recovery must be verified:
:func:`check_rebuild` builds a fresh module from the recovered call on the meta device
(no memory, no initialisation cost) and compares it with the original -- repr,
parameters, buffers, plain attributes, hooks and submodules, recursively. Parameter
*values* are not compared: the exporter writes them to the weights file. Export calls
:func:`recover_and_check`, which does both.

Classes fxgen cannot know (user code) are recovered by functions registered with
:func:`register_constructor`; they are verified the same way.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import numbers
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.overrides import TorchFunctionMode

from fxgen._errors import ExportError

__all__ = [
    "Constructor",
    "check_rebuild",
    "class_name",
    "format_call",
    "recover_and_check",
    "recover_constructor",
    "register_constructor",
]

Constructor = tuple[tuple[Any, ...], dict[str, Any]]
"""``(args, kwargs)`` such that ``cls(*args, **kwargs)`` rebuilds a module."""

Recover = Callable[[nn.Module], Constructor]

_REGISTRY: dict[type[nn.Module], Recover] = {}

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
    _REGISTRY[cls] = recover


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
    return _recover(module, class_name(type(module)))


def check_rebuild(path: str, module: nn.Module, args: Any, kwargs: Any) -> None:
    """Raise :class:`ExportError` unless ``type(module)(*args, **kwargs)`` matches ``module``.

    The rebuild happens on the meta device, so it is cheap even for huge layers. Compared:
    ``repr``; names, shapes, dtypes and ``requires_grad`` of parameters; names, shapes,
    dtypes and persistence of buffers; every plain attribute except ``training``; hooks;
    and all of that for every submodule. Parameter and persistent-buffer values are not
    compared: they come from the weights file. Values the weights file does not carry
    (non-persistent buffers, tensors kept as plain attributes) can only come from the
    constructor, so modules that have them are rebuilt on the CPU and those values compared.
    """
    cls = type(module)
    where = _where(path, cls)
    args, kwargs = _normalize_constructor(args, kwargs, where)
    call = format_call(class_name(cls), args, kwargs)
    with_values = _has_unsaved_values(module)
    rebuilt = _build(cls, args, kwargs, where, call, on_meta=not with_values)
    try:
        problems = list(_diff(module, rebuilt, "", with_values))
        if not problems:
            original_repr, rebuilt_repr = repr(module), repr(rebuilt)
            if original_repr != rebuilt_repr:
                problems.append(_repr_difference(original_repr, rebuilt_repr))
    except Exception as exc:  # e.g. a user class whose extra_repr fails on the meta device
        raise ExportError(
            f"{where}: comparing it with its rebuild from {call} failed:"
            f" {type(exc).__name__}: {exc}"
        ) from exc
    if problems:
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


def recover_and_check(path: str, module: nn.Module) -> Constructor:
    """Recover the constructor of the module at ``path`` and verify it (export does this)."""
    args, kwargs = _recover(module, _where(path, type(module)))
    check_rebuild(path, module, args, kwargs)
    return args, kwargs


def class_name(cls: type) -> str:
    """The name a spec uses for ``cls``: ``torch.nn.Conv2d`` rather than its defining module."""
    name = cls.__name__
    if cls.__module__.startswith("torch.nn.") and getattr(nn, name, None) is cls:
        return f"torch.nn.{name}"
    return f"{cls.__module__}.{cls.__qualname__}"


def format_call(qualname: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """Render a constructor call for messages: ``torch.nn.Conv2d(3, 8, 3, stride=2)``."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{qualname}({', '.join(parts)})"


# --------------------------------------------------------------------------------------
# Rules for torch.nn classes
# --------------------------------------------------------------------------------------


class _Unrecoverable(Exception):
    """An argument cannot be recovered; the message is completed with the module's name."""


_MISSING: Any = object()  # the module has no attribute for this argument
_OMIT: Any = object()  # a getter's way of saying "equal to the default, leave it out"

Getter = Callable[[nn.Module], Any]


@dataclass(frozen=True)
class _Rule:
    """How one torch.nn class (and its subclasses) deviates from "argument == attribute"."""

    # Argument name -> function reading its value from the module (may return _OMIT).
    getters: Mapping[str, Getter] = field(default_factory=dict)
    # Arguments the constructor expands from a scalar to an n-tuple (``_pair``): a tuple
    # whose elements are all equal is written as that element, ``(3, 3)`` -> ``3``.
    expands: frozenset[str] = frozenset()
    # Arguments the constructor wraps into a 1-tuple when given an int: ``(64,)`` -> ``64``.
    singleton: frozenset[str] = frozenset()
    # Arguments whose ``None`` default is stored as a derived value (``stride`` as
    # ``kernel_size``): omitted when the stored value equals the derived one.
    none_is: Mapping[str, Getter] = field(default_factory=dict)
    # Replacement signature for ``(*args, **kwargs)`` constructors (RNN, LSTM, GRU).
    signature: tuple[inspect.Parameter, ...] | None = None
    # A container: recoverable only when empty (its children would be arguments).
    container: bool = False
    # The class can never be recovered, and why.
    refuse: str | None = None


def _child(path: str) -> Getter:
    def get(module: nn.Module) -> Any:
        return functools.reduce(getattr, path.split("."), module)

    return get


def _is_set(path: str) -> Getter:
    """``bias``-style flags stored as "this parameter is not None"."""
    get = _child(path)
    return lambda module: get(module) is not None


def _activation(fn: Any) -> Any:
    """Transformer activations: the functions F.relu / F.gelu are the strings of the API."""
    if fn is F.relu:
        return F.relu  # the signature's default: omitted
    if fn is F.gelu:
        return "gelu"
    raise _Unrecoverable(
        f"its activation is {_describe(fn)}; only torch.nn.functional.relu and gelu can be"
        " written in a spec (as the strings 'relu' and 'gelu')"
    )


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


def _norm_bias(module: nn.Module) -> Any:
    """Norms ignore ``bias`` without an affine transform; otherwise the parameter tells."""
    affine = module.__dict__.get("affine", module.__dict__.get("elementwise_affine", True))
    if not affine:
        return _OMIT
    return module._parameters.get("bias") is not None


def _frozen(module: nn.Module) -> Any:
    """``Embedding(_freeze=True)`` is how ``from_pretrained(freeze=True)`` is rebuilt."""
    weight = module._parameters.get("weight")
    return True if weight is not None and not weight.requires_grad else _OMIT


def _embed_dim(module: nn.Module) -> Any:
    return module.embed_dim


def _cutoffs(module: nn.Module) -> Any:
    """AdaptiveLogSoftmaxWithLoss stores ``cutoffs + [n_classes]``."""
    stored: Any = module.cutoffs
    return list(stored[:-1])


def _triplet_distance(module: nn.Module) -> Any:
    fn = module.distance_function
    if isinstance(fn, nn.PairwiseDistance):
        return None  # the default is a PairwiseDistance(); the check compares its settings
    return fn


def _transformer_stack(module: nn.Module, child: str) -> Any:
    """nn.Transformer's encoder/decoder, if it is the one built from scalar arguments."""
    part = getattr(module, child)
    expected = nn.TransformerEncoder if child == "encoder" else nn.TransformerDecoder
    if type(part) is not expected:
        raise _Unrecoverable(
            f"its {child} is a custom {class_name(type(part))} (custom_{child}=...), which a"
            " spec cannot pass as a constructor argument"
        )
    return part


def _from_layer(get: Getter) -> Getter:
    """nn.Transformer's hyper-parameters live in its layers (the check covers all of them)."""

    def read(module: nn.Module) -> Any:
        layers = [
            *_transformer_stack(module, "encoder").layers,
            *_transformer_stack(module, "decoder").layers,
        ]
        if not layers:
            raise _Unrecoverable("it has no layers to read its hyper-parameters from")
        return get(layers[0])

    return read


def _num_layers(child: str) -> Getter:
    return lambda module: len(_transformer_stack(module, child).layers)


def _not_custom(child: str) -> Getter:
    def read(module: nn.Module) -> Any:
        _transformer_stack(module, child)
        return _OMIT

    return read


_P = inspect.Parameter


def _sig(*params: tuple[str, Any]) -> tuple[inspect.Parameter, ...]:
    """A signature from ``(name, default)`` pairs; ``_P.empty`` marks a required argument."""
    return tuple(_P(name, _P.POSITIONAL_OR_KEYWORD, default=default) for name, default in params)


_RNN_HEAD = (("input_size", _P.empty), ("hidden_size", _P.empty), ("num_layers", 1))
_RNN_TAIL = (("bias", True), ("batch_first", False), ("dropout", 0.0), ("bidirectional", False))
_FACTORY = (("device", None), ("dtype", None))

_CONV = frozenset({"kernel_size", "stride", "padding", "dilation", "output_padding"})
_PAD = frozenset({"padding"})
_KSP = frozenset({"kernel_size", "stride", "padding"})
_STRIDE_IS_KERNEL = {"stride": _child("kernel_size")}

_LAYER_GETTERS: dict[str, Getter] = {
    "d_model": _child("self_attn.embed_dim"),
    "nhead": _child("self_attn.num_heads"),
    "dim_feedforward": _child("linear1.out_features"),
    "dropout": _child("dropout.p"),
    "activation": lambda m: _activation(m.activation),
    "layer_norm_eps": _child("norm1.eps"),
    "batch_first": _child("self_attn.batch_first"),
    "bias": _is_set("linear1.bias"),
}

_CONTAINER = _Rule(container=True)
_TAKES_MODULES = (
    "was traced as a leaf module, but its constructor takes module instances ({}), which a"
    " spec cannot encode as arguments; trace through it (make the tracer's is_leaf_module"
    " return False for it) or register a constructor with register_constructor"
)

_RULES: dict[type, _Rule] = {
    nn.Module: _CONTAINER,  # a bare nn.Module used as a leaf: fine only when empty
    nn.Sequential: _CONTAINER,
    nn.ModuleList: _CONTAINER,
    nn.ModuleDict: _CONTAINER,
    nn.ParameterList: _CONTAINER,
    nn.ParameterDict: _CONTAINER,
    nn.modules.conv._ConvNd: _Rule(expands=_CONV),
    nn.modules.padding._ConstantPadNd: _Rule(expands=_PAD),
    nn.modules.padding._ReflectionPadNd: _Rule(expands=_PAD),
    nn.modules.padding._ReplicationPadNd: _Rule(expands=_PAD),
    nn.modules.padding._CircularPadNd: _Rule(expands=_PAD),
    nn.modules.pooling._MaxPoolNd: _Rule(none_is=_STRIDE_IS_KERNEL),
    nn.modules.pooling._AvgPoolNd: _Rule(none_is=_STRIDE_IS_KERNEL),
    nn.AvgPool1d: _Rule(expands=_KSP),
    nn.modules.pooling._MaxUnpoolNd: _Rule(expands=_KSP, none_is=_STRIDE_IS_KERNEL),
    nn.FractionalMaxPool2d: _Rule(
        expands=frozenset({"kernel_size", "output_size", "output_ratio"})
    ),
    nn.FractionalMaxPool3d: _Rule(
        expands=frozenset({"kernel_size", "output_size", "output_ratio"})
    ),
    nn.modules.batchnorm._NormBase: _Rule(getters={"bias": _norm_bias}),
    nn.GroupNorm: _Rule(getters={"bias": _norm_bias}),
    nn.LayerNorm: _Rule(getters={"bias": _norm_bias}, singleton=frozenset({"normalized_shape"})),
    nn.Embedding: _Rule(getters={"_freeze": _frozen}),
    nn.PairwiseDistance: _Rule(getters={"p": _child("norm")}),
    nn.AdaptiveLogSoftmaxWithLoss: _Rule(getters={"cutoffs": _cutoffs}),
    nn.TripletMarginWithDistanceLoss: _Rule(getters={"distance_function": _triplet_distance}),
    nn.MultiheadAttention: _Rule(
        getters={"bias": _is_set("in_proj_bias"), "add_bias_kv": _is_set("bias_k")},
        none_is={"kdim": _embed_dim, "vdim": _embed_dim},
    ),
    nn.TransformerEncoderLayer: _Rule(getters=_LAYER_GETTERS),
    nn.TransformerDecoderLayer: _Rule(getters=_LAYER_GETTERS),
    nn.Transformer: _Rule(
        getters={
            "num_encoder_layers": _num_layers("encoder"),
            "num_decoder_layers": _num_layers("decoder"),
            "dim_feedforward": _from_layer(_child("linear1.out_features")),
            "dropout": _from_layer(_child("dropout.p")),
            "activation": _from_layer(lambda layer: _activation(layer.activation)),
            "custom_encoder": _not_custom("encoder"),
            "custom_decoder": _not_custom("decoder"),
            "layer_norm_eps": _from_layer(_child("norm1.eps")),
            "norm_first": _from_layer(_child("norm_first")),
            "bias": _from_layer(_is_set("linear1.bias")),
        }
    ),
    nn.TransformerEncoder: _Rule(refuse=_TAKES_MODULES.format("encoder_layer, norm")),
    nn.TransformerDecoder: _Rule(refuse=_TAKES_MODULES.format("decoder_layer, norm")),
    nn.DataParallel: _Rule(
        refuse="wraps another module and is not part of a model; export model.module instead"
    ),
    nn.RNN: _Rule(
        signature=_sig(*_RNN_HEAD, ("nonlinearity", "tanh"), *_RNN_TAIL, *_FACTORY),
    ),
    nn.LSTM: _Rule(signature=_sig(*_RNN_HEAD, *_RNN_TAIL, ("proj_size", 0), *_FACTORY)),
    nn.GRU: _Rule(signature=_sig(*_RNN_HEAD, *_RNN_TAIL, *_FACTORY)),
}
if hasattr(nn, "RMSNorm"):
    _RULES[nn.RMSNorm] = _Rule(singleton=frozenset({"normalized_shape"}))
if hasattr(nn, "Container"):
    _RULES[nn.Container] = _CONTAINER
if hasattr(nn, "LinearCrossEntropyLoss"):
    _RULES[nn.LinearCrossEntropyLoss] = _Rule(
        getters={"in_features": _child("linear.in_features"), "bias": _is_set("linear.bias")}
    )
with contextlib.suppress(ImportError):  # distributed is optional in some builds
    from torch.nn.parallel import DistributedDataParallel

    _RULES[DistributedDataParallel] = _RULES[nn.DataParallel]


@dataclass(frozen=True)
class _Plan:
    """Everything about a class that does not depend on the instance (cached per class)."""

    params: tuple[inspect.Parameter, ...]
    rule: _Rule


_PLANS: dict[type[nn.Module], _Plan] = {}


def _plan(cls: type[nn.Module]) -> _Plan:
    """Merge the rules along the MRO (base first) and read the signature once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type[nn.Module]) -> _Plan:
    getters: dict[str, Getter] = {}
    none_is: dict[str, Getter] = {}
    expands: set[str] = set()
    singleton: set[str] = set()
    signature: tuple[inspect.Parameter, ...] | None = None
    refuse: str | None = None
    for klass in reversed(cls.__mro__):
        rule = _RULES.get(klass)
        if rule is None:
            continue
        getters.update(rule.getters)
        none_is.update(rule.none_is)
        expands |= rule.expands
        singleton |= rule.singleton
        signature = rule.signature if rule.signature is not None else signature
        refuse = rule.refuse or refuse
    # Every module derives from nn.Module, whose rule marks it a container: only the most
    # derived rule decides whether the class itself is one.
    container = cls in _RULES and _RULES[cls].container
    if signature is None:
        params = tuple(inspect.signature(cls.__init__).parameters.values())[1:]
    else:
        params = signature
    merged = _Rule(
        getters=getters,
        expands=frozenset(expands),
        singleton=frozenset(singleton),
        none_is=none_is,
        signature=signature,
        container=container,
        refuse=refuse,
    )
    return _Plan(params=params, rule=merged)


# --------------------------------------------------------------------------------------
# Recovery
# --------------------------------------------------------------------------------------


def _where(path: str, cls: type) -> str:
    return f"module {path!r} ({class_name(cls)})" if path else class_name(cls)


def _is_builtin(cls: type) -> bool:
    """Classes fxgen recovers without registration: torch.nn's own (exact) classes."""
    return cls.__module__.startswith("torch.nn.modules.") or cls in _RULES


def _recover(module: nn.Module, where: str) -> Constructor:
    cls = type(module)
    registered = _REGISTRY.get(cls)
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
        args, kwargs = _normalize_constructor(result[0], result[1], where)
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
            f" {class_name(becomes) if becomes else 'a regular module'})"
        )
    if cls.__module__ == "torch.nn.utils.parametrize":
        raise ExportError(
            f"{where}: the module has parametrizations (weight_norm, spectral_norm,"
            " orthogonal, ...) that a constructor call cannot express; remove them"
            " (torch.nn.utils.parametrize.remove_parametrizations) before export"
        )
    if not _is_builtin(cls):
        bases = [b for b in cls.__mro__[1:] if _is_builtin(b) and b is not nn.Module]
        derived = (
            f" It derives from {class_name(bases[0])}, but a subclass may take different"
            " constructor arguments, so it is not recovered automatically."
            if bases
            else ""
        )
        raise ExportError(
            f"{where}: fxgen does not know how to recover the constructor arguments of"
            f" {class_name(cls)}.{derived} Trace through it (do not make it a leaf module) or"
            f" register a recovery with fxgen.register_constructor({cls.__name__}, fn)"
        )
    try:
        plan = _plan(cls)
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
            f" a constructor for {class_name(cls)} with register_constructor"
        )
    try:
        return _recover_builtin(module, plan)
    except _Unrecoverable as exc:
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


def _recover_builtin(module: nn.Module, plan: _Plan) -> Constructor:
    rule = plan.rule
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True  # still in the leading run of required positional arguments
    for param in plan.params:
        name, kind, default = param.name, param.kind, param.default
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
            except _Unrecoverable:
                raise
            except Exception as exc:
                raise _Unrecoverable(
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
            if (value is _OMIT or value is _MISSING) and not required:
                value = default
            required = True
        if value is _OMIT or value is _MISSING:
            if required:
                raise _Unrecoverable(
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
            raise _Unrecoverable(
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
    dtypes = {
        t.dtype
        for t in (*module.parameters(), *module.buffers())
        if t.is_floating_point() or t.is_complex()
    }
    if len(dtypes) == 1:
        (dtype,) = dtypes
        if dtype != torch.float32:
            return dtype
    return _OMIT  # float32, no floating state, or mixed (the check reports the mismatch)


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
    if type(value) in (bool, int, float, complex, str) or value is None:
        return value
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
    if isinstance(value, torch.Size):
        return value
    if type(value) in (tuple, list):
        return type(value)(_plain(v) for v in value)
    if type(value) is dict:
        return {k: _plain(v) for k, v in value.items()}
    return value


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
    """Describe the first part of ``value`` a spec cannot encode, or None if all is fine."""
    if type(value) in _ENCODABLE_LEAVES:
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
    return f"{name} is {_describe(value)}"


def _normalize_constructor(args: Any, kwargs: Any, where: str) -> Constructor:
    if not isinstance(args, tuple | list):
        raise ExportError(f"{where}: constructor args must be a tuple or list, got {args!r}")
    if not (isinstance(kwargs, Mapping) and all(type(k) is str for k in kwargs)):
        raise ExportError(
            f"{where}: constructor kwargs must be a mapping with str keys, got {kwargs!r}"
        )
    return tuple(args), dict(kwargs)


def _callable_name(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


# --------------------------------------------------------------------------------------
# Rebuild check
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


_VALUE_FILLS = frozenset(
    {
        "normal_",
        "uniform_",
        "erfinv_",
        "exponential_",
        "log_normal_",
        "cauchy_",
        "geometric_",
        "bernoulli_",
        "random_",
    }
)


class _SkipMetaFills(TorchFunctionMode):
    """Make random initialisation of meta tensors a no-op.

    Meta tensors have no values, so these calls do nothing anyway -- but several (``normal_``,
    used by nn.Embedding and MultiheadAttention) run Python meta kernels whose first call
    imports torch's compiler stack, about 1.5 s. Only value-filling methods are skipped;
    anything that changes shape, dtype or ``requires_grad`` still runs.
    """

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__name__", None) in _VALUE_FILLS:
            # Tensor.normal_(t, ...) passes it first; torch.nn.init.normal_(tensor=t) by name.
            target = args[0] if args else kwargs.get("tensor", kwargs.get("self"))
            if isinstance(target, torch.Tensor) and target.is_meta:
                return target
        return func(*args, **kwargs)


def _build(
    cls: type[nn.Module],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str,
    call: str,
    on_meta: bool,
) -> nn.Module:
    """``cls(*args, **kwargs)``, on the meta device when possible (a few constructors compute
    with tensor values and fail there; those are retried on the CPU)."""
    with warnings.catch_warnings(), _float32_default():
        warnings.simplefilter("ignore")  # the original construction already warned
        if on_meta:
            try:
                with torch.device("meta"), _SkipMetaFills():
                    return cls(*args, **kwargs)
            except Exception:
                pass
        try:
            return cls(*args, **kwargs)
        except Exception as exc:
            raise ExportError(
                f"{where}: rebuilding it with the recovered constructor call {call} raised"
                f" {type(exc).__name__}: {exc}"
            ) from exc


def _has_unsaved_values(module: nn.Module) -> bool:
    """Whether values outside the weights file must be compared: non-persistent buffers and
    tensors kept as plain attributes can only come from the constructor."""
    for sub in module.modules():
        for name in sub._non_persistent_buffers_set:
            buffer = sub._buffers.get(name)
            if buffer is not None and not buffer.is_meta:
                return True
        for name, value in sub.__dict__.items():
            if name not in _INTERNAL and any(
                not isinstance(t, nn.Parameter) and not t.is_meta for t in _plain_tensors(value)
            ):
                return True
    return False


def _plain_tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _plain_tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _plain_tensors(item)


def _tensor_text(t: torch.Tensor) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"


def _diff(original: nn.Module, rebuilt: nn.Module, prefix: str, values: bool) -> Iterator[str]:
    """Describe every difference between two modules, recursively (prefix: dotted path)."""
    if type(original) is not type(rebuilt):
        yield (
            f"submodule {prefix.rstrip('.')!r} is {class_name(type(original))} but"
            f" {class_name(type(rebuilt))} in the rebuild"
        )
        return
    yield from _diff_tensors("parameter", original._parameters, rebuilt._parameters, prefix)
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
    a_attrs = {k: v for k, v in original.__dict__.items() if k not in _INTERNAL}
    b_attrs = {k: v for k, v in rebuilt.__dict__.items() if k not in _INTERNAL}
    for name in a_attrs.keys() - b_attrs.keys():
        yield f"attribute {prefix + name!r} = {_short(a_attrs[name])} is missing from the rebuild"
    for name in b_attrs.keys() - a_attrs.keys():
        yield f"the rebuild has an extra attribute {prefix + name!r} = {_short(b_attrs[name])}"
    for name in a_attrs.keys() & b_attrs.keys():
        if not _equivalent(a_attrs[name], b_attrs[name], values):
            yield (
                f"attribute {prefix + name!r} is {_short(a_attrs[name])} in the model but"
                f" {_short(b_attrs[name])} in the rebuild"
            )
    for hooks in _HOOKS:
        a_hooks = [_hook_name(h) for h in getattr(original, hooks, {}).values()]
        b_hooks = [_hook_name(h) for h in getattr(rebuilt, hooks, {}).values()]
        if a_hooks != b_hooks:
            where = f" of {prefix.rstrip('.')!r}" if prefix else ""
            yield f"{hooks.strip('_').replace('_', ' ')}{where} are {a_hooks} but {b_hooks} in the rebuild"
    a_children, b_children = original._modules, rebuilt._modules
    for name in a_children.keys() - b_children.keys():
        yield f"submodule {prefix + name!r} is missing from the rebuild"
    for name in b_children.keys() - a_children.keys():
        yield f"the rebuild has an extra submodule {prefix + name!r}"
    for name, child in a_children.items():
        other = b_children.get(name, _MISSING)
        if other is _MISSING:
            continue
        if child is None or other is None:
            if (child is None) != (other is None):
                yield f"submodule {prefix + name!r} is {child!r} in the model but {other!r} in the rebuild"
            continue
        yield from _diff(child, other, f"{prefix}{name}.", values)


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


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor {_tensor_text(value)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _repr_difference(original: str, rebuilt: str) -> str:
    for a, b in zip(original.splitlines(), rebuilt.splitlines(), strict=False):
        if a != b:
            return f"repr differs: {a.strip()!r} in the model, {b.strip()!r} in the rebuild"
    return f"repr differs: {_short(original)} in the model, {_short(rebuilt)} in the rebuild"
