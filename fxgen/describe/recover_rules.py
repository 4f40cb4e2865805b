"""What constructor recovery knows about torch.nn classes: where they keep their arguments.

Almost every ``torch.nn`` class stores its constructor arguments as same-named attributes,
so the recovery engine (``fxgen.describe.recover``) reads them through the class's ``__init__``
signature. This module is the table of exceptions to that convention -- ``bias`` kept as a
parameter that may be ``None``, ``kdim=None`` stored as ``embed_dim``, kernel sizes stored
as tuples, RNNs with a ``(*args, **kwargs)`` signature, containers and classes that can
never be recovered -- and the per-class plan merged from it along the MRO.

It is kept apart from the engine because it is data about torch, not logic: supporting
another class (or a new torch release) is a change here alone, and reads as one table.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch.nn.functional as F
from torch import nn

from fxgen.describe.compare import qualified_name
from fxgen.describe.rebuild import describe_value


class Unrecoverable(Exception):
    """An argument cannot be recovered; the message is completed with the module's name."""


OMIT: Any = object()  # a getter's way of saying "equal to the default, leave it out"


Getter = Callable[[nn.Module], Any]


@dataclass(frozen=True)
class _Rule:
    """How one torch.nn class (and its subclasses) deviates from "argument == attribute"."""

    # Argument name -> function reading its value from the module (may return OMIT).
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


# --------------------------------------------------------------------------------------
# Getters: arguments a module stores under another name or form
# --------------------------------------------------------------------------------------


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
    raise Unrecoverable(
        f"its activation is {describe_value(fn)}; only torch.nn.functional.relu and gelu can be"
        " written in a spec (as the strings 'relu' and 'gelu')"
    )


def _norm_bias(module: nn.Module) -> Any:
    """Norms ignore ``bias`` without an affine transform; otherwise the parameter tells."""
    affine = module.__dict__.get("affine", module.__dict__.get("elementwise_affine", True))
    if not affine:
        return OMIT
    return module._parameters.get("bias") is not None


def _frozen(module: nn.Module) -> Any:
    """``Embedding(_freeze=True)`` is how ``from_pretrained(freeze=True)`` is rebuilt."""
    weight = module._parameters.get("weight")
    return True if weight is not None and not weight.requires_grad else OMIT


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
        raise Unrecoverable(
            f"its {child} is a custom {qualified_name(type(part))} (custom_{child}=...), which a"
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
            raise Unrecoverable("it has no layers to read its hyper-parameters from")
        return get(layers[0])

    return read


def _num_layers(child: str) -> Getter:
    return lambda module: len(_transformer_stack(module, child).layers)


def _not_custom(child: str) -> Getter:
    def read(module: nn.Module) -> Any:
        _transformer_stack(module, child)
        return OMIT

    return read


# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Plans: the rules of a class merged along its MRO
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Everything about a class that does not depend on the instance (cached per class)."""

    params: tuple[inspect.Parameter, ...]
    rule: _Rule

    @functools.cached_property
    def param_fields(self) -> tuple[tuple[str, Any, Any], ...]:
        """``(name, kind, default)`` of each parameter, read once: ``inspect.Parameter`` reads
        them through properties, a good part of a recovery's cost when done per module."""
        return tuple((p.name, p.kind, p.default) for p in self.params)


_PLANS: dict[type[nn.Module], Plan] = {}


def plan_for(cls: type[nn.Module]) -> Plan:
    """Merge the rules along the MRO (base first) and read the signature once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type[nn.Module]) -> Plan:
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
    return Plan(params=params, rule=merged)


def is_builtin(cls: type) -> bool:
    """Classes fxgen recovers without registration: torch.nn's own (exact) classes."""
    return cls.__module__.startswith("torch.nn.modules.") or cls in _RULES
